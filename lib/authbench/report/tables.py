"""The report's tables as plain rows of text, so HTML and Markdown render the same figures.

Figures come from the summaries as stored (or, for incomplete cells, as `load` computed them); averages
come from `average`, the same function `authbench run` uses, so the report and the terminal agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from authbench.results.summary import DISTRIBUTION_LABELS, SAMPLES_FOR_PERCENTILE, Summary, average
from authbench.results.table import (
    AVERAGE_LABEL,
    MISSING,
    TPS_DECIMALS,
    format_count,
    format_ms,
    format_share,
    run_label,
)

from .findings import design_expects, tps_range
from .load import INCOMPLETE, STOPPED, WRITE_CUT, Cell, Results, Run

PASS_MARK, FAIL_MARK = "○", "×"  # the 2012 report's marks
DEGRADED_MARK = " (degraded)"  # after an average with a degraded repetition
EXPECTED_MARK = "*"  # after a ×: what the backend's design is expected to fail
# format_count, format_ms and format_share are the terminal table's: the report prints figures the same way.
WEAK_MARK = "†"  # a figure resting on too few samples, or on a cell with errors
CPU_DECIMALS = 1
TOP_COMPONENTS = 8  # CPU columns shown per table: the generator, then the busiest components
JOURNEY_MARK = "· "  # before a --mix journey's own row, under its cell's
WIDE_COLUMNS = 9  # a table with more columns is set smaller in HTML, so it fits the page (and print) whole


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]
    strong: set[int] = field(default_factory=set)  # rows to set in bold (averages)
    notes: list[str] = field(default_factory=list)
    centered: bool = False  # marks (○/×) rather than numbers
    text: bool = False  # words (settings), left-aligned
    links: set[int] = field(default_factory=set)  # columns of paths relative to the report, linked in HTML

    @property
    def wide(self) -> bool:
        return len(self.header) > WIDE_COLUMNS


def run_tables(results: Results) -> list[Table]:
    """Per backend: every repetition of every pattern, then the pattern's average (2012's tables 4-1…4-12)."""
    tables = []
    for backend, run in results.runs.items():
        rows: list[list[str]] = []
        strong: set[int] = set()
        notes: list[str] = []
        for pattern in results.patterns:
            cells = [c for c in run.cells if c.pattern == pattern]
            for cell in cells:
                label = run_label(pattern, cell.repetition) + cell.remarks
                label += " (not sustained)" if cell.open and not cell.open.get("sustained", True) else ""
                rows.append([label, *_figures(cell.summary)])
                rows += [[f"{JOURNEY_MARK}{name}", *_figures(summary)] for name, summary in cell.journeys.items()]
            counted = [c.summary for c in cells if c.counted]
            if len(counted) > 1:
                strong.add(len(rows))
                rows.append([f"{pattern} {AVERAGE_LABEL}", *_figures(average(counted))])
                for name in dict.fromkeys(name for c in cells if c.counted for name in c.journeys):
                    mine = [c.journeys[name] for c in cells if c.counted and name in c.journeys]
                    strong.add(len(rows))
                    rows.append([f"{JOURNEY_MARK}{name} {AVERAGE_LABEL}", *_figures(average(mine))])
        if any(c.journeys for c in run.cells):
            notes.append(f"{JOURNEY_MARK.strip()} rows: one journey of the --mix, its own figures (the row above is "
                         "the whole mix).")
        if any(WEAK_MARK in row[-1] for row in rows):
            notes.insert(0, f"{WEAK_MARK} p99 rests on fewer than {SAMPLES_FOR_PERCENTILE['p99']} successful journeys.")
        if any(c.status == INCOMPLETE for c in run.cells):
            notes.insert(0, "Incomplete: the run was stopped during this cell; its figures come from the samples "
                         "it wrote and are left out of the average.")
        if any(c.status == WRITE_CUT for c in run.cells):
            notes.insert(0, "Cut by a write error: the results folder refused a write during this cell (a full disk, "
                         "say), so the run stopped; its figures come from the samples it could write and are left "
                         "out of the average.")
        if any(c.status == STOPPED for c in run.cells):
            notes.insert(0, "Stopped by the user: someone stopped the run during this cell (the web UI's Stop or "
                         "Locust's STOP button); its figures come from its samples and are left out of the average.")
        tables.append(Table(backend, ["", "Tests", "Errors", "Mean Test Time (ms)", "SD (ms)", "TPS", "Peak TPS",
                                      "p50 (ms)", "p99 (ms)"], rows, strong, notes))
    return tables


def overview_table(results: Results) -> Table:
    """Backend × pattern → average TPS (2012's table 4-13); marked where a repetition had errors."""
    rows = []
    marked = ranged = degraded_seen = False
    for backend, run in results.runs.items():
        averages = run.averages()
        row = [backend]
        for pattern in results.patterns:
            summary = averages.get(pattern)
            if summary is None:
                row.append(MISSING)
                continue
            flag = summary.errors > 0
            marked |= flag
            spread = tps_range(results, backend, pattern)
            ranged |= spread is not None
            shown = f" ({_tps(spread[0])}–{_tps(spread[1])})" if spread else ""
            degraded = any(c.degraded for c in run.cells if c.pattern == pattern and c.counted)
            degraded_seen |= degraded
            row.append(_tps(summary.tps) + shown + (WEAK_MARK if flag else "") + (DEGRADED_MARK if degraded else ""))
        rows.append(row)
    notes = ["Average TPS (successful journeys per second) over each pattern's repetitions"
             + ("; in brackets the lowest and highest repetition." if ranged else ".")]
    if marked:
        notes.append(f"{WEAK_MARK} errors in at least one repetition: TPS counts successful journeys only.")
    if degraded_seen:
        notes.append(f"{DEGRADED_MARK.strip()}: a worker was lost (with its users and journeys) or a lab component "
                     "was down during at least one repetition (see the findings).")
    return Table("Average TPS", ["backend", *(f"{p} TPS" for p in results.patterns)], rows, notes=notes)


def checks_table(results: Results) -> Table | None:
    """Backend × Test 1–3 (2012's table 4-1), or None when the folder holds no checks (a single run).

    On lab targets a × that the 2012 table expects of the backend's design is marked so: it is the
    design's limit, not a defect of the cluster.
    """
    if not results.checks:
        return None
    tests = list(dict.fromkeys(c.get("test", "?") for checks in results.checks.values() for c in checks))
    rows = []
    expected_seen = False
    for backend, checks in results.checks.items():
        by_test = {c.get("test"): c for c in checks}
        marks = []
        for index, test in enumerate(tests):
            mark = _mark(by_test.get(test))
            if mark == FAIL_MARK and not design_expects(results, backend, index, passed=True):
                mark += EXPECTED_MARK
                expected_seen = True
            marks.append(mark)
        rows.append([backend, *marks])
    notes = [f"{PASS_MARK} passed, {FAIL_MARK} failed. Test 1: each node authenticates; Test 2: SSO via node A is "
             "honoured by node B; Test 3: login form from node A, credentials posted to node B."]
    if expected_seen:
        notes.append(f"{FAIL_MARK}{EXPECTED_MARK} expected for this design (the 2012 report's table, which the lab "
                     "reproduces): the login conversation or the SSO session lives in one node.")
    return Table("Cluster checks", ["backend", *tests], rows, notes=notes, centered=True)


def failover_table(results: Results) -> Table | None:
    """Backend × fault: Test 4 and its figures (docs/failover.md), or None when no run had a fault plan."""
    from authbench.cluster.faults.table import HEADER, NOTE, verdict_rows

    rows = verdict_rows({backend: run.document.get("cells", []) for backend, run in results.runs.items()})
    if not rows:
        return None
    return Table("Failover under load (Test 4)", list(HEADER), [list(row) for row in rows], notes=[NOTE])


def checks_evidence_table(results: Results) -> Table | None:
    """What each check saw (pages, reasons, cookie names; never a value), beside the marks."""
    rows = [[backend, str(check.get("test", "?")), _mark(check), "; ".join(check.get("evidence") or [])]
            for backend, checks in results.checks.items() for check in checks]
    return Table("Cluster check evidence", ["backend", "test", "", "evidence"], rows, text=True) if rows else None


def failures_table(results: Results) -> Table | None:
    """Backend × pattern × failure reason: measured journeys, and one failing journey's evidence to open."""
    rows = []
    for backend, run in results.runs.items():
        kept = run.document.get("failures") or {}
        seen: set[str] = set()
        for pattern in results.patterns:
            counts: dict[str, int] = {}
            for cell in run.cells:
                if cell.pattern == pattern:
                    for reason, count in cell.summary.reasons.items():
                        counts[reason] = counts.get(reason, 0) + count
            for reason, count in counts.items():
                seen.add(reason)
                rows.append([backend, pattern, reason, str(count), _example(kept, reason, run, results)])
        for reason in kept:  # failed only during warm-up: no measured journey, but evidence
            if reason not in seen:
                rows.append([backend, "warm-up", reason, "0", _example(kept, reason, run, results)])
    if not rows:
        return None
    notes = ["Measured journeys per reason in each pattern (all repetitions). The example is the first failing "
             "journey kept for that reason, warm-up included: its trail (.txt) beside its last page (.html, "
             "passwords, SAML messages and cookie values removed); the folder holds a few more."]
    return Table("Failures", ["backend", "pattern", "reason", "journeys", "example"], rows, notes=notes, text=True,
                 links={4})


def _example(kept: dict, reason: str, run: Run, results: Results) -> str:
    paths = (kept.get(reason) or {}).get("examples") or []
    return _relative(run.folder / paths[0], results.folder) if paths else "-"


def _relative(path: Path, folder: Path) -> str:
    try:
        return str(path.relative_to(folder))
    except ValueError:
        return str(path)


def distribution_table(results: Results) -> Table:
    """Share of successful journeys per response-time bucket, averaged over repetitions."""
    rows = []
    for backend, run in results.runs.items():
        for pattern, summary in _in_order(run.averages(), results.patterns):
            rows.append([backend, pattern, *(format_share(summary, label) for label in DISTRIBUTION_LABELS)])
    return Table("Response-time distribution", ["backend", "pattern", *(f"{label} %" for label in DISTRIBUTION_LABELS)],
                 rows, notes=["% of successful journeys; <300 means 50–300 ms, <1000 means 300–1000 ms."])


def cpu_tables(results: Results) -> list[Table]:
    """Per backend: mean CPU (% of one core) of each sampled component in each cell, measured phase only."""
    tables = []
    for backend, run in results.runs.items():
        sampled = [c for c in run.cells if c.resources and c.resources.get("components")]
        if not sampled:
            continue
        components = busiest(sampled)
        rows = []
        for cell in sampled:
            parts = cell.resources["components"]
            rows.append([run_label(cell.pattern, cell.repetition),
                         *(_cpu(parts.get(name, {}).get("cpu_pct_mean")) for name in components),
                         "yes" if cell.resources.get("generator_saturated") else "no"])
        notes = ["Mean CPU over the measured phase, % of one core (100 = one core busy); "
                 f"sampled every {sampled[0].resources.get('interval_s', '?')} s."]
        tables.append(Table(f"{backend}: CPU per component", ["cell", *components, "generator saturated"], rows,
                            notes=notes))
    return tables


def busiest(cells: list[Cell]) -> list[str]:
    """Component names by total CPU over the cells, the generator first; at most TOP_COMPONENTS."""
    totals: dict[str, float] = {}
    for cell in cells:
        for name, part in (cell.resources or {}).get("components", {}).items():
            totals[name] = totals.get(name, 0.0) + float(part.get("cpu_pct_mean") or 0.0)
    names = sorted(totals, key=lambda n: (n != "generator", -totals[n]))
    return names[:TOP_COMPONENTS]


def _in_order(averages: dict[str, Summary], patterns: list[str]) -> list[tuple[str, Summary]]:
    return [(p, averages[p]) for p in patterns if p in averages]


def _figures(s: Summary) -> list[str]:
    weak_p99 = s.successes < SAMPLES_FOR_PERCENTILE["p99"]
    return [format_count(s.tests), format_count(s.errors), format_ms(s.mean_ms), format_ms(s.sd_ms), _tps(s.tps),
            _tps(s.peak_tps), format_ms(s.median_ms),
            format_ms(s.p99_ms) + (WEAK_MARK if weak_p99 and s.p99_ms is not None else "")]


def _mark(check: dict | None) -> str:
    if check is None:
        return MISSING
    return PASS_MARK if check.get("passed") else FAIL_MARK


def _tps(value: float) -> str:
    return f"{value:.{TPS_DECIMALS}f}"


def _cpu(value: float | None) -> str:
    return MISSING if value is None else f"{value:.{CPU_DECIMALS}f}"
