"""Findings and caveats as sentences computed from the figures: nothing here is written by hand.

Each sentence is one rule over the averages, the checks or the cells; the thresholds are the named
constants below, so a reader can see why a statement was (or was not) made.
"""

from __future__ import annotations

from authbench.results import verdicts
from authbench.results.summary import SAMPLES_FOR_PERCENTILE
from authbench.results.table import TPS_DECIMALS, degraded_text, run_label

from .load import CUT_SHORT, INCOMPLETE, STOPPED, WRITE_CUT, Results, threads_of

TIE_PCT = 5.0  # backends whose TPS differ by less than this (% of the lower) are called level
CPU_SAMPLES_MIN = 5  # a CPU mean over fewer one-second readings than this is a rough figure
SHORT_WINDOW_S = 10.0  # a measured window shorter than this makes TPS (and Peak TPS) a noisy figure
PERCENTILE_WARNINGS = tuple(f"{label} rests on" for label in SAMPLES_FOR_PERCENTILE)  # summary's wording
COUNTED_WARNINGS = (*PERCENTILE_WARNINGS, "Peak TPS rests on")  # said once over all cells, not per cell
GROWTH_PCT = 10.0  # TPS rising less than this (%) from one thread count to the next has stopped growing


def findings(results: Results) -> list[str]:
    """The short findings paragraph: the verdicts, fastest backend per concurrency, where TPS stops growing, failed
    checks; never empty (it says why there is nothing to state)."""
    out = _verdicts(results) + _fastest(results) + _growth(results) + _checks(results)
    errors = _errors(results)
    if errors:
        out.append("Errors: " + "; ".join(errors) + ".")
    return out or [_nothing_to_state(results)]


def _verdicts(results: Results) -> list[str]:
    """The verdict panel in words: what failed (with the figure), or that everything judged passed."""
    out = []
    for backend, run in results.runs.items():
        checks = verdicts.compute(run.document)["checks"]
        who = "The run" if results.kind == "run" else backend
        judged = [c for c in checks if c["passed"] is not None]
        failed = [c for c in judged if not c["passed"]]
        capacity = [c for c in checks if c["check"] == "capacity" and c["passed"]]
        if capacity:
            out.append(f"{who}: maximum capacity {capacity[0]['figure'].split(';')[0]}.")
        if failed:
            out.append(f"{who} failed {len(failed)} of {_checks_count(len(judged))}: "
                       + "; ".join(f"{c['title']} ({c['figure'].rstrip('.')})" for c in failed) + ".")
        elif judged:
            out.append(f"{who} passed {'the' if len(judged) == 1 else 'all'} {_checks_count(len(judged))} of the "
                       "verdict panel.")
    return out


def _checks_count(count: int) -> str:
    return "1 check" if count == 1 else f"{count} checks"


def _nothing_to_state(results: Results) -> str:
    short = [c for c in results.cells if 0 < c.summary.duration_s < SHORT_WINDOW_S]
    if not results.cells:
        return "Nothing to state: no cell has been measured."
    if short and len(short) == len(results.cells):
        return (f"Nothing to state: every cell was measured for less than {SHORT_WINDOW_S:g} s, too short to "
                "support a verdict; plan more runs per user or a longer duration.")
    return ("Nothing to compare or judge: one backend, one pattern, no errors and no criterion "
            "(--max-error-pct, --slo, a fault plan) to judge the run by.")


def caveats(results: Results) -> list[str]:
    """Where a figure is weak: errors, a saturated generator, few samples, incomplete cells, no CPU data."""
    out = []
    cells = results.cells
    cut = {backend: run.document["write_error"] for backend, run in results.runs.items()
           if isinstance(run.document.get("write_error"), dict)}
    for backend, record in cut.items():
        where = "The run" if results.kind == "run" else f"The run of {backend}"
        out.append(f"{where} was cut by a write error: its results folder refused a write to "
                   f"{record.get('file', '?')} ({record.get('error', '?')}), so it stopped there; every row it could "
                   f"write is kept ({int(record.get('rows_not_written') or 0)} journey(s) from then on not written).")
    if results.finished is None and not (cut and results.kind == "run"):
        out.append(f"The {results.kind} has no finish time: it was interrupted or is still running.")
    if not cells:
        out.append("No cell has been measured yet: there are no figures.")
    for cell in cells:
        where = f"{cell.backend} {run_label(cell.pattern, cell.repetition)}"
        if cell.status in (INCOMPLETE, STOPPED, WRITE_CUT):
            why = {STOPPED: "was stopped by the user", WRITE_CUT: "was cut by a write error (the results folder "
                   "refused a write during it)"}.get(cell.status, "is incomplete: the run stopped during it")
            out.append(f"{where} {why}; figures from its {int(cell.summary.tests)} measured samples, "
                       "left out of averages.")
        elif cell.status == CUT_SHORT:
            out.append(f"{where} was cut short by the cell time limit; left out of averages.")
        # The summary's own warnings, except the percentile ones: those are counted over all cells below.
        out += [f"{where}: {w}" for w in cell.summary.warnings if not w.startswith(COUNTED_WARNINGS)]
        if cell.resources and cell.resources.get("generator_saturated"):
            out.append(f"{where}: the load generator was saturated (its CPU was the limit); the figures "
                       "understate what the servers can do.")
    short = [c for c in cells if c.counted and 0 < c.summary.duration_s < SHORT_WINDOW_S]
    if short:
        shortest = min(c.summary.duration_s for c in short)
        out.append(f"{len(short)} of {len(cells)} cells were measured for less than {SHORT_WINDOW_S:g} s (the "
                   f"shortest {shortest:.1f} s): their TPS and Peak TPS are noisy; plan more runs per user.")
    few_cpu = [c for c in cells if c.resources and 0 < int(c.resources.get("samples") or 0) < CPU_SAMPLES_MIN]
    if few_cpu:
        out.append(f"CPU figures of {len(few_cpu)} of {len(cells)} cells rest on fewer than {CPU_SAMPLES_MIN} "
                   "one-second readings: treat them as rough.")
    for cell in cells:
        if cell.degraded:
            why = ("its figures cover fewer journeys than planned" if "workers_lost" in cell.degraded
                   else "its figures were measured on what was left of the cluster")
            out.append(f"{cell.backend} {run_label(cell.pattern, cell.repetition)} is degraded: "
                       f"{degraded_text(cell.degraded)}; {why}.")
    lab = results.config.get("lab") or {}
    if lab:
        cores = results.machine.get("cores", "?")
        out.append(f"The load generator ran on the same machine as the lab's servers ({cores} cores shared): the "
                   "figures compare the backends with each other, not with production hardware.")
    if lab.get("stickiness") not in (None, "none"):
        out.append(f"The balancer was sticky ({lab['stickiness']}): each user stayed on one node, so the figures do "
                   "not show the cost of sharing sessions between nodes.")
    for label, needed in SAMPLES_FOR_PERCENTILE.items():
        few = [c for c in cells if 0 < c.summary.successes < needed]
        if few:
            out.append(f"{label} rests on fewer than {needed} successful journeys in {len(few)} of {len(cells)} "
                       "cells: treat it as a rough figure.")
    unsampled = [b for b, run in results.runs.items() if not any(c.resources for c in run.cells)]
    if unsampled and len(unsampled) == len(results.runs):
        out.append("CPU was not sampled: no server CPU figures.")
    elif unsampled:
        out.append(f"CPU was not sampled for {_join(unsampled)}: no server CPU figures for {_join(unsampled)}.")
    return out


def _averages(results: Results) -> dict[str, dict[str, float]]:
    """Backend → pattern → average TPS."""
    return {b: {p: s.tps for p, s in run.averages().items()} for b, run in results.runs.items()}


def tps_range(results: Results, backend: str, pattern: str) -> tuple[float, float] | None:
    """(lowest, highest) TPS over a pattern's counted repetitions, or None with fewer than two."""
    values = [c.summary.tps for c in results.runs[backend].cells if c.pattern == pattern and c.counted]
    return (min(values), max(values)) if len(values) > 1 else None


def _fastest(results: Results) -> list[str]:
    """Who is fastest per pattern, said only when the difference is larger than the repetitions' spread."""
    tps = _averages(results)
    out = []
    for pattern in results.patterns:
        ranked = sorted(((v[pattern], b) for b, v in tps.items() if pattern in v), reverse=True)
        if len(ranked) < 2:
            continue
        (best, winner), (second, runner_up) = ranked[0], ranked[1]
        at = f"At {threads_of(pattern)} threads ({pattern})"
        spread = tps_range(results, winner, pattern), tps_range(results, runner_up, pattern)
        if spread[0] and spread[1] and spread[0][0] <= spread[1][1]:
            out.append(f"{at} {winner} and {runner_up} are level: their repetitions overlap ({winner} "
                       f"{_span(spread[0])}, {runner_up} {_span(spread[1])} TPS), so neither is faster on this data.")
        elif second > 0 and _pct(best, second) < TIE_PCT:
            out.append(f"{at} {winner} and {runner_up} are level ({_fmt(best)} and {_fmt(second)} TPS, "
                       f"within {TIE_PCT:g}%).")
        else:
            above = f", {_pct(best, second):.0f}% above {runner_up} ({_fmt(second)})" if second > 0 else ""
            basis = (f"; every repetition above {runner_up}'s" if spread[0] and spread[1]
                     else "; one repetition each, so no spread to weigh it against")
            out.append(f"{at} {winner} has the highest TPS ({_fmt(best)}){above}{basis}.")
    return out


def _span(values: tuple[float, float]) -> str:
    return f"{_fmt(values[0])}–{_fmt(values[1])}"


def _growth(results: Results) -> list[str]:
    """Where each backend's TPS stops growing; the backends that never stop share one sentence."""
    out = []
    growing: dict[tuple[int, int], list[str]] = {}  # (from, to threads) -> "backend (+x%)"
    for backend, values in _averages(results).items():
        levels = sorted((threads_of(p), v) for p, v in values.items() if threads_of(p))
        stalled = None
        for (low, before), (high, after) in zip(levels, levels[1:], strict=False):
            if high == low or before <= 0:
                continue
            change = _pct(after, before)
            if change < GROWTH_PCT:
                verb = "falls" if change < 0 else "stops growing"
                stalled = f"{backend}'s TPS {verb} between {low} and {high} threads ({change:+.0f}%)."
                break
        if stalled:
            out.append(stalled)
        elif len(levels) > 1 and levels[0][1] > 0:
            (first, tps_first), (last, tps_last) = levels[0], levels[-1]
            growing.setdefault((first, last), []).append(f"{backend} ({_pct(tps_last, tps_first):+.0f}%)")
    for (first, last), names in growing.items():
        out.append(f"TPS still grows from {first} to {last} threads for {_join(names)}.")
    return out


def _checks(results: Results) -> list[str]:
    if not results.checks:
        return []
    failing: dict[str, list[str]] = {}
    for backend, checks in results.checks.items():
        for check in checks:
            if not check.get("passed"):
                failing.setdefault(str(check.get("test", "?")), []).append(backend)
    if not failing:
        count = len(results.checks)
        return [f"Every backend passes the cluster checks ({count} backend{'s' if count > 1 else ''})."]
    tests = list(dict.fromkeys(str(c.get("test", "?")) for checks in results.checks.values() for c in checks))
    out = []
    for test, backends in sorted(failing.items()):
        expected = all(not design_expects(results, b, tests.index(test), passed=True) for b in backends)
        out.append(f"{test} fails for {_join(backends)}" + (", as the 2012 design table expects of them (×*)."
                                                            if expected else "."))
    return out


def _errors(results: Results) -> list[str]:
    out = []
    for backend, run in results.runs.items():
        by_pattern: dict[str, int] = {}
        for cell in run.cells:
            if cell.summary.errors:
                by_pattern[cell.pattern] = by_pattern.get(cell.pattern, 0) + int(cell.summary.errors)
        if by_pattern:
            out.append(f"{backend} had " + ", ".join(f"{n} in {p}" for p, n in by_pattern.items()))
    return out


def _pct(value: float, base: float) -> float:
    return 100.0 * (value - base) / base


def _fmt(value: float) -> str:
    return f"{value:.{TPS_DECIMALS}f}"


def _join(names: list[str]) -> str:
    return ", ".join(names)


def design_expects(results: Results, backend: str, index: int, *, passed: bool) -> bool:
    """Whether the 2012 design table expects `passed` of this lab backend's test (True when it says nothing)."""
    from ..embedded_lab import expected_cluster_checks

    target = (results.config.get("targets") or {}).get(backend) or {}
    expected = expected_cluster_checks(backend) if target.get("kind") == "lab" else None
    if expected is None or index >= len(expected):
        return True
    return expected[index] == passed
