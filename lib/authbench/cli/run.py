"""`authbench run` (headless SAML SSO load in Grinder-style patterns) and `authbench sp-metadata`."""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..results.folder import abandon
from ..signals import note
from ..targets_lock import TargetBusy, target_lock
from . import EXIT_CRITERIA_FAILED, EXIT_FAILURE, CliError, fault_options, ldap_run, openmodel, pg_run, pi_run, say
from .guards import check_ports, claim_run_folder
from .options import (
    LAB_PROTECTED_PATH,
    accounts_from_args,
    add_account_options,
    add_lab_dir_option,
    add_success_options,
    add_tls_options,
    check_url,
    lab_account_defaults,
    lab_backend,
    running_lab,
    success_rule,
    tls_verify,
)
from .prepared import LAB_PREFIX, PreparedRun, load_key

if TYPE_CHECKING:
    from ..patterns import Plan

LAB_SSO_PATH = "/idp/profile/SAML2/Redirect/SSO"
DEFAULT_MASTER_PORT = 5557  # Locust's
MAX_ENTITY_ID = 1024  # SAML core 8.3.6: an entityID is a URI of at most 1024 characters
LOGIN_FORMS = ("auto", "keycloak", "shibboleth", "simplesamlphp")  # users.saml.LOGIN_FORMS, without importing Locust


def add_parser(subparsers: argparse._SubParsersAction, name: str = "run",
               help: str = "headless load: SAML SSO journeys in threads x runs patterns") -> argparse.ArgumentParser:
    run = subparsers.add_parser(name, help=help)
    target = run.add_argument_group("target")
    target.add_argument("--target", required=True,
                        help="the SP's protected URL (or, with --sp virtual, the IdP's SSO URL); "
                        "lab:BACKEND for a cluster of the running embedded lab; ldap://, lab:ldap, "
                        "postgresql://host:port/db or lab:postgres for LDAP binds or database logins; "
                        "lab:privacyidea or https://host/validate/check for OTP checks")
    target.add_argument("--sp", choices=("target", "virtual"), default="target",
                        help="target: go through the SP at --target (default); virtual: authbench is the SP")
    target.add_argument("--verify-signature", action="store_true",
                        help="virtual SP: check the Response's signature in-process")
    target.add_argument("--idp-cert", help="virtual SP: the IdP's signing certificate (PEM) or metadata (XML)")
    add_tls_options(target)
    add_lab_dir_option(target)
    target.add_argument("--timeout", default="10s", help="per request (default 10s)")

    plan = run.add_argument_group("pattern")
    plan.add_argument("--pattern", default="2x1000,10x200,20x200",
                      help="USERSxRUNS[,…]: exactly USERS concurrent users doing RUNS journeys each "
                      "(default: the 2012 report's 2x1000,10x200,20x200)")
    plan.add_argument("--warmup", default="0", help="load before each measured pattern, excluded (e.g. 60s)")
    plan.add_argument("--repeat", type=int, default=1, help="repetitions of each pattern, then averaged")
    plan.add_argument("--cell-time-limit", default="1h",
                      help="a pattern repetition taking longer is cut short and marked so (default 1h)")

    accounts = add_account_options(run)

    journey = run.add_argument_group("journey")
    journey.add_argument("--login-form", choices=LOGIN_FORMS, default="auto",
                         help="which login form to expect (default auto: try them all)")
    journey.add_argument("--username-field", help="login form field for the user name (overrides --login-form)")
    journey.add_argument("--password-field", help="login form field for the password")
    journey.add_argument("--reuse-session", action="store_true",
                         help="keep cookies between a user's journeys: later ones measure SSO without password")
    journey.add_argument("--new-connection", action="store_true",
                         help="close connections after every journey (browser-like churn; TIME_WAIT counted)")
    fault_options.add_pace_option(journey)
    add_success_options(journey)

    ldap_run.add_options(run)
    pi_run.add_options(run)
    openmodel.add_options(run)
    fault_options.add_options(run)

    output = run.add_argument_group("results")
    output.add_argument("--results", default="results", help="results folder (default ./results)")
    output.add_argument("--run-id", help="name of this run's folder (default: date, time and a random suffix); "
                        "an existing one is refused unless --resume or --overwrite")
    existing = output.add_mutually_exclusive_group()
    existing.add_argument("--resume", action="store_true",
                          help="continue the run folder --run-id: same target and plan, only its missing cells run")
    existing.add_argument("--overwrite", action="store_true",
                          help="move an existing --run-id folder aside (renamed .replaced-TIME) and start afresh")
    output.add_argument("--force", action="store_true",
                        help="load the target even while another authbench process loads it")
    output.add_argument("--metrics-port", type=int, help="serve Prometheus /metrics on this port during the run")
    output.add_argument("--metrics-host", default="127.0.0.1", help="address for /metrics (default 127.0.0.1)")
    output.add_argument("--max-error-pct", type=float, metavar="PCT",
                        help="exit 3 when more than PCT%% of the measured journeys failed: a pass/fail verdict "
                        "for CI and Kubernetes Jobs (default: errors do not change the exit status)")

    dist = run.add_argument_group("distributed (a Locust master and workers)")
    role = dist.add_mutually_exclusive_group()
    role.add_argument("--workers", type=int, help="run the load in N worker processes on this machine")
    role.add_argument("--master", action="store_true", help="wait for --expect-workers workers from other machines")
    role.add_argument("--worker", action="store_true", help="be a worker of the master at --master-host")
    dist.add_argument("--expect-workers", type=int, default=1, help="--master: workers to wait for (default 1)")
    dist.add_argument("--worker-wait", default="60s", help="how long the master waits for its workers (default 60s)")
    dist.add_argument("--master-bind-host", default="*", help="--master: interface to listen on (default all)")
    dist.add_argument("--master-bind-port", type=int, help="master: port to listen on (default 5557; --workers: any)")
    dist.add_argument("--master-host", default="127.0.0.1", help="--worker: the master's address")
    dist.add_argument("--master-port", type=int, default=DEFAULT_MASTER_PORT, help="--worker: the master's port")
    dist.add_argument("--connect-timeout", default="30s", help="--worker: give up reaching the master after this")
    dist.add_argument("--master-timeout", default="10s",
                      help="--worker: quit when the master has sent no heartbeat for this long (default 10s)")
    settings = [action for group in (target, accounts, journey) for action in group._group_actions]
    run.set_defaults(handler=_run, settings_actions=settings)
    return run


def add_sp_metadata_parser(subparsers: argparse._SubParsersAction) -> None:
    from ..journeys.virtual_sp import DEFAULT_ACS_URL, DEFAULT_ENTITY_ID

    parser = subparsers.add_parser("sp-metadata", help="print the virtual SP's metadata, to register at an IdP")
    parser.add_argument("--entity-id", default=DEFAULT_ENTITY_ID)
    parser.add_argument("--acs", default=DEFAULT_ACS_URL, help="never contacted: the Response is consumed")
    parser.set_defaults(handler=_sp_metadata)


def _sp_metadata(args: argparse.Namespace) -> int:
    from ..journeys.virtual_sp import VirtualSP

    entity_id = args.entity_id.strip()
    if not entity_id or len(entity_id) > MAX_ENTITY_ID or any(c.isspace() or not c.isprintable() for c in entity_id):
        raise CliError(f"--entity-id {args.entity_id!r}: give a URI of 1..{MAX_ENTITY_ID} characters without spaces")
    check_url(args.acs, "--acs")
    say(VirtualSP("", entity_id=entity_id, acs_url=args.acs).sp_metadata().rstrip())
    return 0


# -- turning options into a run ---------------------------------------------------------------------


def _lab_target(name: str, args: argparse.Namespace) -> tuple[str, str, dict]:
    """(URL, CA bundle, defaults) of a cluster of the running lab."""
    config = running_lab(args.lab_dir)
    lab_backend(config, name)
    url = config.lb_url(name) + LAB_SSO_PATH if args.sp == "virtual" else config.sp_url(name) + LAB_PROTECTED_PATH
    return url, str(config.ca_cert), {**lab_account_defaults(config), "metadata_dir": config.metadata_dir,
                                      "idp_cert": config.cluster_dir(name)}


def _plan_options(args: argparse.Namespace) -> tuple[Plan, float, float]:
    """(plan, per-request timeout, cell time limit): what every journey's run needs; CliError."""
    from ..patterns import PlanError, check_cell_limit, parse_duration, parse_plan

    try:
        plan = parse_plan(args.pattern, args.warmup, args.repeat)
        timeout = parse_duration(args.timeout)
        cell_limit = parse_duration(args.cell_time_limit)
        check_cell_limit(plan, cell_limit)
    except PlanError as exc:
        raise CliError(str(exc)) from None
    if timeout <= 0:
        raise CliError("--timeout must be more than 0")
    check_ports(args, "metrics_port", "master_bind_port", "master_port")
    if openmodel.wanted(args):
        plan = openmodel.level_plan(args, plan.warmup, plan.repeat)
    return plan, timeout, cell_limit


def prepare(args: argparse.Namespace) -> PreparedRun:
    """Options (of `authbench run`, or the web UI's form parsed by the same parser) → a checked run; CliError."""
    from ..users.saml import SAMLSettings, SAMLUser, preflight

    plan, timeout, cell_limit = _plan_options(args)
    if (args.workers is not None and args.workers < 1) or args.expect_workers < 1:
        raise CliError("--workers and --expect-workers must be at least 1")
    if args.max_error_pct is not None and not 0 <= args.max_error_pct <= 100:
        raise CliError(f"--max-error-pct must be between 0 and 100, got {args.max_error_pct:g}")
    lab_defaults = None
    target, lab_ca = args.target, None
    backend = target[len(LAB_PREFIX):] if target.startswith(LAB_PREFIX) else None
    faults = fault_options.faults(args, backend, args.lab_dir)
    pace = fault_options.pace(args)
    if target.startswith(LAB_PREFIX):
        target, lab_ca, lab_defaults = _lab_target(target[len(LAB_PREFIX):], args)
    check_url(target, "--target")
    verify = tls_verify(args, lab_ca)
    rule = success_rule(args)
    picker, account_source = accounts_from_args(args, lab_defaults)
    try:
        settings = SAMLSettings.build(
            target=target, accounts=picker, verify=verify, timeout=timeout, login_form=args.login_form,
            username_field=args.username_field, password_field=args.password_field,
            reuse_session=args.reuse_session, new_connection=args.new_connection,
            virtual_sp=args.sp == "virtual", verify_signature=args.verify_signature,
            idp_cert=args.idp_cert or (lab_defaults and str(lab_defaults["idp_cert"] / "signing.crt")),
            register_metadata_in=lab_defaults and lab_defaults["metadata_dir"], rule=rule, pace=pace,
        )
    except ValueError as exc:
        raise CliError(str(exc)) from None
    config = {"target": target, "sp": args.sp, "verify_signature": args.verify_signature,
              "tls_verify": verify if isinstance(verify, bool) else f"CA bundle {verify}",
              "timeout_s": timeout, "accounts": account_source, "login_form": settings.describe_fields(),
              "reuse_session": args.reuse_session, "new_connection": args.new_connection,
              "success_rule": rule.describe(), "keep_failures": args.keep_failures, "pace_s": pace,
              "faults": [fault.describe() for fault in faults]}
    return PreparedRun(plan, settings, config, target, cell_limit, args.keep_failures, load_key(args, target),
                       SAMLUser, preflight, faults, args.lab_dir)


def _other_journey(args: argparse.Namespace) -> Any:
    """The CLI module of the journey the target names when it is not SAML SSO, or None: LDAP binds
    (ldap_run), database logins (pg_run), privacyIDEA's /validate/check (pi_run)."""
    for journey in (ldap_run, pg_run, pi_run):
        if journey.wants(args.target):
            return journey
    return None


def prepare_any(args: argparse.Namespace) -> PreparedRun:
    """`prepare` for whatever journey the target names: the web UI's form starts any of them."""
    journey = _other_journey(args)
    return journey.prepare(args, *_plan_options(args)) if journey else prepare(args)


def _run(args: argparse.Namespace) -> int:
    journey = _other_journey(args)
    if journey is not None:  # the same patterns, results and reports; the journey's own run
        return journey.run(args, *_plan_options(args))
    prepared = prepare(args)
    worker_wait, connect_wait, master_timeout = _durations(args, "worker_wait", "connect_timeout", "master_timeout")
    if args.worker:
        return _run_worker(args, prepared.settings, connect_wait, master_timeout)
    run_dir, lock = claim_run_folder(args, prepared.plan, prepared.target)  # refused now, not after the load
    try:
        with target_lock(prepared.load_key, f"authbench run (results {run_dir})", force=args.force):
            return _load(args, prepared, run_dir, lock, worker_wait)
    except TargetBusy:
        abandon(run_dir, lock)
        raise


def _load(args: argparse.Namespace, prepared: PreparedRun, run_dir: Path, lock: Any, worker_wait: float) -> int:
    """The preflight login, then the plan (locally, or as a master with workers); the exit code."""
    from .. import headless
    from ..distributed import DistributedError
    from ..metrics import MetricsError
    from ..sockets import time_wait_count

    plan, settings, target = prepared.plan, prepared.settings, prepared.target
    check = prepared.preflight(settings)  # before any warm-up: one whole login, every hop shown
    for line in check.lines():
        say(line)
    problem = check.problem(check.save(run_dir))
    if problem:
        abandon(run_dir, lock)
        raise CliError(problem)
    say(f"plan {openmodel.plan_text(args, plan)}, warm-up {plan.warmup:g} s, {plan.repeat} repetition(s)"
        + (f", pace {settings.pace:g} s" if settings.pace else "") + f"; results in {run_dir}")
    for fault in prepared.faults:
        say(f"fault plan: {fault.describe()}")
    port = urlsplit(target).port or (443 if target.startswith("https") else 80)
    with prepared.cell_listeners(run_dir, say) as (listen, listened):

        def extras() -> dict[str, Any]:
            return {**({"time_wait_after": time_wait_count(port)} if args.new_connection else {}), **listened()}

        run = functools.partial(prepared.execute, run_dir, resume=args.resume, say=say, cell_extras=extras,
                                metrics_port=args.metrics_port, metrics_host=args.metrics_host, listen=listen)
        try:
            distributed = args.master or args.workers
            report = _run_master(args, run, prepared.user_class, settings, worker_wait) if distributed else run()
        except (DistributedError, MetricsError) as exc:
            raise CliError(str(exc), getattr(exc, "exit_code", 2)) from None
    headless.print_report(report, say)
    if args.new_connection:
        say(f"sockets in TIME_WAIT towards port {port} after the run: {time_wait_count(port)}")
    if not report.complete or report.degraded:
        return EXIT_FAILURE
    return _criteria_verdict(report.summaries, args.max_error_pct)


def _criteria_verdict(summaries: list, max_error_pct: float | None) -> int:
    """0, or EXIT_CRITERIA_FAILED (said in one line) when the measured journeys failed too often."""
    if max_error_pct is None:
        return 0
    tests = sum(summary.tests for _label, summary in summaries)
    errors = sum(summary.errors for _label, summary in summaries)
    pct = 100.0 * errors / tests if tests else 100.0
    if pct <= max_error_pct:
        return 0
    say(f"FAILED: {pct:.2f}% of {tests:g} measured journeys failed, more than --max-error-pct {max_error_pct:g}")
    return EXIT_CRITERIA_FAILED


def _durations(args: argparse.Namespace, *names: str) -> list[float]:
    from ..patterns import PlanError, parse_duration

    try:
        values = [parse_duration(getattr(args, name)) for name in names]
    except PlanError as exc:
        raise CliError(str(exc)) from None
    for name, value in zip(names, values, strict=True):
        if value <= 0:
            raise CliError(f"--{name.replace('_', '-')} must be more than 0")
    return values


def _run_master(args: argparse.Namespace, run: Callable[..., Any], user_class: type, settings: Any,
                worker_wait: float) -> Any:
    """A master (and with --workers its worker processes): wait for the workers, run the plan, reap them."""
    from ..distributed import local
    from ..distributed.master import create_master
    from ..runner import create_environment

    expect = args.workers or args.expect_workers
    bind_host = local.LOOPBACK if args.workers else args.master_bind_host
    port = args.master_bind_port or (local.free_port() if args.workers else DEFAULT_MASTER_PORT)
    environment = create_environment(user_class, settings)
    coordinator = create_master(environment, bind_host, port)
    processes = []
    try:
        if args.workers:
            command = local.worker_command(port, _settings_argv(args),
                                           ["--master-timeout", args.master_timeout])
            processes = local.spawn(args.workers, command)
            say(f"master on {bind_host}:{port}: started {args.workers} worker processes")
        else:
            say(f"master on {bind_host}:{port}: waiting for {expect} worker(s)")
        coordinator.wait_for_workers(expect, worker_wait)
        return run(environment=environment)
    finally:
        environment.runner.quit()  # tells the workers to quit now
        local.reap(processes)
        note(sys.exc_info()[1], "workers told to stop" + (f"; {len(processes)} worker process(es) ended"
                                                           if processes else ""))


def _settings_argv(args: argparse.Namespace) -> list[str]:
    """The journey options as given, for worker processes (a password never: it stays in the environment)."""
    argv: list[str] = []
    for action in args.settings_actions:
        value = getattr(args, action.dest)
        if value is None or value == action.default:
            continue
        if isinstance(action, argparse._StoreTrueAction):
            argv.append(action.option_strings[0])
        else:
            argv += [action.option_strings[0], str(value)]
    return argv


def _run_worker(args: argparse.Namespace, settings: Any, connect_wait: float, master_timeout: float,
                user_class: type | None = None) -> int:
    """A worker process; `user_class` is the journey's (SAMLUser unless another journey's run passes its own)."""
    from ..distributed import DistributedError, worker
    from ..results.failures import FailureBudget
    from ..runner import create_environment
    from ..users.saml import SAMLUser

    environment = create_environment(user_class or SAMLUser, settings)
    environment.authbench.failures = FailureBudget(args.keep_failures)
    try:
        agent = worker.connect(environment, args.master_host, args.master_port, connect_wait=connect_wait,
                               master_timeout=master_timeout)
        say(f"worker of the master at {args.master_host}:{args.master_port}: connected, waiting for patterns")
        return worker.serve(agent, master_timeout)
    except DistributedError as exc:
        raise CliError(str(exc), exc.exit_code) from None
