"""Plain-text tables for the terminal, laid out like the 2012 report's Grinder tables.

Plain text rather than a table library: the output goes to terminals, CI logs and notes, and the layout
(right-aligned numbers, fixed decimals) is all that is needed.
"""

from __future__ import annotations

from collections.abc import Callable

from authbench.results.summary import DISTRIBUTION_LABELS, Summary, average

MS_DECIMALS = 1
TPS_DECIMALS = 2
PCT_DECIMALS = 1
COUNT_DECIMALS = 1  # only for averaged counts that are not whole numbers
COLUMN_GAP = "  "
MISSING = "-"
ERROR_MARK = "*"
AVERAGE_LABEL = "average"
CUT_SHORT_LABEL = " (cut short)"  # after a repetition the cell time limit ended: shown, not averaged
COMPONENTS_DOWN = "components_down"  # in a cell's `degraded`: the lab components down during it, not by the fault plan

Column = tuple[str, Callable[[Summary], str]]


def run_label(pattern: str, repetition: int) -> str:
    """'10x200 #1', the row label format_runs expects for one repetition."""
    return f"{pattern or 'run'} #{repetition}"


def degraded_text(lost: dict) -> str:
    """Why a cell is degraded: the workers a distributed run lost, the lab components that were down in it."""
    parts = []
    if "workers_lost" in lost:
        parts.append(f"{lost['workers_lost']} worker(s) lost with {lost.get('users_lost', '?')} users and "
                     f"{lost.get('journeys_lost', '?')} journeys")
    if lost.get(COMPONENTS_DOWN):
        parts.append(f"lab component {', '.join(lost[COMPONENTS_DOWN])} down (not in the fault plan)")
    return "; ".join(parts)


def format_runs(rows: list[tuple[str, Summary]], *, show_warnings: bool = True) -> str:
    """One row per pattern × repetition, grouped by pattern, each group closed by its average row.

    A group of a single repetition gets no average row (it would repeat the row); a repetition labelled
    CUT_SHORT_LABEL is not averaged. Warnings of the repetitions follow the table, so a weak figure is
    never shown without its caveat.
    """
    lines_in: list[tuple[str, Summary]] = []
    group_ends: set[int] = set()  # a rule after each pattern's rows keeps the groups apart
    for pattern, group in _by_pattern(rows).items():
        lines_in.extend(group)
        counted = [summary for label, summary in group if CUT_SHORT_LABEL not in label]
        if len(counted) > 1:
            label = f"{pattern} {AVERAGE_LABEL}" if pattern else AVERAGE_LABEL
            lines_in.append((label, average(counted)))
        group_ends.add(len(lines_in) - 1)
    group_ends.discard(len(lines_in) - 1)
    columns = _run_columns()
    header = ["", *(name for name, _ in columns)]
    body = [[label, *(render(summary) for _, render in columns)] for label, summary in lines_in]
    text = _render(header, body, rule_after=group_ends)
    notes = [
        "Times in ms over successful journeys (SD: population, as Grinder); TPS counts successful journeys.",
        "Tests include errors (Grinder's Tests column = Tests - Errors).",
        "Last four columns: % of successful journeys; <300 means 50-300 ms, <1000 means 300-1000 ms.",
    ]
    if show_warnings:
        notes += [f"{label}: {warning}" for label, summary in rows for warning in summary.warnings]
    return "\n".join([text, "", *notes]) + "\n"


def format_comparison(by_target: dict[str, list[tuple[str, Summary]]]) -> str:
    """Target × pattern -> average TPS over the repetitions (2012's table 4-13), targets side by side.

    A cell is marked with ERROR_MARK when any repetition behind it had errors.
    """
    grouped = {target: _by_pattern(rows) for target, rows in by_target.items()}
    patterns: list[str] = []
    for groups in grouped.values():
        patterns.extend(p for p in groups if p not in patterns)
    cells: list[list[tuple[str, bool]]] = []  # (TPS, had errors) per target
    for pattern in patterns:
        row = []
        for groups in grouped.values():
            group = groups.get(pattern)
            if not group:
                row.append((MISSING, False))
                continue
            tps = average([summary for _, summary in group]).tps
            row.append((f"{tps:.{TPS_DECIMALS}f}", any(summary.errors for _, summary in group)))
        cells.append(row)
    marked = any(flag for row in cells for _, flag in row)
    # Unmarked cells get a blank where the mark would be, so the decimal points stay in line.
    pad = " " * len(ERROR_MARK) if marked else ""
    body = [
        [pattern or MISSING, *(text + (ERROR_MARK if flag else pad) for text, flag in row)]
        for pattern, row in zip(patterns, cells, strict=True)
    ]
    text = _render(["pattern", *by_target], body, rule_after=set())
    notes = ["Average TPS (successful journeys per second) over each pattern's repetitions."]
    if marked:
        notes.append(f"{ERROR_MARK} errors in at least one repetition.")
    return "\n".join([text, "", *notes]) + "\n"


def _run_columns() -> list[Column]:
    columns: list[Column] = [
        ("Tests", lambda s: format_count(s.tests)),
        ("Errors", lambda s: format_count(s.errors)),
        ("Mean", lambda s: format_ms(s.mean_ms)),
        ("SD", lambda s: format_ms(s.sd_ms)),
        ("TPS", lambda s: f"{s.tps:.{TPS_DECIMALS}f}"),
        ("Peak TPS", lambda s: f"{s.peak_tps:.{TPS_DECIMALS}f}"),
        ("Median", lambda s: format_ms(s.median_ms)),
        ("p90", lambda s: format_ms(s.p90_ms)),
        ("p99", lambda s: format_ms(s.p99_ms)),
        ("p99.9", lambda s: format_ms(s.p999_ms)),
        ("Min", lambda s: format_ms(s.min_ms)),
        ("Max", lambda s: format_ms(s.max_ms)),
    ]
    for label in DISTRIBUTION_LABELS:
        heading = label.removesuffix(" ms") + "%"
        columns.append((heading, lambda s, label=label: format_share(s, label)))
    return columns


def _by_pattern(rows: list[tuple[str, Summary]]) -> dict[str, list[tuple[str, Summary]]]:
    groups: dict[str, list[tuple[str, Summary]]] = {}
    for label, summary in rows:
        pattern = summary.pattern or label.partition(" #")[0]
        groups.setdefault(pattern, []).append((label, summary))
    return groups


def _render(header: list[str], body: list[list[str]], rule_after: set[int]) -> str:
    """First column left-aligned (labels), every other column right-aligned (numbers)."""
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = (cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True))
        return COLUMN_GAP.join([first, *rest]).rstrip()

    rule = COLUMN_GAP.join("-" * width for width in widths)
    out = [line(header), rule]
    for i, row in enumerate(body):
        out.append(line(row))
        if i in rule_after:
            out.append(rule)
    return "\n".join(out)


def format_count(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.{COUNT_DECIMALS}f}"


def format_ms(value: float | None) -> str:
    return MISSING if value is None else f"{value:.{MS_DECIMALS}f}"


def format_share(summary: Summary, label: str) -> str:
    if not summary.successes:
        return MISSING
    return f"{summary.distribution_pct.get(label, 0.0):.{PCT_DECIMALS}f}"
