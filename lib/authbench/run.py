"""The run path: the one way a prepared run becomes results, a printed report and a verdict.

    claim the results folder → take the target's lock → preflight (one whole journey) → execute the
    plan locally or as a master with workers → print the report → verdict 0, 1 or 3

`authbench run` and `capacity`, `privacyidea-bench`, the chart's master and worker pods use `execute`;
the web UI's launcher and `compare` use its steps (`claim`, `measure`) on their own environment or
folders. Every kind goes through here alike: what a kind cannot do was refused when it was prepared.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import EXIT_CRITERIA_FAILED, EXIT_FAILURE, EXIT_OK, AuthbenchError
from .prepared import NEW, OVERWRITE, RESUME, Local, Master, PreparedRun, Worker, Workers
from .signals import note

if TYPE_CHECKING:
    from locust.env import Environment

    from .headless import RunReport

RUN_ID_HINT = "; give another --run-id, --resume to continue it or --overwrite to move it aside"
Say = Callable[[str], None]


def execute(prepared: PreparedRun, say: Say = print) -> int:
    """The whole run; its exit status (0, 1 when a cell was cut short or degraded (workers lost, a lab component
    down), 3 when the measured journeys failed more than --max-error-pct or a level missed its --slo).
    AuthbenchError for what stops it before the load."""
    if isinstance(prepared.settings.role, Worker):
        return serve_as_worker(prepared, say)
    with ExitStack() as held:
        run_dir = claim(prepared, held, say, "authbench run")
        report = measure(prepared, run_dir, say)
    from .headless import print_report

    print_report(report, say)
    _after_run(prepared, say)
    if not report.complete or report.degraded:
        return EXIT_FAILURE
    return verdict(report, say)


def claim(prepared: PreparedRun, held: ExitStack, say: Say, what: str) -> Path:
    """Claim the results folder, take the target's lock (--force overrides) and run the preflight, in that
    order: everything refused now, not after the load. `held` keeps both locks to its end; the folder is
    returned with preflight.txt written, or given up again when the preflight failed."""
    from .results.folder import abandon
    from .targets_lock import target_lock

    run_dir, folder_lock = claim_folder(prepared)
    held.callback(folder_lock.release)
    try:
        for key in prepared.journey.load_keys:  # a --mix across targets: each of them
            held.enter_context(target_lock(key, f"{what} (results {run_dir})", force=prepared.settings.force))
        check = prepared.journey.preflight()
        for line in check.lines():
            say(line)
        problem = check.problem()
        if problem is None or check.keep_on_failure:
            problem = check.problem(check.save(run_dir))
        if problem:
            raise AuthbenchError(problem)
    except BaseException:
        abandon(run_dir, folder_lock)
        raise
    plan = prepared.plan
    say(f"plan {plan.describe()}, warm-up {plan.warmup:g} s, {plan.repeat} repetition(s)"
        + (f", pace {prepared.pace:g} s" if prepared.pace else "") + f"; results in {run_dir}")
    for fault in prepared.faults:
        say(f"fault plan: {fault.describe()}")
    return run_dir


def claim_folder(prepared: PreparedRun) -> tuple[Path, Any]:
    """(folder, lock) of --results R --run-id ID [--resume | --overwrite]; AuthbenchError when refused."""
    from .openmodel.report import summary_plan
    from .results.folder import check_name, claim, resume_mismatch

    settings = prepared.settings
    if settings.existing != NEW and not settings.run_id:
        raise AuthbenchError(f"--{settings.existing} needs --run-id: the run folder to {settings.existing}")
    base = Path(settings.results)
    try:
        check_name(base, settings.run_id, what="--run-id", existing=settings.existing, hint=RUN_ID_HINT)
        if settings.existing == RESUME:
            problem = resume_mismatch(base / settings.run_id, summary_plan(prepared.plan), prepared.target)
            if problem:
                raise AuthbenchError(f"--resume: {problem}")
        return claim(base, settings.run_id, what="--run-id", existing=settings.existing, hint=RUN_ID_HINT)
    except AuthbenchError:  # FolderBusy, FolderExists, UnsafeName: one line already
        raise
    except (OSError, ValueError) as exc:
        raise AuthbenchError(f"cannot write results under {settings.results!r}: {exc}") from None


def measure(prepared: PreparedRun, run_dir: Path, say: Say, environment: Environment | None = None,
            listen: Callable[[Any], None] | None = None,
            cell_extras: Callable[[], dict[str, Any]] | None = None) -> RunReport:
    """The plan into a claimed folder: locally, on a caller's `environment` (the web UI's), or as a master
    with its workers. The fault plan and the lab servers' sampling go with every cell; `listen` and
    `cell_extras` add a caller's own (compare's resource sampler)."""
    from .headless import execute as run_cells
    from .sockets import time_wait_count

    settings, journey = prepared.settings, prepared.journey
    with prepared.cell_listeners(run_dir, say) as (own_listen, own_extras):

        def subscribe(context: Any) -> None:
            for part in (own_listen, listen):
                if part is not None:
                    part(context)

        def extras() -> dict[str, Any]:
            churn = {"time_wait_after": time_wait_count(journey.churn_port)} if journey.churn_port else {}
            return {**churn, **own_extras(), **(cell_extras() if cell_extras else {})}

        def cells(**more: Any) -> RunReport:
            return run_cells(prepared.plan, journey.classes, journey.settings, config=prepared.config,
                             results_base=run_dir.parent, run_id=run_dir.name,
                             cell_time_limit=settings.cell_time_limit, keep_failures=settings.keep_failures,
                             say=say, cell_extras=extras, listen=subscribe, resume=settings.existing == RESUME,
                             metrics_port=settings.metrics_port, metrics_host=settings.metrics_host, **more)

        if environment is not None:
            return cells(environment=environment)
        if isinstance(settings.role, Workers | Master):
            return _as_master(prepared, cells, say)
        return cells()


def verdict(report: RunReport, say: Say) -> int:
    """0, or EXIT_CRITERIA_FAILED (said in one line) when the run missed what it was asked to meet: more failed
    journeys than --max-error-pct, or a level's --slo (results.verdicts; the panel printed above says which)."""
    from .results.verdicts import criteria_failed

    failed = criteria_failed(report.verdicts)
    if not failed:
        return EXIT_OK
    say("FAILED: " + "; ".join(check["figure"] if check["check"] == "errors" else f"{check['title']}: {check['figure']}"
                               for check in failed))
    return EXIT_CRITERIA_FAILED


def _after_run(prepared: PreparedRun, say: Say) -> None:
    from .sockets import ports_running_low, time_wait_count

    port = prepared.journey.churn_port
    if port:
        waiting = time_wait_count(port)
        say(f"sockets in TIME_WAIT towards port {port} after the run: {waiting}")
        warning = ports_running_low(waiting)
        if warning:
            say(warning)


def _as_master(prepared: PreparedRun, cells: Callable[..., RunReport], say: Say) -> RunReport:
    """A master (and with Workers its worker processes): wait for the workers, run the plan, reap them."""
    from .distributed import local
    from .distributed.master import create_master
    from .runner import create_environment

    role = prepared.settings.role
    spawned = isinstance(role, Workers)
    bind_host = local.LOOPBACK if spawned else role.bind_host
    port = (role.bind_port or local.free_port()) if spawned else role.bind_port
    environment = create_environment(prepared.journey.classes, prepared.journey.settings)
    coordinator = create_master(environment, bind_host, port)
    processes = []
    try:
        if spawned:
            command = local.worker_command(port, role.journey_argv, ["--master-timeout", f"{role.master_timeout}s"])
            processes = local.spawn(role.count, command)
            say(f"master on {bind_host}:{port}: started {role.count} worker processes")
        else:
            say(f"master on {bind_host}:{port}: waiting for {role.expect} worker(s)")
        coordinator.wait_for_workers(role.count if spawned else role.expect, role.wait)
        return cells(environment=environment)
    finally:
        environment.runner.quit()  # tells the workers to quit now
        local.reap(processes)
        note(sys.exc_info()[1], "workers told to stop" + (f"; {len(processes)} worker process(es) ended"
                                                           if processes else ""))


def serve_as_worker(prepared: PreparedRun, say: Say) -> int:
    """A worker: connect to the master, run the users it assigns until it says stop; no folder of its own."""
    from .distributed import worker
    from .results.failures import FailureBudget
    from .runner import create_environment

    role = prepared.settings.role
    assert isinstance(role, Worker)
    environment = create_environment(prepared.journey.classes, prepared.journey.settings)
    environment.authbench.failures = FailureBudget(prepared.settings.keep_failures)
    agent = worker.connect(environment, role.master_host, role.master_port, connect_wait=role.connect_wait,
                           master_timeout=role.master_timeout)
    say(f"worker of the master at {role.master_host}:{role.master_port}: connected, waiting for patterns")
    return worker.serve(agent, role.master_timeout)


__all__ = ["NEW", "OVERWRITE", "RESUME", "Local", "Master", "Worker", "Workers", "claim", "execute", "measure",
           "verdict"]
