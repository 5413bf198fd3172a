"""Options several commands share, read from the parsed arguments into the typed forms below the CLI.

The definitions live with what reads them (`kinds.common`, `embedded_lab`); this module only turns an
argparse namespace into their arguments, so nothing below the CLI sees one.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from .. import embedded_lab
from ..errors import AuthbenchError
from ..kinds import common
from ..kinds.base import AccountOptions
from ..kinds.common import (  # noqa: F401 - re-exported for the commands
    DEFAULT_PASSWORD_RULE,
    PASSWORD_ENV,
    add_account_options,
    add_tls_options,
    check_url,
    check_url_port,
)

if TYPE_CHECKING:
    from ..accounts import AccountPicker
    from ..journeys.success import SuccessRule

MIN_PORT, MAX_PORT = 1, 65535
RUN_DIR_ENV = "AUTHBENCH_LAB_DIR"
running_lab = embedded_lab.running
lab_backend = embedded_lab.check_backend
lab_account_defaults = embedded_lab.account_defaults
lab_cluster = embedded_lab.cluster


def account_options(args: argparse.Namespace) -> AccountOptions:
    return AccountOptions(args.account, args.password_file, args.accounts_csv, args.accounts_template,
                          args.password_rule, args.order, args.seed)


def accounts_from_args(args: argparse.Namespace, lab_defaults: dict | None) -> tuple[AccountPicker, dict]:
    return common.accounts(account_options(args), lab_defaults)


def tls_verify(args: argparse.Namespace, lab_ca: str | None = None) -> bool | str:
    return common.tls_verify(args.ca_bundle, args.insecure, lab_ca)


def check_port(value: int | None, option: str) -> None:
    if value is not None and not MIN_PORT <= value <= MAX_PORT:
        raise AuthbenchError(f"{option} {value} is not a port; give {MIN_PORT}..{MAX_PORT}")


def check_ports(args: argparse.Namespace, *dests: str) -> None:
    for dest in dests:
        check_port(getattr(args, dest, None), "--" + dest.replace("_", "-"))


def durations(args: argparse.Namespace, *names: str) -> list[float]:
    """The named duration options in seconds, each more than 0."""
    from ..patterns import parse_duration

    values = [parse_duration(getattr(args, name)) for name in names]
    for name, value in zip(names, values, strict=True):
        if value <= 0:
            raise AuthbenchError(f"--{name.replace('_', '-')} must be more than 0")
    return values


def default_run_dir() -> str:
    from authbench_lab import config

    return os.environ.get(RUN_DIR_ENV) or config.DEFAULT_RUN_DIR


def folder_path(text: str) -> str:
    """argparse type of a folder option: an existing file there is refused before anything starts."""
    if os.path.exists(text) and not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text!r} is a file, not a folder; give a folder (it is created)")
    return text


def add_lab_dir_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """--lab-dir, the one name of the lab's folder in every command (default $AUTHBENCH_LAB_DIR)."""
    from authbench_lab import config

    parser.add_argument("--lab-dir", default=default_run_dir(), metavar="DIR", type=folder_path,
                        help=f"the embedded lab's folder (default ${RUN_DIR_ENV} or {config.DEFAULT_RUN_DIR})")


def add_success_options(group: argparse._ArgumentGroup) -> None:
    """compare's: what counts as logged in, and what is kept of failures."""
    from ..results.failures import DEFAULT_KEEP

    common.add_expect_options(group)
    group.add_argument("--keep-failures", type=int, default=DEFAULT_KEEP, metavar="N",
                       help=f"failing journeys kept per reason under results/<id>/failures/ (default {DEFAULT_KEEP})")


def success_rule(args: argparse.Namespace) -> SuccessRule:
    """The --expect options as a rule; AuthbenchError for a bad regular expression, status or --keep-failures."""
    if args.keep_failures < 0:
        raise AuthbenchError("--keep-failures must be 0 or more")
    return common.success_rule(args.expect, args.expect_regex, args.expect_status)
