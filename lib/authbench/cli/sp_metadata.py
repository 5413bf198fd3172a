"""`authbench sp-metadata`: the virtual SP's metadata, to register at an IdP before `run --sp virtual`."""

from __future__ import annotations

import argparse

from ..errors import AuthbenchError
from .console import say
from .options import check_url

MAX_ENTITY_ID = 1024  # SAML core 8.3.6: an entityID is a URI of at most 1024 characters


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from ..journeys.virtual_sp import DEFAULT_ACS_URL, DEFAULT_ENTITY_ID

    parser = subparsers.add_parser("sp-metadata", help="print the virtual SP's metadata, to register at an IdP")
    parser.add_argument("--entity-id", default=DEFAULT_ENTITY_ID)
    parser.add_argument("--acs", default=DEFAULT_ACS_URL, help="never contacted: the Response is consumed")
    parser.set_defaults(handler=_sp_metadata)


def _sp_metadata(args: argparse.Namespace) -> int:
    from ..journeys.virtual_sp import VirtualSP

    entity_id = args.entity_id.strip()
    if not entity_id or len(entity_id) > MAX_ENTITY_ID or any(c.isspace() or not c.isprintable() for c in entity_id):
        raise AuthbenchError(f"--entity-id {args.entity_id!r}: give a URI of 1..{MAX_ENTITY_ID} characters "
                             "without spaces")
    check_url(args.acs, "--acs")
    say(VirtualSP("", entity_id=entity_id, acs_url=args.acs).sp_metadata().rstrip())
    return 0
