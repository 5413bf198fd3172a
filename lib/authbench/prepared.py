"""A run checked and ready, whatever its kind: the typed data the run path (run.py) takes.

The edge (the CLI, a plan file, the web form, the chart's pods) builds it once with `prepare`; nothing
below sees an argparse namespace. `prepare` also refuses, in one line, what the kind cannot do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import AuthbenchError
from .patterns import DEFAULT_CELL_TIME_LIMIT
from .results.failures import DEFAULT_KEEP

if TYPE_CHECKING:
    from .cluster.faults.plan import Fault
    from .kinds.base import CommonOptions, Journey, Kind
    from .kinds.mixed import MixEntry
    from .openmodel.rates import LevelPlan
    from .patterns import Plan

NEW, RESUME, OVERWRITE = "new", "resume", "overwrite"  # what to do with an existing run folder
TARGET_NAME = "target_name"  # summary.json config key: the target as the user named it (the report's label)


@dataclass(frozen=True)
class Local:
    """The whole plan in this process."""


@dataclass(frozen=True)
class Workers:
    """A master with `count` worker processes on this machine; `journey_argv` are the journey's options as
    given (never a password: that stays in the environment), for the workers' own `authbench run --worker`."""

    count: int
    journey_argv: tuple[str, ...] = ()
    master_timeout: float = 10.0
    wait: float = 60.0
    bind_port: int | None = None  # the master's port on loopback (None: any free one)


@dataclass(frozen=True)
class Master:
    """A master waiting for `expect` workers from other machines (the chart's master pod)."""

    expect: int = 1
    bind_host: str = "*"
    bind_port: int = 5557
    wait: float = 60.0


@dataclass(frozen=True)
class Worker:
    """A worker of the master at host:port (the chart's worker pods): no results of its own."""

    master_host: str = "127.0.0.1"
    master_port: int = 5557
    connect_wait: float = 30.0
    master_timeout: float = 10.0


Role = Local | Workers | Master | Worker


@dataclass(frozen=True)
class RunSettings:
    """How to run and keep a run, whatever its journey."""

    results: str = "results"
    run_id: str | None = None
    existing: str = NEW  # NEW, RESUME or OVERWRITE an existing --run-id folder
    force: bool = False  # load the target even while another authbench process loads it
    cell_time_limit: float = DEFAULT_CELL_TIME_LIMIT
    keep_failures: int = DEFAULT_KEEP
    max_error_pct: float | None = None  # exit 3 above it
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    role: Role = field(default_factory=Local)


@dataclass
class PreparedRun:
    """A kind's checked journey with its plan, its fault plan and how to run it."""

    kind: Kind
    journey: Journey
    plan: Plan | LevelPlan
    settings: RunSettings
    faults: list[Fault] = field(default_factory=list)
    pace: float = 0.0
    name: str = ""  # the target as the user named it (lab:memcached, compare's NAME); "" for a plain URL

    @property
    def target(self) -> str:
        return self.journey.target

    @property
    def config(self) -> dict[str, Any]:
        """summary.json's `config`: the journey's record and how it ran (no secrets)."""
        role = self.settings.role
        named = {TARGET_NAME: self.name} if self.name else {}  # the report names the run by it, not by the URL
        return {**self.journey.record, **named, "keep_failures": self.settings.keep_failures, "pace_s": self.pace,
                "faults": [fault.describe() for fault in self.faults],
                "max_error_pct": self.settings.max_error_pct,
                "processes": role.count if isinstance(role, Workers) else 1}

    @contextmanager
    def cell_listeners(self, run_dir: Path,
                       say: Callable[[str], None]) -> Iterator[tuple[Any, Callable[[], dict[str, Any]]]]:
        """(listen, extras) for headless.execute: the fault plan played in the measured phase and what it did
        (docs/failover.md), the CPU and memory of the lab servers the journey samples, and the lab's components
        watched (one that goes down outside the fault plan marks the cells degraded). All stop when the block
        ends."""
        from .cluster.faults.execute import FaultSchedule
        from .cluster.health import watching

        journey = self.journey
        with _lab_sampler(journey, run_dir) as sampler, watching(journey.lab_dir, journey.backend, self.faults,
                                                                  say) as watcher:
            schedule = FaultSchedule(self.faults, self.journey.lab_dir or None, say) if self.faults else None
            parts = [part for part in (sampler, watcher, schedule) if part is not None]

            def listen(context: Any) -> None:
                for part in parts:
                    part.listen(context)

            def extras() -> dict[str, Any]:
                return {**({"resources": sampler.cell_summary()} if sampler else {}),
                        **(schedule.finish() if schedule else {})}

            try:
                yield listen, extras
            finally:
                if schedule:
                    schedule.close()


@contextmanager
def _lab_sampler(journey: Journey, run_dir: Path) -> Iterator[Any]:
    """The resource sampler of a lab journey's servers (its cluster's, or the `sampled` ones), started; None for a
    target outside the lab."""
    from . import embedded_lab
    from .cluster.resources import GENERATOR, RESOURCES_FILE, ResourceSampler, lab_components, lab_pids, lab_repoint
    from .results.writes import ResultsWriteError, WriteFailure

    if not (journey.sampled or journey.backend) or not journey.lab_dir:
        yield None
        return
    state = embedded_lab.state(journey.lab_dir) or {}
    if journey.backend:  # a cluster of the lab: its nodes, balancer and stores, and the shared servers
        components = lab_components(state, journey.backend)
    else:  # the lab's servers outside its clusters that the journey uses, and the generator
        shared = lab_components(state, "")
        components = {name: pid for name, pid in shared.items() if name in (*journey.sampled, GENERATOR)}
    try:
        repoint = lab_repoint(journey.lab_dir, journey.backend) if journey.backend else None
        sampler = ResourceSampler(components, run_dir / RESOURCES_FILE, not_generator=lab_pids(state),
                                  repoint=repoint).start()
    except OSError as exc:
        raise ResultsWriteError(WriteFailure(run_dir / RESOURCES_FILE, exc).describe() + "; nothing was measured"
                                ) from None
    try:
        yield sampler
    finally:
        sampler.stop()


def prepare(kind: Kind, common: CommonOptions, options: Any, plan: Plan | LevelPlan, settings: RunSettings,
            fault_texts: Sequence[str] = (), open_model: bool = False, name: str = "",
            mix: Sequence[MixEntry] = ()) -> PreparedRun:
    """Check what the kind can do, prepare its journey and resolve the fault plan; AuthbenchError (exit 2).

    `name` is the target's name when the user gave one apart from its URL (compare's --target NAME=URL); a
    target given as a name (lab:memcached) is its own name. `mix` runs those journeys side by side instead
    (kinds.mixed; `kind`, `common` and `options` are then the first one's)."""
    role = settings.role
    for each in {entry.kind.name: entry.kind for entry in mix}.values() or (kind,):
        if not each.can.distributed and not isinstance(role, Local):
            raise each.refuse("run distributed (--workers, --master, --worker)", each.can.why_not_distributed)
        if open_model and not each.can.open_model:
            raise each.refuse("run arrival rates (--rate, --levels, capacity)")
    if settings.keep_failures < 0:
        raise AuthbenchError("--keep-failures must be 0 or more")
    if settings.max_error_pct is not None and not 0 <= settings.max_error_pct <= 100:
        raise AuthbenchError(f"--max-error-pct must be between 0 and 100, got {settings.max_error_pct:g}")
    if isinstance(role, Workers) and role.count < 1 or isinstance(role, Master) and role.expect < 1:
        raise AuthbenchError("--workers and --expect-workers must be at least 1")
    if settings.metrics_port is not None and not isinstance(role, Worker):
        _check_free(settings.metrics_host, settings.metrics_port)  # now, not after the preflight
    from .cluster.faults.plan import check_reach

    if mix and not open_model and not isinstance(role, Worker):  # a worker runs its master's plan, not its own
        from .mix import Part, check_patterns

        check_patterns([Part(entry.name, entry.weight) for entry in mix], getattr(plan, "patterns", ()))
    if mix:
        from .kinds import mixed

        journey = mixed.prepare(list(mix))
    else:
        journey = kind.prepare(common, options)
    faults = resolve_faults(fault_texts, journey.lab_dir or common.lab_dir, journey.backend)
    check_reach(faults, plan)
    if faults and not journey.lab_dir:
        journey.lab_dir = common.lab_dir  # where the plan's stop/start act
    named = name or (common.target if "://" not in common.target else "")
    return PreparedRun(kind, journey, plan, settings, faults, common.pace, named)


def resolve_faults(texts: Sequence[str], lab_dir: str, backend: str | None) -> list[Fault]:
    """The --fault plan, lab components resolved against the running lab; AuthbenchError when it cannot run."""
    from . import embedded_lab
    from .cluster.faults.plan import needs_lab, parse_faults, resolve_components

    plan = parse_faults(list(texts))
    if needs_lab(plan):
        state = embedded_lab.state(lab_dir)
        if state is None:
            raise AuthbenchError(f"--fault stop/start act on the embedded lab, and no lab is in {lab_dir}; "
                                 "start it with 'authbench lab up', or give run=COMMAND for another cluster")
        plan = resolve_components(plan, state["components"], backend)
    return plan


def _check_free(host: str, port: int) -> None:
    import socket

    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        raise AuthbenchError(f"cannot serve /metrics on {host}:{port}: {exc.strerror or exc}; give another "
                             "--metrics-port") from None
