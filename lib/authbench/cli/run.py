"""`authbench run` (headless SAML SSO load in Grinder-style patterns) and `authbench sp-metadata`."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from . import EXIT_FAILURE, CliError, say
from .options import (
    LAB_PROTECTED_PATH,
    accounts_from_args,
    add_account_options,
    add_tls_options,
    check_url,
    lab_account_defaults,
    lab_backend,
    running_lab,
    tls_verify,
)

if TYPE_CHECKING:
    from ..patterns import Plan
    from ..users.saml import SAMLSettings

LAB_PREFIX = "lab:"
LAB_SSO_PATH = "/idp/profile/SAML2/Redirect/SSO"
LOGIN_FORMS = ("auto", "keycloak", "shibboleth", "simplesamlphp")  # users.saml.LOGIN_FORMS, without importing Locust


def add_parser(subparsers: argparse._SubParsersAction) -> None:
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
    add_tls_options(target)
    target.add_argument("--timeout", default="10s", help="per request (default 10s)")

    plan = run.add_argument_group("pattern")
    plan.add_argument("--pattern", default="2x1000,10x200,20x200",
                      help="USERSxRUNS[,…]: exactly USERS concurrent users doing RUNS journeys each "
                      "(default: the 2012 report's 2x1000,10x200,20x200)")
    plan.add_argument("--warmup", default="0", help="load before each measured pattern, excluded (e.g. 60s)")
    plan.add_argument("--repeat", type=int, default=1, help="repetitions of each pattern, then averaged")
    plan.add_argument("--cell-time-limit", default="1h",
                      help="a pattern repetition taking longer is cut short and marked so (default 1h)")

    add_account_options(run)

    journey = run.add_argument_group("journey")
    journey.add_argument("--login-form", choices=LOGIN_FORMS, default="auto",
                         help="which login form to expect (default auto: try them all)")
    journey.add_argument("--username-field", help="login form field for the user name (overrides --login-form)")
    journey.add_argument("--password-field", help="login form field for the password")
    journey.add_argument("--reuse-session", action="store_true",
                         help="keep cookies between a user's journeys: later ones measure SSO without password")
    journey.add_argument("--new-connection", action="store_true",
                         help="close connections after every journey (browser-like churn; TIME_WAIT counted)")

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
    from .lab import default_run_dir

    config = running_lab(default_run_dir())
    lab_backend(config, name)
    url = config.lb_url(name) + LAB_SSO_PATH if args.sp == "virtual" else config.sp_url(name) + LAB_PROTECTED_PATH
    return url, str(config.ca_cert), {**lab_account_defaults(config), "metadata_dir": config.metadata_dir,
                                      "idp_cert": config.cluster_dir(name)}


@dataclass
class PreparedRun:
    """A run's plan and journey settings, checked; `config` describes it for the record (no secrets)."""

    plan: Plan
    settings: SAMLSettings
    config: dict[str, Any]
    target: str
    cell_time_limit: float


def prepare(args: argparse.Namespace) -> PreparedRun:
    """Options (of `authbench run`, or the web UI's form parsed by the same parser) → a checked run; CliError."""
    from ..patterns import PlanError, parse_duration, parse_plan
    from ..users.saml import SAMLSettings

    try:
        plan = parse_plan(args.pattern, args.warmup, args.repeat)
        timeout = parse_duration(args.timeout)
        cell_limit = parse_duration(args.cell_time_limit)
    except PlanError as exc:
        raise CliError(str(exc)) from None
    if timeout <= 0:
        raise CliError("--timeout must be more than 0")
    lab_defaults = None
    target, lab_ca = args.target, None
    if target.startswith(LAB_PREFIX):
        target, lab_ca, lab_defaults = _lab_target(target[len(LAB_PREFIX):], args)
    check_url(target, "--target")
    verify = tls_verify(args, lab_ca)
    picker, account_source = accounts_from_args(args, lab_defaults)
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
    config = {"target": target, "sp": args.sp, "verify_signature": args.verify_signature,
              "tls_verify": verify if isinstance(verify, bool) else f"CA bundle {verify}",
              "timeout_s": timeout, "accounts": account_source, "login_form": settings.describe_fields(),
              "reuse_session": args.reuse_session, "new_connection": args.new_connection}
    return PreparedRun(plan, settings, config, target, cell_limit)


def _run(args: argparse.Namespace) -> int:
    from .. import headless
    from ..results.recorder import results_dir
    from ..users.saml import SAMLUser, preflight, time_wait_count

    prepared = prepare(args)
    plan, settings, target = prepared.plan, prepared.settings, prepared.target
    try:
        run_dir = results_dir(Path(args.results), args.run_id)  # fails now, not after the load, if unwritable
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot write results under {args.results!r}: {exc}") from None
    problem = preflight(settings)  # before any warm-up: unreachable target, no login form, refused account
    if problem:
        raise CliError(problem)
    say(f"target {target}: reachable, login form found; plan {args.pattern}, warm-up {plan.warmup:g} s, "
        f"{plan.repeat} repetition(s)")
    port = urlsplit(target).port or (443 if target.startswith("https") else 80)
    extras = (lambda: {"time_wait_after": time_wait_count(port)}) if args.new_connection else None
    report = headless.execute(plan, SAMLUser, settings, config=prepared.config, results_base=run_dir.parent,
                              run_id=run_dir.name, cell_time_limit=prepared.cell_time_limit, say=say,
                              cell_extras=extras)
    headless.print_report(report, say)
    if args.new_connection:
        say(f"sockets in TIME_WAIT towards port {port} after the run: {time_wait_count(port)}")
    return 0 if report.complete else EXIT_FAILURE
