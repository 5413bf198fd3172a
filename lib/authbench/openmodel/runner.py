"""Runs a LevelPlan on a Locust environment: each level × repetition a cell, then the capacity search.

Cells fire the same events as patterns (cell_start, measuring, sample, cell_stop), so the recorder,
summaries, /metrics and the web UI's live view take them unchanged; an `OpenCellResult` adds what
only an open model knows (target and achieved rate, late and dropped starts, service time).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from locust.env import Environment
from locust.runners import MasterRunner

from ..patterns import Plan
from ..runner import CellResult, _step_stats, run_plan
from ..user import RunContext
from . import capacity
from .cooldown import cool_down, idle_latency
from .distributed import run_on_workers
from .driver import LevelDriver, LevelOutcome
from .rates import SLO, Level, LevelPlan, format_rate

SUSTAINED_SHARE = 0.98  # a level below this share of its scheduled rate is not sustained
CAPACITY_PREFIX = "max"


@dataclass
class OpenCellResult(CellResult):
    open: dict[str, Any] = field(default_factory=dict)

    @property
    def sustained(self) -> bool:
        return bool(self.open.get("sustained", True))


def slo_failures(slo: SLO | None, outcome: LevelOutcome) -> list[str]:
    """The SLO terms a level broke (latencies from the intended start), empty when it met them all."""
    if slo is None:
        return []
    failures = []
    tests = outcome.ok + outcome.errors
    for term in slo.terms:
        if term.metric == "errors":
            share = 100.0 * outcome.errors / tests if tests else 100.0
            if share >= term.limit:
                failures.append(f"errors {share:.2f}% ≥ {term.limit:g}%")
            continue
        response = outcome.response
        value = (response.total_ms / response.count if response.count else None) if term.metric == "mean" \
            else response.percentile(term.percentile or 100.0)
        if value is None:
            failures.append(f"{term.metric}: no successful journey")
        elif value >= term.limit:
            failures.append(f"{term.metric} {value:.1f} ms ≥ {term.limit:g} ms")
    return failures


def describe(outcome: LevelOutcome, slo: SLO | None) -> dict[str, Any]:
    """The open model's figures of one cell, for summary.json and the tables."""
    not_sustained = outcome.not_sustained_because(SUSTAINED_SHARE)
    record: dict[str, Any] = {
        "target_rate": outcome.level.rate, "scheduled_rate": outcome.scheduled_rate,
        "achieved_rate": outcome.achieved_rate, "duration_s": outcome.level.duration,
        "warmup_s": outcome.level.warmup, "arrivals": outcome.arrivals.kind, "seed": outcome.arrivals.seed,
        "max_users": outcome.arrivals.max_users, "queue_for_s": outcome.arrivals.queue_for,
        "late_after_ms": outcome.arrivals.late_after * 1000, "planned": outcome.planned,
        "started": outcome.started, "late": outcome.late, "dropped": outcome.dropped,
        "unfinished": outcome.unfinished, "not_reached": outcome.not_reached,
        "peak_in_flight": outcome.peak_in_flight, "sustained": not not_sustained,
        "not_sustained_because": not_sustained,
        "response_ms": outcome.response.to_dict(), "service_ms": outcome.service.to_dict(),
        "start_lag_ms": outcome.lag.to_dict(),
    }
    if slo is not None:
        failures = slo_failures(slo, outcome)
        record.update(slo=slo.describe(), slo_met=not failures, slo_failures=failures)
    return record


def run_level(environment: Environment, level: Level, repetition: int, plan: LevelPlan,
              cell_time_limit: float) -> OpenCellResult:
    context: RunContext = environment.authbench
    events = context.events
    context.controller = None  # journeys here take no tickets

    def measuring() -> None:
        environment.stats.reset_all()
        events.measuring.fire(pattern=level, repetition=repetition)

    environment.stats.reset_all()
    events.cell_start.fire(pattern=level, repetition=repetition, warmup_s=level.warmup)
    degraded = None
    if isinstance(environment.runner, MasterRunner):  # each worker starts its share of the slots
        outcome, degraded = run_on_workers(environment, level, repetition, plan.arrivals,
                                           level.warmup + cell_time_limit, measuring)
    else:
        driver = LevelDriver(environment, environment.user_classes[0], level, repetition, plan.arrivals,
                             on_measured=measuring, on_sample=lambda sample: events.sample.fire(sample=sample),
                             on_failure=lambda evidence: events.failure.fire(evidence=evidence))
        context.level = driver.outcome
        outcome = driver.run(level.warmup + cell_time_limit)
    complete = not outcome.not_reached and not outcome.unfinished
    result = OpenCellResult(level, repetition, outcome.samples, complete, _step_stats(environment), degraded,
                            open=describe(outcome, plan.slo))
    events.cell_stop.fire(cell=result)
    return result


def passes(cell: OpenCellResult) -> bool:
    """A capacity step passes when it was sustained (no drops, rate held), met the SLO, and lost no worker."""
    return cell.sustained and bool(cell.open.get("slo_met", True)) and cell.complete and not cell.degraded


def run_search(environment: Environment, plan: LevelPlan, cell_time_limit: float) -> dict[str, Any]:
    knobs = plan.search
    assert knobs is not None
    cells: list[OpenCellResult] = []
    cooldowns: list[dict[str, Any] | None] = []  # per step: the cool-down that came before it
    probe = environment.user_classes[0](environment)  # one user outside any cell: journeys sent one at a time
    probe.on_start()
    idle_ms = idle_latency(probe.journey)

    def measure(rate: float, stage: str) -> bool:
        cooled = None
        if cells and not passes(cells[-1]) and idle_ms is not None:  # the failed step's backlog drains first
            cooled = cool_down(probe.journey, idle_ms).to_dict()
        cooldowns.append(cooled)
        level = Level(f"{CAPACITY_PREFIX}-{len(cells) + 1}-{stage}@{format_rate(rate)}", rate, knobs.hold,
                      knobs.warmup)
        cell = run_level(environment, level, 1, plan, cell_time_limit)
        cells.append(cell)
        return passes(cell)

    try:
        result = capacity.search(measure, knobs)
    finally:
        probe.on_stop()
    record = result.to_dict()
    record.update(slo=plan.slo.describe() if plan.slo else None, hold_s=knobs.hold, warmup_s=knobs.warmup,
                  growth=knobs.growth, precision=knobs.precision, max_rate=knobs.max_rate,
                  step_labels=[cell.pattern.label for cell in cells], idle_ms=idle_ms, step_cooldowns=cooldowns)
    return record


def run_any(environment: Environment, plan: Plan | LevelPlan, *, cell_time_limit: float) -> dict[str, Any]:
    """Run a pattern plan or a level plan; returns what belongs at the top of summary.json (the capacity)."""
    if not isinstance(plan, LevelPlan):
        run_plan(environment, plan, cell_time_limit=cell_time_limit)
        return {}
    for level, repetition in plan.cells():
        run_level(environment, level, repetition, plan, cell_time_limit)
    if plan.search is None:
        return {}
    began = time.monotonic()
    found = run_search(environment, plan, cell_time_limit)
    found["search_s"] = time.monotonic() - began
    return {"capacity": found}
