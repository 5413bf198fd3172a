"""`authbench run --target postgresql://…` (or `lab:postgres`): database logins in the same patterns.

`run.py` hands database targets here; patterns, warm-up, repetitions and results are the SAML run's,
only the user class differs. Every journey is a new connection (connect / authenticate / `SELECT 1` /
disconnect), so the TIME_WAIT count towards the server is reported as for LDAP's churn mode.
"""

from __future__ import annotations

import argparse
from contextlib import ExitStack

from . import EXIT_FAILURE, CliError, fault_options, say
from .guards import claim_lock_and_check
from .options import accounts_from_args, lab_account_defaults, running_lab
from .prepared import PreparedRun, load_key, one_journey_preflight

PG_SCHEMES = ("postgresql://", "postgres://")
LAB_TARGET = "lab:postgres"
LAB_SAMPLED = ("postgres", "ldap")  # the database (its per-login backends included) and the directory it binds to


def wants(target: str) -> bool:
    return target.startswith(PG_SCHEMES) or target == LAB_TARGET


def _lab(lab_dir: str) -> tuple[str, dict]:
    config = running_lab(lab_dir)
    if "postgres" not in config.extras:
        raise CliError("the running lab has no PostgreSQL; start it with 'authbench lab up --with postgres'")
    return config.postgres_url(), lab_account_defaults(config)


def settings_from_args(args: argparse.Namespace, timeout: float):
    """(PostgresSettings, accounts description); CliError for a bad target or accounts."""
    from ..pg.client import Endpoint
    from ..users.postgres import PostgresSettings

    url, lab_defaults = args.target, None
    if url == LAB_TARGET:
        url, lab_defaults = _lab(args.lab_dir)
    try:
        endpoint = Endpoint.from_url(url, timeout)
    except ValueError as exc:
        raise CliError(f"--target: {exc}") from None
    picker, account_source = accounts_from_args(args, lab_defaults)
    return PostgresSettings(endpoint, picker), account_source


def prepare(args: argparse.Namespace, plan, timeout: float, cell_limit: float) -> PreparedRun:
    from ..users.postgres import PostgresUser, preflight

    settings, account_source = settings_from_args(args, timeout)
    if args.keep_failures < 0:
        raise CliError("--keep-failures must be 0 or more")
    if (args.workers is not None and args.workers < 1) or args.expect_workers < 1:
        raise CliError("--workers and --expect-workers must be at least 1")
    url = settings.endpoint.url
    config = {"target": url, "journey": "database-login", "database": settings.describe(), "timeout_s": timeout,
              "accounts": account_source, "keep_failures": args.keep_failures, "processes": args.workers or 1}
    faults, fault_lab = fault_options.apply(args, settings, config)
    on_lab = args.target == LAB_TARGET
    return PreparedRun(plan, settings, config, url, cell_limit, args.keep_failures, load_key(args, url),
                       PostgresUser, one_journey_preflight(preflight, url), faults,
                       lab_run_dir=args.lab_dir if on_lab else fault_lab, sampled=LAB_SAMPLED if on_lab else ())


def run(args: argparse.Namespace, plan, timeout: float, cell_limit: float) -> int:
    """The database half of `authbench run`, after the plan is parsed: one process, or a master with
    --workers N processes (Percona's processes against threads), or a worker of one."""
    import functools

    from .. import headless
    from ..distributed import DistributedError
    from ..sockets import ports_running_low, time_wait_count
    from .run import _durations, _run_master, _run_worker

    prepared = prepare(args, plan, timeout, cell_limit)
    settings, user = prepared.settings, prepared.user_class
    worker_wait, connect_wait, master_timeout = _durations(args, "worker_wait", "connect_timeout", "master_timeout")
    if args.worker:
        return _run_worker(args, settings, connect_wait, master_timeout, user)
    port = settings.endpoint.port
    with ExitStack() as held:
        run_dir = claim_lock_and_check(args, prepared, held)
        say(f"target {prepared.target}: login ok; plan {args.pattern}, warm-up {plan.warmup:g} s, "
            f"{plan.repeat} repetition(s)")
        with prepared.cell_listeners(run_dir, say) as (listen, listened):
            execute = functools.partial(prepared.execute, run_dir, say=say, resume=args.resume, listen=listen,
                                        cell_extras=lambda: {"time_wait_after": time_wait_count(port), **listened()})
            try:
                report = _run_master(args, execute, user, settings, worker_wait) if args.master or args.workers \
                    else execute()
            except DistributedError as exc:
                raise CliError(str(exc), getattr(exc, "exit_code", 2)) from None
    headless.print_report(report, say)
    waiting = time_wait_count(port)
    say(f"sockets in TIME_WAIT towards port {port} after the run: {waiting}")
    warning = ports_running_low(waiting)
    if warning:
        say(warning)
    return 0 if report.complete and not report.degraded else EXIT_FAILURE
