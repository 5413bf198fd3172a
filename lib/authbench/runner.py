"""Turns a Plan into Locust runs: for each pattern × repetition, warm-up then the exact measured phase.

Locust does the concurrency (users as greenlets, its statistics); the phase controller
decides what each journey counts as; progress goes out through authbench's events (events.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from locust.env import Environment
from locust.runners import MasterRunner

from .distributed import master
from .mix import split_classes
from .patterns import Pattern, Plan
from .phases import PhaseController
from .results.sample import Sample
from .user import JourneyUser, RunContext

SPAWN_RATE = 100.0  # users per second: a pattern's users start within a fraction of a second (Locust warns above 100)
STOP_TIMEOUT = 15.0  # seconds a running journey may take to finish when a cell is cut short
log = logging.getLogger(__name__)


@dataclass
class CellResult:
    pattern: Pattern
    repetition: int
    samples: list[Sample]  # measured only
    complete: bool  # False: the time limit cut the cell short
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)  # Locust's per-step statistics
    # distributed: {workers_lost, users_lost, journeys_lost}; a lab run: {components_down: [names]} too
    degraded: dict[str, Any] | None = None


def _step_stats(environment: Environment) -> dict[str, dict[str, Any]]:
    steps = {}
    for (name, method), entry in sorted(environment.stats.entries.items()):
        steps[name] = {
            "method": method, "requests": entry.num_requests, "failures": entry.num_failures,
            "mean_ms": round(entry.avg_response_time, 3), "median_ms": entry.median_response_time,
            "p95_ms": entry.get_response_time_percentile(0.95), "max_ms": round(entry.max_response_time or 0, 3),
        }
    return steps


def cluster_marked(context: RunContext, degraded: dict[str, Any] | None) -> dict[str, Any] | None:
    """A cell's `degraded`, with what the cluster under test lost during it (`RunContext.cluster_marks`)."""
    marks = context.cluster_marks() if context.cluster_marks is not None else {}
    return {**(degraded or {}), **marks} or None


def create_environment(user_class: type[JourneyUser] | Sequence[type[JourneyUser]], settings: Any,
                       host: str | None = None) -> Environment:
    """A Locust environment for authbench's journeys, its RunContext attached; the caller adds the runner. A --mix
    gives one user class per journey (kinds.mixed)."""
    classes = list(user_class) if isinstance(user_class, Sequence) else [user_class]
    environment = Environment(user_classes=classes, host=host, stop_timeout=STOP_TIMEOUT)
    environment.authbench = RunContext(settings=settings)
    return environment


def run_plan(environment: Environment, plan: Plan, *, cell_time_limit: float) -> list[CellResult]:
    """Run every cell of the plan on the environment's runner; each cell is bounded by `cell_time_limit`.

    The runner is a local one or a Locust master (its workers connected and welcomed, see
    `distributed.master.create_master`). Progress goes out through `environment.authbench.events`
    (samples, cell start/measuring/stop) — on a master for every worker's journeys.
    """
    context: RunContext = environment.authbench
    events = context.events
    distributed = isinstance(environment.runner, MasterRunner)
    results = []
    for pattern, repetition in plan.cells():

        def measuring(pattern: Pattern = pattern, repetition: int = repetition) -> None:
            if not distributed:  # workers leave the warm-up out of what they report
                environment.stats.reset_all()
            events.measuring.fire(pattern=pattern, repetition=repetition)

        environment.stats.reset_all()
        events.cell_start.fire(pattern=pattern, repetition=repetition, warmup_s=plan.warmup)
        began = time.monotonic()
        if distributed:
            outcome = master.coordinator_of(environment).run_cell(pattern, repetition, plan.warmup,
                                                                  cell_time_limit, measuring)
            samples, complete, degraded = outcome.measured, outcome.complete, outcome.degraded
        else:
            samples, complete = _run_cell_locally(environment, pattern, repetition, plan.warmup, cell_time_limit,
                                                  measuring)
            degraded = None
        if not complete:
            log.warning("%s #%d cut short after %.0f s", pattern.label, repetition, time.monotonic() - began)
        result = CellResult(pattern, repetition, samples, complete, _step_stats(environment),
                            cluster_marked(context, degraded))
        results.append(result)
        events.cell_stop.fire(cell=result)
    return results


def _run_cell_locally(environment: Environment, pattern: Pattern, repetition: int, warmup: float,
                      time_limit: float, measuring: Callable[[], None]) -> tuple[list[Sample], bool]:
    split = split_classes(environment.user_classes, pattern.users)  # a --mix: exactly its users per journey
    controller = PhaseController(pattern, repetition, warmup, on_measured=measuring, split=split)
    environment.authbench.controller = controller
    environment.runner.start(pattern.users, spawn_rate=SPAWN_RATE)
    complete = controller.done.wait(timeout=warmup + time_limit)
    environment.runner.stop()
    return controller.measured_samples(), bool(complete)


def run_plan_locally(plan: Plan, user_class: type[JourneyUser], settings: Any, *, cell_time_limit: float,
                     listen: Callable[[RunContext], None] | None = None) -> list[CellResult]:
    """The whole plan in this process: a local runner, started and shut down here."""
    environment = create_environment(user_class, settings)
    if listen is not None:
        listen(environment.authbench)
    runner = environment.create_local_runner()
    try:
        return run_plan(environment, plan, cell_time_limit=cell_time_limit)
    finally:
        runner.quit()
