"""What the web UI shows of a running plan, kept up to date from authbench's events (events.py).

Built only on `environment.authbench.events`, never on the users' own state, so it sees the same in a
distributed run (where the master fires the events for every worker's journeys) as in a local one.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from ..cluster.faults.table import shown
from ..events import RunEvents
from ..journeys.returning import LOST, REUSED
from ..openmodel.rates import LevelPlan
from ..patterns import Pattern, Plan
from ..results.failures import Evidence, example_name
from ..results.sample import MEASURED, OK, WARMUP, Sample
from ..results.summary import Summary, average, summarize
from ..results.table import run_label
from ..results.timeline import LEVEL, MAX_POINTS, Timeline, fault_mark
from .live_open import OpenView

ETA_AFTER = 0.05  # share of the measured journeys done from which time left is extrapolated from the run itself
RUNNING_SUMMARY_EVERY_S = 1.0  # the running cell's row is recomputed at most this often (it reads all its samples)
PER_USER_ROWS = 100  # users listed with their counts; a 10,000-user pattern would make every poll heavy
IDLE, STARTING, RUNNING, DONE, STOPPED, FAILED = "idle", "starting", "running", "done", "stopped", "failed"


class LiveRun:
    """The state of the current (or last) run, as plain JSON-ready data; listeners added by `attach`."""

    def __init__(self) -> None:
        self._context: Any = None
        self._clear()

    def _clear(self) -> None:
        self.state = IDLE
        self.message = ""
        self.run_id = ""
        self.target = ""
        self.plan: Plan | None = None
        self.started: float | None = None
        self.finished: float | None = None
        self._reset_cell(None, 0, "")
        self.cells: list[dict[str, Any]] = []  # finished cells: label, pattern, repetition, complete, summary
        self.stopped_cell: dict[str, Any] | None = None  # the cell a person stopped, left out of every average
        self._summaries: dict[str, list[Summary]] = {}
        self.done = {WARMUP: 0, MEASURED: 0}
        self.reasons: dict[str, Counter[str]] = {WARMUP: Counter(), MEASURED: Counter()}
        self.examples: dict[str, str] = {}  # reason → its first example's file under the run's failures/
        self.timeline = Timeline()  # the whole run, per second (wider buckets past MAX_POINTS), for the chart
        self.marks: list[dict[str, Any]] = []  # cell and level starts, measured phases, cell ends, faults
        self.sessions: Counter[str] = Counter()  # returning users' measured journeys: reused, lost, failed (Test 4)
        self.verdicts: dict[str, Any] | None = None  # the panel as summary.json last had it (results.verdicts)
        self.open: OpenView | None = None  # an arrival-rate plan's levels, capacity steps and progress
        self.links: dict[str, str] | None = None  # once the run ended: its report and folder
        self._level_measured = 0  # measured journeys of an arrival-rate plan's levels (not its search steps)

    def attach(self, events: RunEvents, context: Any = None) -> None:
        """Follow the runs of `events`; `context` (the RunContext) also gives the running level's live figures."""
        self._context = context
        events.sample.add_listener(self.on_sample)
        events.cell_start.add_listener(self.on_cell_start)
        events.measuring.add_listener(self.on_measuring)
        events.cell_stop.add_listener(self.on_cell_stop)
        events.failure.add_listener(self.on_failure)
        events.fault.add_listener(self.on_fault)
        events.verdicts.add_listener(self.on_verdicts)

    def begin(self, run_id: str, target: str, plan: Plan) -> None:
        """A new run: forget the previous one."""
        self._clear()
        self.state, self.run_id, self.target, self.plan, self.started = RUNNING, run_id, target, plan, time.time()
        self.open = OpenView(plan) if isinstance(plan, LevelPlan) else None

    def end(self, state: str, message: str = "", capacity: dict[str, Any] | None = None,
            links: dict[str, str] | None = None) -> None:
        """The run is over; `capacity` is the search's record (the answer), `links` its report and folder."""
        if self.open is not None and capacity:
            self.open.found = capacity
        self.links = links
        if state == STOPPED and self.pattern is not None and self.phase:  # the cell a person cut: shown, not counted
            self.stopped_cell = {"label": run_label(self.pattern.label, self.repetition), "pattern": self.pattern.label,
                                 "repetition": self.repetition, "kind": "stopped",
                                 "summary": summarize(self.cell_samples).to_dict() if self.cell_samples else None}
        self.state, self.message, self.finished = state, message, time.time()
        self.phase = ""

    # -- listeners ---------------------------------------------------------------------------------

    def _reset_cell(self, pattern: Pattern | None, repetition: int, phase: str) -> None:
        self.pattern, self.repetition, self.phase = pattern, repetition, phase
        self.cell_samples: list[Sample] = []  # measured only: the running cell's Grinder row
        self._running_summary: tuple[float, int, dict[str, Any] | None] = (0.0, 0, None)  # when, of how many, what
        self.per_user: dict[int, Counter[str]] = {}
        self.warmup_ends = 0.0

    def on_cell_start(self, pattern: Pattern, repetition: int, warmup_s: float, **_: Any) -> None:
        self._reset_cell(pattern, repetition, WARMUP if warmup_s > 0 else MEASURED)
        self.warmup_ends = time.time() + warmup_s
        self._mark(LEVEL if getattr(pattern, "rate", None) is not None else "start", pattern, repetition)
        if self.open is not None:
            self.open.on_cell_start(pattern, repetition, time.time())
        if warmup_s <= 0:
            self._mark("measured", pattern, repetition)

    def on_measuring(self, pattern: Pattern, repetition: int, **_: Any) -> None:
        self.phase = MEASURED
        self._mark("measured", pattern, repetition)

    def _mark(self, what: str, pattern: Pattern, repetition: int) -> None:
        self.marks.append({"t": time.time(), "what": what, "label": run_label(pattern.label, repetition)})
        del self.marks[:-3 * MAX_POINTS]  # bounded like the timeline

    def on_fault(self, record: dict[str, Any], **_: Any) -> None:
        """A fault of the plan was acted on: a mark on the chart where it began (its outcome in the label)."""
        self.marks.append(fault_mark(record, lambda fault: shown(fault, "")))  # a command's arguments hidden
        del self.marks[:-3 * MAX_POINTS]

    def on_sample(self, sample: Sample, **_: Any) -> None:
        self.done[sample.phase] = self.done.get(sample.phase, 0) + 1
        self.per_user.setdefault(sample.user, Counter())[sample.phase] += 1
        if sample.outcome != OK:
            self.reasons.setdefault(sample.phase, Counter())[sample.reason or "unknown"] += 1
        if sample.phase == MEASURED:
            self.cell_samples.append(sample)
            if self.open is not None and self.pattern is not None and not self.open.is_step(self.pattern):
                self._level_measured += 1
            if sample.session in (REUSED, LOST):  # a returning user: did it keep its SSO session?
                self.sessions["failed" if sample.outcome != OK else sample.session] += 1
        self.timeline.add(sample)

    def on_failure(self, evidence: Evidence, **_: Any) -> None:
        self.examples.setdefault(evidence.reason, example_name(evidence.reason, 1))

    def on_cell_stop(self, cell: Any, **_: Any) -> None:
        summary = summarize(cell.samples)
        label = run_label(cell.pattern.label, cell.repetition)
        self.cells.append({"label": label, "pattern": cell.pattern.label, "repetition": cell.repetition,
                           "complete": cell.complete, "summary": summary.to_dict(),
                           "open": getattr(cell, "open", None)})  # an arrival-rate level's rates and starts
        self._summaries.setdefault(cell.pattern.label, []).append(summary)
        if self.open is not None:
            self.open.on_cell_stop(cell)
        self.cell_samples = []
        self.phase = ""  # between cells: nothing is running until the next cell_start
        self._mark("end", cell.pattern, cell.repetition)

    def on_verdicts(self, verdicts: dict[str, Any], **_: Any) -> None:
        self.verdicts = verdicts

    # -- the JSON the page polls -------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        plan = self.plan
        planned = sum(p.tests for p, _ in plan.cells()) if plan else 0
        view = self.open
        measured = self._level_measured if view is not None else self.done[MEASURED]  # of the planned journeys
        rows = [{**cell, "kind": "cell"} for cell in self.cells]
        for pattern, summaries in self._summaries.items():
            if len(summaries) > 1:
                rows.append({"label": f"{pattern} average", "pattern": pattern, "kind": "average",
                             "summary": average(summaries).to_dict()})
        if self.stopped_cell:
            rows.append(self.stopped_cell)
        running = None
        if self.pattern is not None and self.phase:
            running = {"label": run_label(self.pattern.label, self.repetition), "pattern": self.pattern.label,
                       "repetition": self.repetition, "kind": "running", "summary": self._running_row()}
        return {
            "state": self.state, "message": self.message, "run_id": self.run_id, "target": self.target,
            "started": self.started, "finished": self.finished,
            "plan": None if plan is None else {"patterns": [p.label for p in plan.patterns], "warmup_s": plan.warmup,
                                               "repeat": plan.repeat,
                                               "cells": len(plan.cells()) + (view.bound if view else 0)},
            "current": None if self.pattern is None else {  # after the run: the last cell, phase ""
                "pattern": self.pattern.label, "repetition": self.repetition, "phase": self.phase,
                "cell": min(len(self.cells) + (1 if self.phase else 0), len(plan.cells()) + (view.bound if view else 0))
                if plan else 0, "users": getattr(self.pattern, "users", None),
                "runs": getattr(self.pattern, "runs", None),  # a level has neither: arrivals, not users × runs
                "per_user": [{"user": user, "warmup": counts[WARMUP], "measured": counts[MEASURED]}
                             for user, counts in sorted(self.per_user.items())[:PER_USER_ROWS]],
            },
            "journeys": {"measured": measured, "warmup": self.done[WARMUP], "planned": planned,
                         "all_measured": self.done[MEASURED]},
            "time": self._time(planned, measured),
            "rows": rows, "running": running, "level": self._level_live(), "verdicts": self.verdicts,
            "sessions": dict(self.sessions),
            "reasons": [{"reason": reason, "measured": self.reasons[MEASURED][reason],
                         "warmup": self.reasons[WARMUP][reason], "example": self.examples.get(reason)}
                        for reason in sorted(set(self.reasons[MEASURED]) | set(self.reasons[WARMUP]))],
            "marks": self.marks,
            "open": None if view is None else view.snapshot(getattr(self._context, "level", None),
                                                            self.phase == MEASURED, time.time(),
                                                            self.state == RUNNING),
            "links": self.links,
        }

    def timeline_view(self) -> dict[str, Any]:
        """The chart's data (api/timeline, apart from the state: up to MAX_POINTS buckets per poll)."""
        return {"run_id": self.run_id, "series": self.timeline.series(), "marks": self.marks}

    def _level_live(self) -> dict[str, Any] | None:
        """The arrival-rate level running, as it goes: target and achieved rate, late and dropped starts, and
        p99 from the intended start beside p99 of service time (a run on workers has them when they report)."""
        outcome = getattr(self._context, "level", None)
        if outcome is None or outcome.finished or self.phase != MEASURED or self.state != RUNNING:
            return None
        return {"label": outcome.level.label, "target_rate": outcome.level.rate,
                "achieved_rate": round(outcome.live_rate(time.time()), 3), "started": outcome.started,
                "late": outcome.late, "dropped": outcome.dropped, "in_flight_peak": outcome.peak_in_flight,
                "response_p99_ms": outcome.response.percentile(99.0),
                "service_p99_ms": outcome.service.percentile(99.0)}

    def _time(self, planned: int, measured: int) -> dict[str, float | None]:
        """Elapsed, an estimate of what is left (the dry-run estimator at first, then the run's own pace; for an
        arrival-rate plan, its levels' and search steps' lengths against the clock), and the warm-up's countdown."""
        from ..cluster.campaign import estimate_plan_s

        if self.started is None or self.plan is None:
            return {"elapsed_s": None, "left_s": None, "warmup_left_s": None}
        now = self.finished if self.state != RUNNING and self.finished else time.time()
        elapsed = now - self.started
        share = min(1.0, measured / planned) if planned else 0.0
        if self.state != RUNNING:
            left = 0.0
        elif self.open is not None:
            left = self.open.progress(now, True)["left_s"]
        elif share >= ETA_AFTER:
            left = elapsed * (1 - share) / share
        else:
            left = max(0.0, estimate_plan_s(self.plan) - elapsed)
        warmup_left = max(0.0, self.warmup_ends - now) if self.phase == WARMUP else None
        return {"elapsed_s": round(elapsed, 1), "left_s": round(left, 1), "warmup_left_s": warmup_left}

    def _running_row(self) -> dict[str, Any] | None:
        when, count, row = self._running_summary
        now = time.monotonic()
        if count != len(self.cell_samples) and now - when >= RUNNING_SUMMARY_EVERY_S:
            row = summarize(self.cell_samples).to_dict() if self.cell_samples else None
            self._running_summary = (now, len(self.cell_samples), row)
        return row
