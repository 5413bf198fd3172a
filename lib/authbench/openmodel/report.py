"""What a level adds to the run's record and terminal output: rates, late and dropped starts, two latencies.

Headless calls these for every cell; for a pattern cell they add nothing, so patterns print and record
exactly as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..results.table import COMPONENTS_DOWN, _render, degraded_text, format_ms  # the terminal tables' layout
from .rates import LevelPlan, format_rate

NOT_SUSTAINED = "not sustained"


def _open(cell: Any) -> dict[str, Any] | None:
    return getattr(cell, "open", None) or None


def summary_plan(plan: Any) -> dict[str, Any]:
    """The whole plan as summary.json holds it, and --resume compares it: patterns' or levels'."""
    return {**plan.record(), **plan_record(plan)}


def plan_record(plan: Any) -> dict[str, Any]:
    if not isinstance(plan, LevelPlan):
        return {}
    arrivals = plan.arrivals
    return {"model": "open", "levels": [{"name": level.name, "rate": level.rate, "duration_s": level.duration,
                                         "warmup_s": level.warmup} for level in plan.levels],
            "arrivals": arrivals.kind, "seed": arrivals.seed, "max_users": arrivals.max_users,
            "queue_for_s": arrivals.queue_for, "late_after_ms": arrivals.late_after * 1000,
            "slo": plan.slo.describe() if plan.slo else None,
            "search": None if plan.search is None else vars(plan.search)}


def cell_record(cell: Any) -> dict[str, Any]:
    record = _open(cell)
    return {} if record is None else {"open": record}


def label_suffix(cell: Any) -> str:
    record = _open(cell)
    return f" ({NOT_SUSTAINED})" if record is not None and not record["sustained"] else ""


def remarks(cell: Any) -> list[str]:
    record = _open(cell)
    if record is None:
        return []
    out = [f"target {format_rate(record['target_rate'])}, achieved {format_rate(record['achieved_rate'])}, "
           f"{record['late']} late, {record['dropped']} dropped; p99 {format_ms(record['response_ms']['p99'])} ms "
           f"from intended start, {format_ms(record['service_ms']['p99'])} ms service"]
    if not record["sustained"]:
        out.append(f"{NOT_SUSTAINED}: {'; '.join(record['not_sustained_because'])}")
    if record.get("slo_failures"):
        out.append(f"SLO missed: {'; '.join(record['slo_failures'])}")
    return out


def format_levels(cells: Sequence[Any]) -> str:
    """One row per level × repetition: target and achieved rate, starts, and the two latencies side by side."""
    header = ["level", "target/s", "achieved/s", "planned", "started", "late", "dropped", "p50 resp", "p99 resp",
              "p99 service", "max lag", "sustained"]
    rows = []
    for cell in cells:
        record = _open(cell)
        if record is None:
            continue
        rows.append([f"{cell.pattern.label} #{cell.repetition}", f"{record['target_rate']:.4g}",
                     f"{record['achieved_rate']:.4g}", str(record["planned"]), str(record["started"]),
                     str(record["late"]), str(record["dropped"]), format_ms(record["response_ms"]["p50"]),
                     format_ms(record["response_ms"]["p99"]), format_ms(record["service_ms"]["p99"]),
                     format_ms(record["start_lag_ms"]["max"]), "yes" if record["sustained"] else "NO"])
    if not rows:
        return ""
    notes = ["resp: ms from the intended start (what a user waits); service: ms from the actual send.",
             "Sustained: achieved ≥ 98% of the scheduled rate and no start dropped."]
    return "\n".join(["", _render(header, rows, rule_after=set()), "", *notes])


def format_capacity(found: dict[str, Any]) -> str:
    steps = ", ".join(f"{step['rate']:.4g}/s {step['stage']} {'pass' if step['passed'] else 'FAIL'}"
                      for step in found["steps"]) + (" (degraded)" if found.get("stopped") else "")
    if found.get("searching"):
        head = f"maximum capacity: not known yet — the search was interrupted after {len(found['steps'])} step(s); " \
            "--resume continues it"
    elif found.get("stopped"):
        head = (f"maximum capacity: not confirmed — the search stopped at step {len(found['steps'])}, on a degraded "
                f"cluster: {degraded_text({COMPONENTS_DOWN: found.get(COMPONENTS_DOWN) or ['?']})}")
    elif found["answer"] is not None:
        head = f"maximum capacity: {format_rate(found['answer'])} (SLO {found['slo']}, confirmed)"
    elif found["last_pass"] is not None:
        head = f"maximum capacity: not confirmed — {format_rate(found['last_pass'])} passed, its confirmation failed"
    else:
        head = f"maximum capacity: below the start rate — even {format_rate(found['steps'][0]['rate'])} failed"
    tail = []
    if found["ceiling_reached"]:
        tail.append(f"every step up to --max-rate {format_rate(found['max_rate'])} passed: the capacity is higher")
    if found["steps_exhausted"]:
        tail.append("the step limit ended the search before it reached its precision")
    if found["first_fail"] is not None:
        tail.append(f"first failing rate {format_rate(found['first_fail'])}")
        answer = found["answer"]
        if answer is not None and not found.get("precision_reached", True):
            tail.append(f"the knee lies between {format_rate(found['answer'])} and {format_rate(found['first_fail'])}: "
                        "wider than --precision (a confirmation failed); run again, or with a longer --step-duration")
    return "\n".join(["", head, f"steps: {steps}", *tail])


def format_report(cells: Sequence[Any], extra: dict[str, Any]) -> str:
    parts = [format_levels(cells)]
    if extra.get("capacity"):
        parts.append(format_capacity(extra["capacity"]))
    return "\n".join(part for part in parts if part)
