"""A --mix's figures per journey: each journey's own Tests, errors and percentiles, beside the cell's.

summary.json holds them per cell as `journeys: {NAME: summary}` (the same figures as `summary`, over that
journey's samples only) and per pattern as `journey_averages: {PATTERN: {NAME: average}}`; the console
and the report show them as rows `NAME PATTERN #REP`, and results.verdicts judges each journey's errors.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .sample import Sample
from .summary import Summary, average, summarize
from .table import CUT_SHORT_LABEL, format_runs, run_label


def names(config: dict[str, Any]) -> list[str]:
    """The journeys of the run's mix, in --mix order ([] for a run of one journey)."""
    return [str(entry["name"]) for entry in config.get("mix") or [] if isinstance(entry, dict) and "name" in entry]


def by_journey(samples: Iterable[Sample], journeys: list[str]) -> dict[str, dict[str, Any]]:
    """A cell's `journeys` entry: each journey's summary (a journey without a sample gets an empty one)."""
    groups: dict[str, list[Sample]] = {name: [] for name in journeys}
    for sample in samples:
        groups.setdefault(sample.journey, []).append(sample)
    return {name: summarize(group).to_dict() for name, group in groups.items() if name in journeys}


def averages(cells: Iterable[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """summary.json's `journey_averages`: pattern → journey → the average over its complete repetitions."""
    grouped: dict[str, dict[str, list[Summary]]] = {}
    for cell in cells:
        if not cell.get("complete", True):
            continue
        for name, summary in (cell.get("journeys") or {}).items():
            grouped.setdefault(cell["pattern"], {}).setdefault(name, []).append(Summary.from_dict(summary))
    return {pattern: {name: average(items).to_dict() for name, items in journeys.items()}
            for pattern, journeys in grouped.items()}


def rows(cells: Iterable[dict[str, Any]]) -> list[tuple[str, Summary]]:
    """The console's rows, one per journey × pattern × repetition, grouped per journey and pattern (format_runs
    averages each group)."""
    out = []
    for cell in cells:
        for name, data in (cell.get("journeys") or {}).items():
            summary = Summary.from_dict(data)
            summary.pattern = f"{name} {cell['pattern']}"
            label = f"{name} {run_label(cell['pattern'], cell['repetition'])}"
            out.append((label + ("" if cell.get("complete", True) else CUT_SHORT_LABEL), summary))
    order = {key: i for i, key in enumerate(dict.fromkeys(summary.pattern for _, summary in out))}
    return sorted(out, key=lambda row: order[row[1].pattern])


def format_table(cells: Iterable[dict[str, Any]]) -> str:
    """The per-journey table under the run's, or "" for a run of one journey."""
    found = rows(cells)
    return "per journey of the mix:\n" + format_runs(found, show_warnings=False) if found else ""
