"""Options and look-ups several commands share: accounts, TLS, and the running lab's clusters."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from . import CliError

if TYPE_CHECKING:
    from authbench_lab.config import LabConfig

    from ..accounts import AccountPicker
    from ..cluster.checks import Cluster
    from ..journeys.success import SuccessRule

PASSWORD_ENV = "AUTHBENCH_PASSWORD"  # where a single account's password comes from by default
DEFAULT_PASSWORD_RULE = "pw-{user}"  # the lab's, for --accounts-template
LAB_PROTECTED_PATH = "/secure/"


def add_account_options(parser: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    from ..accounts import ORDERS

    accounts = parser.add_argument_group("accounts (a lab target brings its own)")
    source = accounts.add_mutually_exclusive_group()
    source.add_argument("--account", help=f"one account for every journey; password from ${PASSWORD_ENV} "
                        "or --password-file")
    source.add_argument("--accounts-csv", help="CSV file of user,password")
    source.add_argument("--accounts-template", help="e.g. user{000..999}, with --password-rule")
    accounts.add_argument("--password-file", help="file holding the single account's password")
    accounts.add_argument("--password-rule", default=DEFAULT_PASSWORD_RULE,
                          help=f"for templates (default {DEFAULT_PASSWORD_RULE}; never stored in results)")
    accounts.add_argument("--order", choices=ORDERS, default="sequential")
    accounts.add_argument("--seed", type=int, help="random order: repeatable with a seed")
    return accounts


def add_tls_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    tls = parser.add_mutually_exclusive_group()
    tls.add_argument("--ca-bundle", help="CA certificates to verify the targets' TLS with (default: system)")
    tls.add_argument("--insecure", action="store_true", help="do not verify TLS certificates")


def check_url(url: str, what: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CliError(f"{what} {url!r} is not an http(s) URL")
    check_url_port(url, what)


def check_url_port(url: str, what: str) -> None:
    """urlsplit checks a port only when asked, and lets 0 through."""
    try:
        port = urlsplit(url).port
    except ValueError:
        port = 0
    if port == 0:
        raise CliError(f"{what} {url!r}: its port is not 1..65535")


def tls_verify(args: argparse.Namespace, lab_ca: str | None = None) -> bool | str:
    """requests-style `verify`: False, a CA bundle path, or True for the system's CAs."""
    if args.insecure:
        return False
    verify = args.ca_bundle or lab_ca or True
    if isinstance(verify, str) and not Path(verify).is_file():
        raise CliError(f"--ca-bundle {verify!r} is not a readable file")
    return verify


def accounts_from_args(args: argparse.Namespace, lab_defaults: dict | None) -> tuple[AccountPicker, dict]:
    """The accounts to log in with, and a description of them for the record (never a password)."""
    from ..accounts import Account, AccountPicker, AccountsError, from_csv, from_template

    try:
        if args.account:
            if args.password_file:
                try:
                    password = Path(args.password_file).read_text().rstrip("\n")
                except (OSError, UnicodeDecodeError) as exc:
                    raise CliError(f"cannot read --password-file {args.password_file!r}: "
                                   f"{getattr(exc, 'strerror', None) or exc}") from None
                if not password:
                    raise CliError(f"--password-file {args.password_file!r} is empty: an empty password logs "
                                   "nobody in; put the password in it")
            elif os.environ.get(PASSWORD_ENV):
                password = os.environ[PASSWORD_ENV]
            else:
                raise CliError(f"--account needs a password: set ${PASSWORD_ENV} (not empty) or give --password-file")
            accounts, source = [Account(args.account, password)], {"type": "one account", "user": args.account}
        elif args.accounts_csv:
            accounts = from_csv(args.accounts_csv)
            source = {"type": "csv", "file": args.accounts_csv, "accounts": len(accounts)}
        else:
            template = args.accounts_template or (lab_defaults or {}).get("template")
            if not template:
                raise CliError("no accounts: give --account, --accounts-csv or --accounts-template")
            rule = args.password_rule if args.accounts_template or not lab_defaults else lab_defaults["password_rule"]
            accounts = from_template(template, rule)
            source = {"type": "template", "template": template, "accounts": len(accounts)}
        picker = AccountPicker(accounts, args.order, args.seed)
    except AccountsError as exc:
        raise CliError(str(exc)) from None
    return picker, {**source, "order": args.order}


# -- the running lab ----------------------------------------------------------------------------------


def add_lab_dir_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """--lab-dir, the one name of the lab's folder in every command (default $AUTHBENCH_LAB_DIR)."""
    from authbench_lab import config

    from .lab import RUN_DIR_ENV, default_run_dir, folder_path

    parser.add_argument("--lab-dir", default=default_run_dir(), metavar="DIR", type=folder_path,
                        help=f"the embedded lab's folder (default ${RUN_DIR_ENV} or {config.DEFAULT_RUN_DIR})")


def running_lab(run_dir: str | Path) -> LabConfig:
    """The configuration of the lab running in `run_dir`, or a CliError saying how to start one."""
    from authbench_lab import lab
    from authbench_lab.config import LabConfig

    state = lab.read_state(run_dir)
    if not state or not any(row["healthy"] for row in lab.status(run_dir)):
        where = os.path.abspath(run_dir)
        raise CliError(f"no lab running in {where}; start it with 'authbench lab up --lab-dir {where}', or point "
                       "--lab-dir (or $AUTHBENCH_LAB_DIR) at the folder of the lab that runs")
    return LabConfig.from_dict(state["config"])


def lab_backend(config: LabConfig, name: str) -> str:
    if name not in config.backends:
        raise CliError(f"the lab has no {name!r} cluster; it has {', '.join(config.backends)}")
    return name


def lab_account_defaults(config: LabConfig) -> dict[str, str]:
    """The lab's accounts as a template and password rule (user0000..userNNNN, pw-<user>)."""
    from authbench_lab.config import PASSWORD_PREFIX, username

    last = username(config.users - 1, config.users)
    return {"template": "user{" + "0" * (len(last) - 4) + ".." + last[4:] + "}",
            "password_rule": PASSWORD_PREFIX + "{user}"}


def lab_cluster(config: LabConfig, backend: str) -> Cluster:
    from ..cluster.checks import Cluster

    return Cluster(sp_url=config.sp_url(backend) + LAB_PROTECTED_PATH, lb_url=config.lb_url(backend),
                   nodes={"A": config.node_url(backend, "a"), "B": config.node_url(backend, "b")},
                   verify=str(config.ca_cert))


# -- what counts as logged in, and what is kept of failures -------------------------------------------


def add_success_options(group: argparse._ArgumentGroup) -> None:
    from ..results.failures import DEFAULT_KEEP

    group.add_argument("--expect", metavar="TEXT",
                       help="text the SP's page after login must contain; {user} is the account's user name "
                       "(default: any 2xx page of the SP that is not a login form and not the IdP's)")
    group.add_argument("--expect-regex", metavar="REGEX", help="a regular expression that page must match")
    group.add_argument("--expect-status", type=int, metavar="CODE", help="the HTTP status that page must have")
    group.add_argument("--keep-failures", type=int, default=DEFAULT_KEEP, metavar="N",
                       help=f"failing journeys kept per reason under results/<id>/failures/ (default {DEFAULT_KEEP})")


def success_rule(args: argparse.Namespace) -> SuccessRule:
    """The --expect options as a rule; CliError for a bad regular expression, status or --keep-failures."""
    from ..journeys.success import SuccessRule

    if args.keep_failures < 0:
        raise CliError("--keep-failures must be 0 or more")
    try:
        return SuccessRule(args.expect or "", args.expect_regex or "", args.expect_status)
    except ValueError as exc:
        raise CliError(str(exc)) from None
