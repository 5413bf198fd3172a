"""Runs a LevelPlan on a Locust environment: each level × repetition a cell, then the capacity search.

Cells fire the same events as patterns (cell_start, measuring, sample, cell_stop), so the recorder,
summaries, /metrics and the web UI's live view take them unchanged; an `OpenCellResult` adds what
only an open model knows (target and achieved rate, late and dropped starts, service time).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from locust.env import Environment
from locust.runners import MasterRunner

from ..patterns import Plan
from ..results.sample import OK
from ..results.table import COMPONENTS_DOWN
from ..runner import CellResult, _step_stats, cluster_marked, run_plan
from ..user import RunContext
from . import capacity
from .cooldown import cool_down, idle_latency
from .distributed import run_on_workers
from .driver import Latencies, LevelDriver, LevelOutcome
from .rates import SLO, Level, LevelPlan, format_rate, slo_check_text

SUSTAINED_SHARE = 0.98  # a level below this share of its scheduled rate is not sustained
CAPACITY_PREFIX = "max"


@dataclass
class OpenCellResult(CellResult):
    open: dict[str, Any] = field(default_factory=dict)

    @property
    def sustained(self) -> bool:
        return bool(self.open.get("sustained", True))


def slo_checks(slo: SLO | None, outcome: LevelOutcome | JourneyFigures) -> list[dict[str, Any]]:
    """Each SLO term with the figure that decided it (latencies from the intended start): term, value (None when
    no journey succeeded), unit, met. The verdict panel shows the figure beside ✓ or ✗."""
    if slo is None:
        return []
    checks = []
    tests = outcome.ok + outcome.errors
    for term in slo.terms:
        if term.metric == "errors":
            value: float | None = 100.0 * outcome.errors / tests if tests else 100.0
            unit = "%"
        else:
            response = outcome.response
            value = (response.total_ms / response.count if response.count else None) if term.metric == "mean" \
                else response.percentile(term.percentile or 100.0)
            unit = "ms"
        checks.append({"term": term.describe(), "metric": term.metric, "limit": term.limit, "unit": unit,
                       "value": None if value is None else round(value, 3),
                       "met": value is not None and value < term.limit})
    return checks


def slo_failures(checks: list[dict[str, Any]]) -> list[str]:
    """The SLO terms a level broke, as words (empty when it met them all)."""
    return [slo_check_text(check) for check in checks if not check["met"]]


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
        checks = slo_checks(slo, outcome)
        failures = slo_failures(checks)
        record.update(slo=slo.describe(), slo_met=not failures, slo_failures=failures, slo_checks=checks)
        mixed = list(dict.fromkeys(sample.journey for sample in outcome.samples if sample.journey))
        if mixed:  # a --mix: the SLO of each journey too, from its own samples (results.verdicts judges them)
            record["journey_slo_checks"] = {name: slo_checks(slo, JourneyFigures.of(outcome, name))
                                            for name in mixed}
    return record


@dataclass
class JourneyFigures:
    """What slo_checks reads of a level, for one journey of a --mix: its successes, errors and response times (from
    the intended start, as the level's)."""

    ok: int = 0
    errors: int = 0
    response: Latencies = field(default_factory=Latencies)

    @classmethod
    def of(cls, outcome: LevelOutcome, journey: str) -> JourneyFigures:
        figures = cls()
        for sample in outcome.samples:
            if sample.journey != journey:
                continue
            if sample.outcome == OK:
                figures.ok += 1
                figures.response.add(sample.duration_ms)
            else:
                figures.errors += 1
        return figures


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
    result = OpenCellResult(level, repetition, outcome.samples, complete, _step_stats(environment),
                            cluster_marked(context, degraded), open=describe(outcome, plan.slo))
    events.cell_stop.fire(cell=result)
    return result


def passes(cell: OpenCellResult) -> bool:
    """A capacity step passes when it was sustained (no drops, rate held), met the SLO, and lost no worker."""
    return cell.sustained and bool(cell.open.get("slo_met", True)) and cell.complete and not cell.degraded


def judged(cell: OpenCellResult) -> bool | None:
    """Whether a capacity step passed; None when the cluster under test was not whole (a lab component was down):
    such a step says nothing about the cluster's capacity, and the search ends unconfirmed."""
    if (cell.degraded or {}).get(COMPONENTS_DOWN):
        return None
    return passes(cell)


def run_search(environment: Environment, plan: LevelPlan, cell_time_limit: float,
               searched: dict[str, Any] | None = None,
               progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """The capacity search; `searched` is an interrupted search's record (summary.json's `capacity`, `searching`
    true): its steps are replayed, not measured again. `progress` gets the record after every step measured."""
    knobs = plan.search
    assert knobs is not None
    before = searched or {}
    done = [capacity.Step(**step) for step in before.get("steps") or []]
    labels: list[str] = list(before.get("step_labels") or [])[:len(done)]
    cooldowns: list[dict[str, Any] | None] = list(before.get("step_cooldowns") or [])[:len(done)]  # before each step
    last: dict[str, Any] = {"passed": done[-1].passed if done else True, "down": []}
    began = time.monotonic() - (before.get("search_s") or 0.0)
    probe = environment.user_classes[0](environment)  # one user outside any cell: journeys sent one at a time
    probe.on_start()
    idle_ms = idle_latency(probe.journey)

    def measure(rate: float, stage: str) -> bool | None:
        cooled = None
        if not last["passed"] and idle_ms is not None:  # the failed step's backlog drains first
            cooled = cool_down(probe.journey, idle_ms).to_dict()
        cooldowns.append(cooled)
        level = Level(f"{CAPACITY_PREFIX}-{len(labels) + 1}-{stage}@{format_rate(rate)}", rate, knobs.hold,
                      knobs.warmup)
        labels.append(level.label)
        cell = run_level(environment, level, 1, plan, cell_time_limit)
        verdict = judged(cell)
        last.update(passed=bool(verdict), down=(cell.degraded or {}).get(COMPONENTS_DOWN) or [])
        return verdict

    def record(result: capacity.CapacityResult, searching: bool) -> dict[str, Any]:
        out = result.to_dict()
        out.update(slo=plan.slo.describe() if plan.slo else None, hold_s=knobs.hold, warmup_s=knobs.warmup,
                   growth=knobs.growth, precision=knobs.precision, max_rate=knobs.max_rate,
                   step_labels=list(labels), idle_ms=idle_ms, step_cooldowns=list(cooldowns), searching=searching,
                   search_s=time.monotonic() - began)
        if result.stopped:
            out[COMPONENTS_DOWN] = last["down"]
        return out

    try:
        result = capacity.search(measure, knobs, done,
                                 on_step=lambda partial: progress(record(partial, True)) if progress else None)
    finally:
        probe.on_stop()
    return record(result, False)


def run_any(environment: Environment, plan: Plan | LevelPlan, *, cell_time_limit: float,
            searched: dict[str, Any] | None = None,
            progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run a pattern plan or a level plan; returns what belongs at the top of summary.json (the capacity).

    `progress` gets that as it grows (after every capacity step), so an interrupted search keeps its steps;
    `searched` is the `capacity` an interrupted run left, continued here (a finished one is returned as it is)."""
    if not isinstance(plan, LevelPlan):
        run_plan(environment, plan, cell_time_limit=cell_time_limit)
        return {}
    for level, repetition in plan.cells():
        run_level(environment, level, repetition, plan, cell_time_limit)
    if plan.search is None:
        return {}
    if searched and not searched.get("searching"):
        return {"capacity": searched}  # the search ended before: nothing to continue
    found = run_search(environment, plan, cell_time_limit, searched,
                       (lambda partial: progress({"capacity": partial})) if progress else None)
    return {"capacity": found}
