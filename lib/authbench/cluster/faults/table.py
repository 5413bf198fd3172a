"""Test 4 beside Tests 1–3: per cluster and fault, the verdict and the figures behind it.

Read from the cells of run folders (summary.json's `failover` sections), so `compare`, the report and a
reader of old results print the same table. Repetitions of one fault are pooled: users logged in and
users who lost SSO are summed, recovery is the longest seen, and the verdict is that of the sums. Recovery
counts from the fault's end (analysis.py); results written before it did count from its beginning, and say so.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .analysis import affected_users, verdict

HEADER = ("cluster", "fault", "Test 4", "lost SSO", "errors during", "recovery s (from fault end)",
          "max ms during")
OLD_RECOVERY = " (from the fault's beginning)"  # results written before `ended_at_s`
NOTE = ("Test 4: ○ no logged-in user lost SSO (asked for the password again, or still shown errors), △ some, × all, "
        "- not measured (no returning users) (docs/failover.md)")


def shown(fault: str, cluster: str) -> str:
    """A fault as tables show it: without the cluster's prefix, and a command by its program only (its
    arguments may hold a token; summary.json keeps the whole line)."""
    head, sep, command = fault.partition(" run=")
    if sep:
        program = command.split()[0] if command.split() else ""
        return f"{head} run={program}" + (" …" if len(command.split()) > 1 else "")
    return fault.replace(f" {cluster.split(':', 1)[-1]}/", " ")  # `lab:memcached` runs name memcached/idp-a


def verdict_rows(cells_by_target: dict[str, Iterable[dict[str, Any]]]) -> list[tuple[str, ...]]:
    """One row per cluster × fault (stop or run= faults; a start ends an outage and has no row)."""
    rows = []
    for name, cells in cells_by_target.items():
        pooled: dict[str, dict[str, Any]] = {}
        for cell in cells:
            section = cell.get("failover") or {}
            windows = {w["window"]: w for w in section.get("windows", [])}
            for fault in section.get("faults", []):
                during = windows.get(f"after {fault['fault']}", {})
                entry = pooled.setdefault(fault["fault"], {"users": 0, "lost": 0, "errors": 0, "journeys": 0,
                                                           "recovery": [], "max_ms": [], "old": False})
                entry["users"] += fault["logged_in_users"]
                entry["lost"] += affected_users(fault)
                entry["errors"] += during.get("errors", 0)
                entry["journeys"] += during.get("journeys", 0)
                entry["recovery"].append(fault.get("recovery_s"))
                entry["old"] = entry["old"] or "ended_at_s" not in fault
                if during.get("max_ms") is not None:
                    entry["max_ms"].append(during["max_ms"])
        for fault, e in pooled.items():
            recovery = "never" if None in e["recovery"] else f"{max(e['recovery']):g}"
            recovery += OLD_RECOVERY if e["old"] else ""
            rows.append((name, shown(fault, name), verdict(e["users"], e["lost"]),
                         f"{e['lost']} of {e['users']}" if e["users"] else "-",
                         f"{e['errors']} of {e['journeys']}", recovery,
                         f"{max(e['max_ms']):g}" if e["max_ms"] else "-"))
    return rows


def format_test4(cells_by_target: dict[str, Iterable[dict[str, Any]]]) -> str:
    """The Test 4 table as text; "" when no cell had a fault plan."""
    rows = verdict_rows(cells_by_target)
    if not rows:
        return ""
    widths = [max(len(row[i]) for row in (HEADER, *rows)) for i in range(len(HEADER))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(HEADER, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    lines.append(NOTE)
    return "\n".join(lines)
