"""`authbench run --target postgresql://…` (or `lab:postgres`): database logins in the same patterns.

`run.py` hands database targets here; patterns, warm-up, repetitions and results are the SAML run's,
only the user class differs. Every journey is a new connection (connect / authenticate / `SELECT 1` /
disconnect), so the TIME_WAIT count towards the server is reported as for LDAP's churn mode.
"""

from __future__ import annotations

import argparse
from contextlib import ExitStack
from pathlib import Path

from . import EXIT_FAILURE, CliError, say
from .guards import claim_lock_and_check
from .options import accounts_from_args, lab_account_defaults, running_lab

PG_SCHEMES = ("postgresql://", "postgres://")
LAB_TARGET = "lab:postgres"


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


def run(args: argparse.Namespace, plan, timeout: float, cell_limit: float) -> int:
    """The database half of `authbench run`, after the plan is parsed: one process, or a master with
    --workers N processes (Percona's processes against threads), or a worker of one."""
    from ..users.postgres import PostgresUser, preflight
    from .run import _durations, _run_worker

    settings, account_source = settings_from_args(args, timeout)
    if args.keep_failures < 0:
        raise CliError("--keep-failures must be 0 or more")
    if (args.workers is not None and args.workers < 1) or args.expect_workers < 1:
        raise CliError("--workers and --expect-workers must be at least 1")
    worker_wait, connect_wait, master_timeout = _durations(args, "worker_wait", "connect_timeout", "master_timeout")
    if args.worker:
        return _run_worker(args, settings, connect_wait, master_timeout, PostgresUser)
    with ExitStack() as held:
        run_dir = claim_lock_and_check(args, plan, settings.endpoint.url, held, lambda: preflight(settings))
        return _load(args, plan, settings, account_source, run_dir, timeout, cell_limit, worker_wait)


def _load(args: argparse.Namespace, plan, settings, account_source: dict, run_dir: Path, timeout: float,
          cell_limit: float, worker_wait: float) -> int:
    import functools

    from .. import headless
    from ..distributed import DistributedError
    from ..sockets import ports_running_low, time_wait_count
    from ..users.postgres import PostgresUser
    from .run import _run_master

    config = {"target": settings.endpoint.url, "journey": "database-login", "database": settings.describe(),
              "timeout_s": timeout, "accounts": account_source, "keep_failures": args.keep_failures,
              "processes": args.workers or 1}
    say(f"target {settings.endpoint.url}: login ok; plan {args.pattern}, warm-up {plan.warmup:g} s, "
        f"{plan.repeat} repetition(s)")
    port = settings.endpoint.port
    execute = functools.partial(headless.execute, plan, PostgresUser, settings, config=config,
                                results_base=run_dir.parent, run_id=run_dir.name, cell_time_limit=cell_limit,
                                say=say, cell_extras=lambda: {"time_wait_after": time_wait_count(port)},
                                keep_failures=args.keep_failures, resume=args.resume)
    try:
        if args.master or args.workers:
            report = _run_master(args, execute, PostgresUser, settings, worker_wait)
        else:
            report = execute()
    except DistributedError as exc:
        raise CliError(str(exc), getattr(exc, "exit_code", 2)) from None
    headless.print_report(report, say)
    waiting = time_wait_count(port)
    say(f"sockets in TIME_WAIT towards port {port} after the run: {waiting}")
    warning = ports_running_low(waiting)
    if warning:
        say(warning)
    return 0 if report.complete and not report.degraded else EXIT_FAILURE
