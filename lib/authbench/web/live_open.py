"""The live page's view of an arrival-rate plan: its levels, its capacity search, its progress.

A level plan has no users × runs to count: its length is known from the plan (each level's warm-up and
duration) and a capacity search's from its knobs (at most `capacity.step_bound` steps of warm-up + hold).
So progress and time left come from the clock against that plan, never from journeys counted against
a pattern's runs. Levels are rows as they end (their `open` record, runner.describe), the running one
from the run's context as it goes; capacity steps are rows as they pass or fail, with why.
"""

from __future__ import annotations

from typing import Any

from ..openmodel import capacity
from ..openmodel.rates import Level, LevelPlan, format_rate
from ..openmodel.runner import CAPACITY_PREFIX, judged, slo_checks, slo_failures
from ..results.table import degraded_text
from .fields import name_fields


def _step_of(label: str) -> str:
    """The stage of a capacity step's cell label (runner.run_search: max-N-STAGE@RATE)."""
    return label.split("@", 1)[0].split("-")[-1]


def _why(cell: Any, verdict: bool | None) -> str:
    """Why a capacity step passed or failed, in the page's words."""
    record = cell.open or {}
    if verdict is None:
        return "not judged: " + degraded_text(cell.degraded or {})
    reasons = [*record.get("slo_failures", []), *(f"not sustained: {why}" for why in
                                                  record.get("not_sustained_because", []))]
    if not cell.complete:
        reasons.append("cut short by the time limit")
    if cell.degraded:
        reasons.append(degraded_text(cell.degraded))
    if reasons:
        return "; ".join(reasons)
    return "sustained" + (f", SLO {record['slo']} met" if record.get("slo") else "")


def _level_row(label: str, repetition: int, record: dict[str, Any]) -> dict[str, Any]:
    return {"label": label, "repetition": repetition, "running": False, "target_rate": record.get("target_rate"),
            "achieved_rate": record.get("achieved_rate"), "late": record.get("late"),
            "dropped": record.get("dropped"), "response_p99_ms": (record.get("response_ms") or {}).get("p99"),
            "service_p99_ms": (record.get("service_ms") or {}).get("p99"), "slo_met": record.get("slo_met"),
            "slo_failures": record.get("slo_failures") or [], "sustained": record.get("sustained"),
            "not_sustained_because": record.get("not_sustained_because") or []}


class OpenView:
    """What the page shows of one LevelPlan; fed the run's cell events by LiveRun."""

    def __init__(self, plan: LevelPlan) -> None:
        self.plan = plan
        self.level_cells = len(plan.cells())
        self.level_s = sum(level.warmup + level.duration for level, _ in plan.cells())
        self.bound = capacity.step_bound(plan.search) if plan.search else 0
        self.step_s = plan.search.warmup + plan.search.hold if plan.search else 0.0
        self.levels: list[dict[str, Any]] = []
        self.steps: list[dict[str, Any]] = []
        self.found: dict[str, Any] | None = None  # the search's record once it ended (report.extra["capacity"])
        self.running: tuple[Level, int, float] | None = None  # level, repetition, when its cell started

    def is_step(self, level: Level) -> bool:
        return self.plan.search is not None and level not in self.plan.levels and level.name.startswith(
            f"{CAPACITY_PREFIX}-")

    def on_cell_start(self, level: Level, repetition: int, now: float) -> None:
        self.running = (level, repetition, now)

    def on_cell_stop(self, cell: Any) -> None:
        self.running = None
        level = cell.pattern
        if self.is_step(level):
            verdict = judged(cell)
            self.steps.append({"step": len(self.steps) + 1, "rate": level.rate, "stage": _step_of(level.name),
                               "passed": verdict, "why": _why(cell, verdict), "label": level.name})
        else:
            self.levels.append(_level_row(level.label, cell.repetition, cell.open or {}))

    # -- the JSON --------------------------------------------------------------------------------------

    def snapshot(self, outcome: Any, measuring: bool, now: float, running_state: bool) -> dict[str, Any]:
        """`outcome` is the run context's running LevelOutcome (None before the first level)."""
        levels = list(self.levels)
        step_running = None
        if self.running is not None and running_state:
            level, repetition, _ = self.running
            if self.is_step(level):
                step_running = {"step": len(self.steps) + 1, "rate": level.rate, "stage": _step_of(level.name),
                                "passed": None, "why": "measuring" if measuring else "warming up",
                                "label": level.name, "running": True}
            else:
                levels.append(self._running_level(level, repetition, outcome, measuring, now))
        search = None
        if self.plan.search is not None:
            search = {"steps": self.steps + ([step_running] if step_running else []), "bound": self.bound,
                      "answer": self._answer(), "max_rate": self.plan.search.max_rate}
        return {"levels": levels, "slo": self.plan.slo.describe() if self.plan.slo else None, "search": search,
                "progress": self.progress(now, running_state)}

    def _running_level(self, level: Level, repetition: int, outcome: Any, measuring: bool,
                       now: float) -> dict[str, Any]:
        row = _level_row(level.label, repetition, {"target_rate": level.rate})
        row.update(running=True, phase="measured" if measuring else "warmup")
        if outcome is not None and outcome.level == level and measuring and not outcome.finished:
            judged_yet = bool(self.plan.slo) and outcome.ok + outcome.errors > 0  # a journey has ended
            failures = slo_failures(slo_checks(self.plan.slo, outcome)) if judged_yet else []
            row.update(achieved_rate=round(outcome.live_rate(now), 3), late=outcome.late, dropped=outcome.dropped,
                       response_p99_ms=outcome.response.percentile(99.0),
                       service_p99_ms=outcome.service.percentile(99.0),
                       slo_met=(not failures) if judged_yet else None,
                       slo_failures=failures)
        return row

    def _answer(self) -> dict[str, Any] | None:
        """The search's answer in words, once it ended (the run's summary holds the same record)."""
        from ..openmodel.report import format_capacity

        if self.found is None:
            return None
        lines = [line for line in format_capacity(self.found).splitlines() if line and not line.startswith("steps:")]
        return {"rate": self.found.get("answer"), "confirmed": bool(self.found.get("confirmed")),
                "text": lines[0].removeprefix("maximum capacity: ") if lines else "",
                "notes": [name_fields(line) for line in lines[1:]],
                "rate_text": format_rate(self.found["answer"]) if self.found.get("answer") else None}

    def progress(self, now: float, running_state: bool) -> dict[str, Any]:
        """Share done, what it is in words, and seconds left (an upper bound while a search runs)."""
        done_cells = len(self.levels)
        in_cell = 0.0
        if self.running is not None and running_state:
            level, _, began = self.running
            in_cell = min(max(0.0, now - began), level.warmup + level.duration)
        if len(self.steps) or (self.running is not None and self.is_step(self.running[0])):
            level_done = self.level_s
            step_done = len(self.steps) * self.step_s + in_cell
        else:
            level_done = sum(level.warmup + level.duration for level, _ in self.plan.cells()[:done_cells]) + in_cell
            step_done = 0.0
        total = self.level_s + self.bound * self.step_s
        left = 0.0 if not running_state else max(0.0, total - level_done - step_done)
        if self.found is not None:  # the search ended before its bound
            total, left = level_done + step_done, 0.0
        parts = []
        if self.level_cells:
            shown = min(self.level_cells, done_cells + (1 if self.running is not None and running_state
                                                         and not self.is_step(self.running[0]) else 0))
            parts.append(f"level {shown} of {self.level_cells}")
        if self.bound:
            running_step = 1 if self.running is not None and running_state and self.is_step(self.running[0]) else 0
            parts.append(f"capacity step {min(self.bound, len(self.steps) + running_step)} of at most {self.bound}")
        share = 1.0 if not running_state and self.found is not None else (
            min(1.0, (level_done + step_done) / total) if total else 0.0)
        return {"share": round(share, 4), "text": ", ".join(parts), "left_s": round(left, 1),
                "left_is_bound": bool(self.bound) and self.found is None}
