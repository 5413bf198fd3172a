"""--mix and the plan file's [journey.NAME] tables: parsed into kinds.mixed entries (docs/running.md, "Mixes").

A name in --mix is a variant of the run's kind (`--target`'s: SAML's login, returning-sso; LDAP's bind, …)
or a [journey.NAME] table of the --config plan file: a journey of its own, with `target`, optionally
`kind` and `variant`, and any journey option (accounts, TLS, the kind's options) by its long name.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from ..errors import AuthbenchError
from ..kinds.mixed import MixEntry
from ..mix import MIX_HINT, parse_mix

TABLES_OPTION = "--journey-tables"  # the plan file's [journey.NAME] tables, as JSON (workers get them so)
VARIANT_KEY = "variant"
NOT_OPTIONS = ("--pace", "--keep-failures", "--mix", TABLES_OPTION)  # run-wide, not per journey


def add_options(group: Any) -> None:
    group.add_argument("--mix", metavar="NAME=WEIGHT,…",
                       help="journeys side by side by weight, e.g. login=20,returning-sso=80: the target kind's "
                       "variants or the plan file's [journey.NAME] tables; a pattern splits its users by weight, "
                       "a rate its arrivals (docs/running.md)")
    group.add_argument(TABLES_OPTION, dest="journey_tables", type=_tables, help=argparse.SUPPRESS)


def _tables(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not JSON") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("not a JSON object")
    return value


Build = Callable[[argparse.Namespace], tuple[Any, Any, Any]]  # namespace → (kind, common options, its options)


def entries(args: argparse.Namespace, build: Build) -> list[MixEntry]:
    """The --mix entries, each prepared for its kind by `build`; [] without --mix. AuthbenchError (one line)."""
    tables = args.journey_tables or {}
    if not args.mix:
        if tables:
            raise AuthbenchError(f"the plan file's [journey.{next(iter(tables))}] is a --mix journey and no --mix "
                                 f"names it; {MIX_HINT}")
        return []
    parts = parse_mix(args.mix)
    unused = [name for name in tables if name not in {part.name for part in parts}]
    if unused:
        raise AuthbenchError(f"the plan file's [journey.{unused[0]}] is not in --mix {args.mix}; add "
                             f"{unused[0]}=WEIGHT or remove the table")
    main: tuple[Any, Any, Any] | None = None
    out = []
    for part in parts:
        if part.name in tables:
            kind, common, options = build(_table_namespace(args, part.name, tables[part.name]))
            variant = str(tables[part.name].get(VARIANT_KEY) or "")
        else:
            main = main or build(args)
            kind, common, options = main
            variant = part.name
        if variant:
            options = kind.variant(options, variant)
        out.append(MixEntry(part.name, part.weight, kind, common, options, variant))
    return out


def _table_namespace(args: argparse.Namespace, name: str, table: Any) -> argparse.Namespace:
    """The run's options for the journey of [journey.NAME]: the run's TLS, timeout and lab, the kind's options
    and the accounts at their defaults, then the table's."""
    where = f"the plan file's [journey.{name}]"
    if not isinstance(table, dict):
        raise AuthbenchError(f"{where} is not a table; give it target = \"…\" and its options")
    if "target" not in table:
        raise AuthbenchError(f"{where} has no target; give target = \"…\" (a URL or lab:NAME)")
    values = {**vars(args), **args.kind_defaults, "kind": None}
    options = {}
    for action in args.journey_actions:
        if action.dest in args.account_dests:
            values[action.dest] = action.default
        options.update({string[2:]: action for string in action.option_strings
                        if string.startswith("--") and string not in NOT_OPTIONS})
    for key, value in table.items():
        if key == VARIANT_KEY:
            if not isinstance(value, str):
                raise AuthbenchError(f"{where}: variant is a name, e.g. variant = \"bind\"")
            continue
        action = options.get(key.replace("_", "-"))
        if action is None:
            raise AuthbenchError(f"{where}: {key!r} is not a journey option; give target, kind, variant or a "
                                 "journey option by its long name (e.g. search-base)")
        values[action.dest] = _value(where, key, action, value)
    return argparse.Namespace(**values)


def _value(where: str, key: str, action: argparse.Action, value: Any) -> Any:
    """As the command line would give it: a flag true or false, else a string or number through the option's type."""
    if isinstance(action, argparse._StoreConstAction):
        if not isinstance(value, bool):
            raise AuthbenchError(f"{where}: {key} is a flag; give true or false")
        return action.const if value else action.default
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise AuthbenchError(f"{where}: {key} takes a string or a number")
    try:
        result = action.type(str(value)) if callable(action.type) else str(value)
    except (argparse.ArgumentTypeError, TypeError, ValueError):
        raise AuthbenchError(f"{where}: {value!r} is not a valid value of {key}") from None
    if action.choices is not None and result not in action.choices:
        raise AuthbenchError(f"{where}: {key} takes one of {', '.join(map(str, action.choices))}")
    return result


def worker_argv(args: argparse.Namespace) -> list[str]:
    """The tables for worker processes' command lines (the plan file's values are no option they repeat)."""
    return [TABLES_OPTION, json.dumps(args.journey_tables)] if args.journey_tables else []
