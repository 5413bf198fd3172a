"""privacyIDEA's user-cache benchmark, its blog's method: figures from the samples, no servers touched here.

2N sequential /validate/check of user000..N-1, then the same users again, once with the user cache off and
once on: with it on, the first pass fills the cache (cold) and the second reads it (warm). The figure per
scenario is the median response time of its pass; the plot is response time against request index, where a
cache shows as the drop after the first N requests.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from ...results.recorder import read_samples
from ...results.sample import MEASURED

OFF, ON = "cache off", "cache on"


@dataclass(frozen=True)
class Pass:
    scenario: str  # "cache off, first pass", "cache on, cold (first pass)", …
    checks: int
    median_ms: float | None


def durations(run_dir: Path) -> tuple[list[float], int]:
    """A run folder's measured checks in the order they were sent: (response times in ms, errors)."""
    samples = sorted((s for s in read_samples(run_dir / "samples.csv") if s.phase == MEASURED),
                     key=lambda s: s.start)
    return [s.duration_ms for s in samples], sum(1 for s in samples if s.outcome != "ok")


def passes(series: dict[str, list[float]], users: int) -> list[Pass]:
    """Each scenario's two passes of `users` checks, named as the blog names them."""
    names = {OFF: ("cache off, first pass", "cache off, second pass"),
             ON: ("cache on, cold (first pass)", "cache on, warm (second pass)")}
    out = []
    for scenario, times in series.items():
        for name, part in zip(names[scenario], (times[:users], times[users:]), strict=True):
            out.append(Pass(name, len(part), statistics.median(part) if part else None))
    return out


def table(rows: list[Pass]) -> list[str]:
    lines = ["| scenario | checks | median ms |", "|---|---:|---:|"]
    lines += [f"| {row.scenario} | {row.checks} | {'-' if row.median_ms is None else f'{row.median_ms:.1f}'} |"
              for row in rows]
    return lines


def plot(series: dict[str, list[float]], users: int, path: Path) -> None:
    """Response time against request index, a line per scenario (matplotlib's object API: no global state)."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(9, 4))
    axis = figure.subplots()
    for name, times in series.items():
        axis.plot(range(len(times)), times, linewidth=0.8, label=name)
    axis.axvline(users, color="grey", linestyle=":", label="second pass starts")
    axis.set_xlabel("request index")
    axis.set_ylabel("response time (ms)")
    axis.set_ylim(bottom=0)
    axis.set_title("privacyIDEA /validate/check, SPASS, one client, every user twice", loc="left")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
