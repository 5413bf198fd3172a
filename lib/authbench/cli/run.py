"""`authbench run` (headless SAML SSO load in Grinder-style patterns) and `authbench sp-metadata`."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from urllib.parse import urlsplit

from . import EXIT_FAILURE, CliError, ldap_run, say

PASSWORD_ENV = "AUTHBENCH_PASSWORD"  # where a single account's password comes from by default
LAB_PREFIX = "lab:"
LAB_SSO_PATH = "/idp/profile/SAML2/Redirect/SSO"
LOGIN_FORMS = ("auto", "keycloak", "shibboleth", "simplesamlphp")  # users.saml.LOGIN_FORMS, without importing Locust


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from ..accounts import ORDERS

    run = subparsers.add_parser("run", help="headless load: SAML SSO journeys in threads x runs patterns")
    target = run.add_argument_group("target")
    target.add_argument("--target", required=True,
                        help="the SP's protected URL (or, with --sp virtual, the IdP's SSO URL); "
                        "lab:BACKEND for a cluster of the running embedded lab")
    target.add_argument("--sp", choices=("target", "virtual"), default="target",
                        help="target: go through the SP at --target (default); virtual: authbench is the SP")
    target.add_argument("--verify-signature", action="store_true",
                        help="virtual SP: check the Response's signature in-process")
    target.add_argument("--idp-cert", help="virtual SP: the IdP's signing certificate (PEM) or metadata (XML)")
    tls = target.add_mutually_exclusive_group()
    tls.add_argument("--ca-bundle", help="CA certificates to verify the targets' TLS with (default: system)")
    tls.add_argument("--insecure", action="store_true", help="do not verify TLS certificates")
    target.add_argument("--timeout", default="10s", help="per request (default 10s)")

    plan = run.add_argument_group("pattern")
    plan.add_argument("--pattern", default="2x1000,10x200,20x200",
                      help="USERSxRUNS[,…]: exactly USERS concurrent users doing RUNS journeys each "
                      "(default: the 2012 report's 2x1000,10x200,20x200)")
    plan.add_argument("--warmup", default="0", help="load before each measured pattern, excluded (e.g. 60s)")
    plan.add_argument("--repeat", type=int, default=1, help="repetitions of each pattern, then averaged")
    plan.add_argument("--cell-time-limit", default="1h",
                      help="a pattern repetition taking longer is cut short and marked so (default 1h)")

    accounts = run.add_argument_group("accounts")
    source = accounts.add_mutually_exclusive_group()
    source.add_argument("--account", help=f"one account for every journey; password from ${PASSWORD_ENV} "
                        "or --password-file")
    source.add_argument("--accounts-csv", help="CSV file of user,password")
    source.add_argument("--accounts-template", help="e.g. user{000..999}, with --password-rule")
    accounts.add_argument("--password-file", help="file holding the single account's password")
    accounts.add_argument("--password-rule", default="pw-{user}", help="for templates (default pw-{user})")
    accounts.add_argument("--order", choices=ORDERS, default="sequential")
    accounts.add_argument("--seed", type=int, help="random order: repeatable with a seed")

    journey = run.add_argument_group("journey")
    journey.add_argument("--login-form", choices=LOGIN_FORMS, default="auto",
                         help="which login form to expect (default auto: try them all)")
    journey.add_argument("--username-field", help="login form field for the user name (overrides --login-form)")
    journey.add_argument("--password-field", help="login form field for the password")
    journey.add_argument("--reuse-session", action="store_true",
                         help="keep cookies between a user's journeys: later ones measure SSO without password")
    journey.add_argument("--new-connection", action="store_true",
                         help="close connections after every journey (browser-like churn; TIME_WAIT counted)")

    ldap_run.add_options(run)

    output = run.add_argument_group("results")
    output.add_argument("--results", default="results", help="results folder (default ./results)")
    output.add_argument("--run-id", help="name of this run's folder (default: date, time and a random suffix)")
    run.set_defaults(handler=_run)


def add_sp_metadata_parser(subparsers: argparse._SubParsersAction) -> None:
    from ..journeys.virtual_sp import DEFAULT_ACS_URL, DEFAULT_ENTITY_ID

    parser = subparsers.add_parser("sp-metadata", help="print the virtual SP's metadata, to register at an IdP")
    parser.add_argument("--entity-id", default=DEFAULT_ENTITY_ID)
    parser.add_argument("--acs", default=DEFAULT_ACS_URL, help="never contacted: the Response is consumed")
    parser.set_defaults(handler=_sp_metadata)


def _sp_metadata(args: argparse.Namespace) -> int:
    from ..journeys.virtual_sp import VirtualSP

    say(VirtualSP("", entity_id=args.entity_id, acs_url=args.acs).sp_metadata().rstrip())
    return 0


# -- turning options into a run ---------------------------------------------------------------------


def _lab_target(name: str, args: argparse.Namespace) -> tuple[str, str, dict]:
    """(URL, CA bundle, defaults) of a cluster of the running lab."""
    from authbench_lab import lab
    from authbench_lab.config import PASSWORD_PREFIX, LabConfig, username

    from .lab import default_run_dir

    run_dir = default_run_dir()
    state = lab.read_state(run_dir)
    if not state:
        raise CliError(f"no lab in {os.path.abspath(run_dir)}; start it with 'authbench lab up'")
    config = LabConfig.from_dict(state["config"])
    if name not in config.backends:
        raise CliError(f"the lab has no {name!r} cluster; it has {', '.join(config.backends)}")
    url = config.lb_url(name) + LAB_SSO_PATH if args.sp == "virtual" else config.sp_url(name) + "/secure/"
    last = username(config.users - 1, config.users)
    template = "user{" + "0" * (len(last) - 4) + ".." + last[4:] + "}"
    return url, str(config.ca_cert), {"template": template, "password_rule": PASSWORD_PREFIX + "{user}",
                                      "metadata_dir": config.metadata_dir, "idp_cert": config.cluster_dir(name)}


def _accounts(args: argparse.Namespace, lab_defaults: dict | None):
    from ..accounts import Account, AccountPicker, AccountsError, from_csv, from_template

    try:
        if args.account:
            if args.password_file:
                try:
                    password = Path(args.password_file).read_text().rstrip("\n")
                except OSError as exc:
                    raise CliError(f"cannot read --password-file {args.password_file!r}: {exc.strerror}") from None
            elif os.environ.get(PASSWORD_ENV) is not None:
                password = os.environ[PASSWORD_ENV]
            else:
                raise CliError(f"--account needs a password: set ${PASSWORD_ENV} or give --password-file")
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


def _check_url(url: str, what: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CliError(f"{what} {url!r} is not an http(s) URL")


def _run(args: argparse.Namespace) -> int:
    from .. import headless
    from ..patterns import PlanError, parse_duration, parse_plan
    from ..results.recorder import results_dir
    from ..sockets import time_wait_count
    from ..users.saml import SAMLSettings, SAMLUser, preflight

    try:
        plan = parse_plan(args.pattern, args.warmup, args.repeat)
        timeout = parse_duration(args.timeout)
        cell_limit = parse_duration(args.cell_time_limit)
    except PlanError as exc:
        raise CliError(str(exc)) from None
    if timeout <= 0:
        raise CliError("--timeout must be more than 0")
    if ldap_run.wants(args.target):
        return ldap_run.run(args, plan, timeout, cell_limit, _accounts)
    lab_defaults = None
    target, verify = args.target, (False if args.insecure else (args.ca_bundle or True))
    if target.startswith(LAB_PREFIX):
        target, ca_bundle, lab_defaults = _lab_target(target[len(LAB_PREFIX):], args)
        verify = False if args.insecure else (args.ca_bundle or ca_bundle)
    _check_url(target, "--target")
    if isinstance(verify, str) and not Path(verify).is_file():
        raise CliError(f"--ca-bundle {verify!r} is not a readable file")
    picker, account_source = _accounts(args, lab_defaults)
    try:
        settings = SAMLSettings.build(
            target=target, accounts=picker, verify=verify, timeout=timeout, login_form=args.login_form,
            username_field=args.username_field, password_field=args.password_field,
            reuse_session=args.reuse_session, new_connection=args.new_connection,
            virtual_sp=args.sp == "virtual", verify_signature=args.verify_signature,
            idp_cert=args.idp_cert or (lab_defaults and str(lab_defaults["idp_cert"] / "signing.crt")),
            register_metadata_in=lab_defaults and lab_defaults["metadata_dir"],
        )
    except ValueError as exc:
        raise CliError(str(exc)) from None
    try:
        run_dir = results_dir(Path(args.results), args.run_id)  # fails now, not after the load, if unwritable
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot write results under {args.results!r}: {exc}") from None
    problem = preflight(settings)  # before any warm-up: unreachable target, no login form, refused account
    if problem:
        raise CliError(problem)
    config = {"target": target, "sp": args.sp, "verify_signature": args.verify_signature,
              "tls_verify": verify if isinstance(verify, bool) else f"CA bundle {verify}",
              "timeout_s": timeout, "accounts": account_source, "login_form": settings.describe_fields(),
              "reuse_session": args.reuse_session, "new_connection": args.new_connection}
    say(f"target {target}: reachable, login form found; plan {args.pattern}, warm-up {plan.warmup:g} s, "
        f"{plan.repeat} repetition(s)")
    port = urlsplit(target).port or (443 if target.startswith("https") else 80)
    extras = (lambda: {"time_wait_after": time_wait_count(port)}) if args.new_connection else None
    report = headless.execute(plan, SAMLUser, settings, config=config, results_base=run_dir.parent,
                              run_id=run_dir.name, cell_time_limit=cell_limit, say=say, cell_extras=extras)
    headless.print_report(report, say)
    if args.new_connection:
        say(f"sockets in TIME_WAIT towards port {port} after the run: {time_wait_count(port)}")
    return 0 if report.complete else EXIT_FAILURE
