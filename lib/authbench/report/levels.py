"""The report's open-model tables: levels laid out like OneSpan's baseline, and the capacity search's steps.

A level row answers OneSpan's questions — authentications per second, average response time, the
<50/<300/<1000 ms distribution, server and store CPU — and adds what an open model must say: the target
rate, late and dropped starts, and the service time beside the time from the intended start.
"""

from __future__ import annotations

from typing import Any

from authbench.results.summary import DISTRIBUTION_LABELS
from authbench.results.table import COMPONENTS_DOWN, MISSING, degraded_text, format_ms, format_share, run_label

from .load import Cell, Results
from .tables import Table

SERVER_PREFIXES = ("idp",)  # lab components that are the authentication server
FRONT_COMPONENTS = ("sp", "lb", "generator")  # neither server nor store
CPU_DECIMALS = 1


def _cpu_of(cell: Cell, server: bool) -> str:
    components = (cell.resources or {}).get("components") or {}
    picked = [entry.get("cpu_pct_mean") or 0.0 for name, entry in components.items()
              if name not in FRONT_COMPONENTS and name.startswith(SERVER_PREFIXES) == server]
    return f"{sum(picked):.{CPU_DECIMALS}f}" if picked else MISSING


def levels_table(results: Results) -> Table | None:
    rows = []
    for backend, run in results.runs.items():
        steps = set((run.document.get("capacity") or {}).get("step_labels") or [])  # in the capacity table
        for cell in run.cells:
            record = cell.open
            if not record or cell.pattern in steps:
                continue
            s = cell.summary
            rows.append([backend, run_label(cell.pattern, cell.repetition), f"{record['target_rate']:.4g}",
                         f"{record['achieved_rate']:.4g}", format_ms(s.mean_ms),
                         *(format_share(s, label) for label in DISTRIBUTION_LABELS),
                         format_ms(record["response_ms"]["p99"]), format_ms(record["service_ms"]["p99"]),
                         str(record["late"]), str(record["dropped"]), _cpu_of(cell, True), _cpu_of(cell, False),
                         "yes" if record["sustained"] else "NO"])
    if not rows:
        return None
    header = ["backend", "level", "target auth/s", "auth/s", "mean (ms)",
              *(f"{label} %" for label in DISTRIBUTION_LABELS), "p99 (ms)",
              "p99 service (ms)", "late", "dropped", "server CPU %", "store CPU %", "sustained"]
    notes = ["Times from each journey's intended start (what a user waits; no coordinated omission); "
             "service time from the actual send. auth/s: starts achieved over the level.",
             "Sustained: achieved at least 98% of the scheduled rate and no start dropped.",
             "CPU: mean % of one core over the measured phase; server = IdP nodes, store = LDAP and session stores."]
    return Table("Load levels", header, rows, notes=notes)


def capacity_tables(results: Results) -> list[Table]:
    tables = []
    for backend, run in results.runs.items():
        found: dict[str, Any] | None = run.document.get("capacity")
        if not found:
            continue
        by_label = {cell.pattern: cell for cell in run.cells}
        rows = []
        cooldowns = found.get("step_cooldowns") or []
        for i, (step, label) in enumerate(zip(found["steps"], found.get("step_labels") or [], strict=False)):
            cell = by_label.get(label)
            record = (cell.open or {}) if cell else {}
            degraded = [f"degraded: {degraded_text(cell.degraded)}"] if cell and cell.degraded else []
            rows.append([f"{step['rate']:.4g}", step["stage"], _cooldown(cooldowns[i] if i < len(cooldowns) else None),
                         f"{record['achieved_rate']:.4g}" if record else MISSING,
                         format_ms(record["response_ms"]["p99"]) if record else MISSING,
                         f"{100.0 * cell.summary.errors / cell.summary.tests:.2f}" if cell and cell.summary.tests
                         else MISSING, "pass" if step["passed"] else "FAIL",
                         "; ".join(record.get("slo_failures", []) + record.get("not_sustained_because", [])
                                   + degraded)])
        answer = found.get("answer")
        notes = [f"Maximum capacity: {answer:.4g}/s (SLO {found.get('slo')}, confirmed)." if answer is not None
                 else "No confirmed maximum capacity: see the steps."]
        if found.get("searching"):
            notes.append(f"The search was interrupted after {len(found['steps'])} steps; --resume continues it.")
        if found.get("stopped"):
            notes.append(f"The search stopped: the cluster was degraded during its last step "
                         f"({degraded_text({COMPONENTS_DOWN: found.get(COMPONENTS_DOWN) or ['?']})}); no rate "
                         "is confirmed on what was left of it.")
        if found.get("ceiling_reached"):
            notes.append("Every step up to the search's maximum rate passed: the capacity is higher.")
        if found.get("idle_ms") is not None:
            notes.append(f"Cool-down: after a failed step, single journeys until 3 in a row answered near the idle "
                         f"latency ({found['idle_ms']:.1f} ms) again; 'busy' marks a step that began before they did.")
        tables.append(Table(f"{backend}: capacity search", ["rate /s", "stage", "cool-down", "achieved /s",
                                                            "p99 (ms)", "errors %", "result", "why"],
                            rows, notes=notes))
    return tables


def _cooldown(record: dict[str, Any] | None) -> str:
    """The cool-down before a step: its seconds, or 'busy' when the target had not settled when it ran out."""
    if not record:
        return ""
    return f"{record['seconds']:.2g} s, {record['probes']} probes" + ("" if record["settled"] else " (busy)")
