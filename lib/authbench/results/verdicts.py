"""The verdict panel: pass or fail for everything a run was asked to judge, before any table.

Computed once, from a run's summary.json document alone (so the console, the live page, the report and
`summary.json`'s own `verdicts` can never disagree, and old results get a panel too). One check per line:

- each level's SLO (open model), with the figure that decided it, and with --mix each journey's;
- each level's rate held or not (sustained), with its late and dropped starts;
- the capacity search's answer, its bracket, its confirmation and every step;
- the error share against --max-error-pct (shown without a verdict when none was given), and with --mix
  each journey's own;
- Test 4 per fault: the logged-in users it cost SSO and the time until SSO worked again;
- cells cut short, interrupted or degraded (their figures are partial).

k6's threshold summary and Gatling's assertions are the model: a reader sees ✓ or ✗ first, then why.
"""

from __future__ import annotations

from typing import Any

from ..openmodel.rates import format_rate, slo_check_text
from .table import degraded_text, run_label

PASS, FAIL, INFO = "✓", "✗", "·"  # a check with no criterion to judge it by (no --max-error-pct) is INFO
JOURNEY_ERRORS = "journey-errors"  # a --mix journey's own error share (results.journeys)
JOURNEY_SLO = "journey-slo"  # a --mix journey's own SLO at a level
TEST4_PASS = "○"  # Test 4 keeps the 2012 report's marks: ○ none lost, △ some, × all, - not measured

Check = dict[str, Any]


def compute(document: dict[str, Any]) -> dict[str, Any]:
    """summary.json's `verdicts`: `checks` in panel order and `passed` (None when nothing was judged)."""
    cells = document.get("cells") or []
    capacity = document.get("capacity") or None
    steps = set((capacity or {}).get("step_labels") or [])
    levels = [c for c in cells if c.get("open") and c["pattern"] not in steps]
    checks = [*_slo(levels), *_journey_slo(levels), *_sustained(levels)]
    if capacity:
        checks.append(_capacity(capacity, {c["pattern"]: c for c in cells}))
    limit = (document.get("config") or {}).get("max_error_pct")
    checks.append(_errors(cells, limit))
    checks += _journey_errors(cells, limit)
    checks += _failover(cells)
    checks += _partial(document, cells)
    judged = [c["passed"] for c in checks if c["passed"] is not None]
    return {"passed": all(judged) if judged else None, "checks": checks}


def criteria_failed(verdicts: dict[str, Any]) -> list[Check]:
    """The checks that make a finished run exit 3: the error share over --max-error-pct and a level's missed SLO."""
    return [c for c in verdicts.get("checks", []) if c["check"] in ("errors", JOURNEY_ERRORS, "slo", JOURNEY_SLO)
            and c["passed"] is False]


def lines(verdicts: dict[str, Any]) -> list[str]:
    """The panel as text, one check per line: mark, what, the figure."""
    checks = verdicts.get("checks") or []
    if not checks:
        return []
    head = {True: "all passed", False: "FAILED", None: "nothing to judge"}[verdicts.get("passed")]
    return [f"Verdicts: {head}", *(f"  {c['mark']} {c['title']}: {c['figure']}" for c in checks)]


def _check(check: str, title: str, passed: bool | None, figure: str, mark: str | None = None,
           **more: Any) -> Check:
    return {"check": check, "title": title, "passed": passed,
            "mark": mark or (INFO if passed is None else PASS if passed else FAIL), "figure": figure, **more}


def _label(cell: dict[str, Any]) -> str:
    return run_label(cell["pattern"], cell["repetition"])


def _rate(value: float | None) -> str:
    return "-" if value is None else format_rate(value)


def _slo(levels: list[dict[str, Any]]) -> list[Check]:
    out = []
    for cell in levels:
        record = cell["open"]
        if not record.get("slo"):
            continue
        terms = record.get("slo_checks")
        words = [slo_check_text(t) for t in terms] if terms else record.get("slo_failures") or ["met"]
        figure = "; ".join(words)
        out.append(_check("slo", f"SLO {record['slo']} at {_label(cell)}", bool(record.get("slo_met")), figure,
                          level=_label(cell)))
    return out


def _journey_slo(levels: list[dict[str, Any]]) -> list[Check]:
    """A --mix at a rate: the level's SLO judged for each journey on its own samples (openmodel.runner)."""
    out = []
    for cell in levels:
        record = cell["open"]
        for name, terms in (record.get("journey_slo_checks") or {}).items():
            figure = "; ".join(slo_check_text(t) for t in terms)
            out.append(_check(JOURNEY_SLO, f"SLO {record.get('slo')} of {name} at {_label(cell)}",
                              all(t["met"] for t in terms), figure, level=_label(cell), journey=name))
    return out


def _sustained(levels: list[dict[str, Any]]) -> list[Check]:
    out = []
    for cell in levels:
        record = cell["open"]
        held = bool(record.get("sustained"))
        figure = (f"achieved {_rate(record.get('achieved_rate'))} of {_rate(record.get('target_rate'))}, "
                  f"{record.get('late', 0)} late, {record.get('dropped', 0)} dropped")
        if not held and record.get("not_sustained_because"):
            figure += " (" + "; ".join(record["not_sustained_because"]) + ")"
        out.append(_check("sustained", f"rate held at {_label(cell)}", held, figure, level=_label(cell),
                          late=record.get("late", 0), dropped=record.get("dropped", 0)))
    return out


def _capacity(found: dict[str, Any], by_label: dict[str, dict[str, Any]]) -> Check:
    labels = found.get("step_labels") or []
    steps = []
    for i, step in enumerate(found.get("steps") or []):
        record = (by_label.get(labels[i]) or {}).get("open") or {} if i < len(labels) else {}
        why = [*(record.get("slo_failures") or []), *(record.get("not_sustained_because") or [])]
        steps.append({"rate": step["rate"], "stage": step["stage"], "passed": step["passed"], "why": "; ".join(why)})
    trail = ", ".join(f"{_rate(s['rate'])} {s['stage']} {PASS if s['passed'] else FAIL}" for s in steps)
    answer, first_fail = found.get("answer"), found.get("first_fail")
    if found.get("searching"):
        figure = f"not known yet: interrupted after {len(steps)} step(s), --resume continues it"
    elif found.get("stopped"):
        figure = f"not confirmed: the cluster was degraded during step {len(steps)}"
    elif answer is not None:
        bracket = f", first failing {_rate(first_fail)}" if first_fail is not None else ""
        above = "; every step up to the maximum rate passed: the capacity is higher" \
            if found.get("ceiling_reached") else ""
        figure = f"{_rate(answer)} confirmed (SLO {found.get('slo')}{bracket}){above}"
    elif found.get("last_pass") is not None:
        figure = f"not confirmed: {_rate(found['last_pass'])} passed, its confirmation failed"
    else:
        figure = f"below the start rate: even {_rate(steps[0]['rate']) if steps else '-'} failed"
    return _check("capacity", "maximum capacity", answer is not None, f"{figure}; steps: {trail or 'none'}",
                  answer=answer, first_fail=first_fail, confirmed=bool(found.get("confirmed")), steps=steps)


def _errors(cells: list[dict[str, Any]], limit: float | None, journey: str = "") -> Check:
    """The error share against --max-error-pct: of the whole run, or (`journey`) of one journey of a --mix."""
    summaries = [c["summary"] for c in cells] if not journey else \
        [c["journeys"][journey] for c in cells if journey in (c.get("journeys") or {})]
    tests = sum(int(s.get("tests") or 0) for s in summaries)
    errors = sum(int(s.get("errors") or 0) for s in summaries)
    pct = 100.0 * errors / tests if tests else None
    check, title = (JOURNEY_ERRORS, f"errors of {journey}") if journey else ("errors", "errors")
    more = {"journey": journey} if journey else {}
    share = f"{pct:.2f}% of {tests} measured journeys failed ({errors})" if tests else "no measured journey"
    if limit is None:
        return _check(check, title, None, share + "; no --max-error-pct to judge them by",
                      errors=errors, journeys=tests, pct=pct, **more)
    passed = pct is not None and pct <= limit
    return _check(check, title, passed, f"{share}, {'within' if passed else 'more than'} --max-error-pct "
                  f"{limit:g}", errors=errors, journeys=tests, pct=pct, limit=limit, **more)


def _journey_errors(cells: list[dict[str, Any]], limit: float | None) -> list[Check]:
    """A --mix: each journey's own error share, judged by --max-error-pct as the run's (a journey failing
    often is not hidden by a busier one succeeding)."""
    names = dict.fromkeys(name for c in cells for name in (c.get("journeys") or {}))
    return [_errors(cells, limit, name) for name in names]


def _failover(cells: list[dict[str, Any]]) -> list[Check]:
    """Test 4, one line per cell and fault: ○ passes, △ and × fail, - (no returning users) is not judged."""
    out = []
    for cell in cells:
        section = cell.get("failover") or {}
        windows = {w["window"]: w for w in section.get("windows", [])}
        for fault in section.get("faults", []):
            mark = fault.get("test4", "-")
            during = windows.get(f"after {fault['fault']}", {})
            affected = fault.get("affected_users", fault.get("reauthenticated_users", 0))
            text = fault.get("verdict_text") or _fault_text(fault, affected)
            out.append(_check("test4", f"Test 4 at {_label(cell)}",
                              None if mark == "-" else mark == TEST4_PASS, text, mark=mark,
                              fault=fault["fault"], level=_label(cell), affected_users=affected,
                              logged_in_users=fault.get("logged_in_users", 0),
                              errors=during.get("errors", 0), journeys=during.get("journeys", 0),
                              recovery_s=fault.get("recovery_s")))
    return out


def _fault_text(fault: dict[str, Any], affected: int) -> str:
    """Results written before faults carried their own sentence (a command without its arguments: a token)."""
    recovery = fault.get("recovery_s")
    after = "SSO did not work again before the run ended" if recovery is None else f"recovered after {recovery:g} s"
    head, command, _ = fault["fault"].partition(" run=")
    return f"{head}{' run=…' if command else ''}: {affected} of {fault.get('logged_in_users', 0)} logged-in users " \
        f"lost single sign-on; {after}"


def _partial(document: dict[str, Any], cells: list[dict[str, Any]]) -> list[Check]:
    out = []
    for cell in cells:
        why = [] if cell.get("complete", True) else ["cut short by the cell time limit"]
        if cell.get("degraded"):
            why.append(f"degraded: {degraded_text(cell['degraded'])}")
        if why:
            out.append(_check("complete", f"{_label(cell)} ran whole", False, "; ".join(why) + ": figures partial",
                              level=_label(cell)))
    for key, what in (("interrupted", "interrupted"), ("write_error", "cut by a write error")):
        record = document.get(key)
        if isinstance(record, dict):
            cut = record.get("cell")
            where = f" during {run_label(cut['pattern'], cut['repetition'])}" if isinstance(cut, dict) else ""
            out.append(_check("complete", "the run ran to its end", False, f"{what}{where}"))
    return out
