"""A headless run from plan to printed table: results directory, Locust runner, summaries on the go.

Everything a run measures is written as it happens — each sample to `samples.csv` as its journey
ends, `summary.json` after every pattern × repetition — so an interrupted run keeps what it measured.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import __version__
from .patterns import Plan
from .results.recorder import SAMPLES_FILE, SUMMARY_FILE, Recorder, keep_cells, results_dir
from .results.summary import Summary, average, summarize
from .results.table import format_runs, run_label
from .runner import CellResult, run_plan_locally
from .users.journey import JourneyUser, RunContext

DEFAULT_CELL_TIME_LIMIT = 3600.0  # seconds one pattern × repetition may take before it is cut short


@dataclass
class RunReport:
    run_dir: Path
    cells: list[CellResult]
    summaries: list[tuple[str, Summary]]

    @property
    def complete(self) -> bool:
        return all(cell.complete for cell in self.cells)


def machine() -> dict[str, Any]:
    return {"python": platform.python_version(), "platform": platform.platform(), "cores": os.cpu_count(),
            "node": platform.node()}


def versions() -> dict[str, str]:
    import locust

    return {"authbench": __version__, "locust": locust.__version__}


def execute(
    plan: Plan,
    user_class: type[JourneyUser],
    settings: Any,
    *,
    config: dict[str, Any],
    results_base: Path,
    run_id: str | None = None,
    cell_time_limit: float = DEFAULT_CELL_TIME_LIMIT,
    say: Callable[[str], None] = print,
    cell_extras: Callable[[], dict[str, Any]] | None = None,
    listen: Callable[[RunContext], None] | None = None,
    resume: bool = False,
) -> RunReport:
    """Run the plan; `config` describes the run for the record and must hold no secrets.

    `listen` subscribes to the run's events; `resume` continues a run folder, skipping the cells its
    summary.json holds and dropping the samples of a cell that was cut off.
    """
    run_dir = results_dir(results_base, run_id)
    document = _resumed(run_dir) if resume else None
    if document is not None:
        done = {(cell["pattern"], cell["repetition"]) for cell in document["cells"]}
        keep_cells(run_dir / SAMPLES_FILE, done)
        plan = dataclasses.replace(plan, skip=frozenset(done))
    else:
        document = {
            "run_id": run_dir.name, "started": time.time(), "finished": None, "config": config,
            "plan": {"patterns": [p.label for p in plan.patterns], "warmup_s": plan.warmup, "repeat": plan.repeat},
            "versions": versions(), "machine": machine(), "cells": [], "averages": {},
        }
    summaries = [(run_label(c["pattern"], c["repetition"]), Summary.from_dict(c["summary"]))
                 for c in document["cells"]]
    cells: list[CellResult] = []
    with Recorder(run_dir) as recorder:
        recorder.write_summary(document)

        def cell_done(cell: CellResult) -> None:
            summary = summarize(cell.samples)
            label = run_label(cell.pattern.label, cell.repetition)
            summaries.append((label, summary))
            cells.append(cell)
            document["cells"].append({"pattern": cell.pattern.label, "repetition": cell.repetition,
                                      "complete": cell.complete, "summary": summary.to_dict(),
                                      "steps": cell.steps, **(cell_extras() if cell_extras else {})})
            document["averages"] = {k: v.to_dict() for k, v in _averages(document["cells"]).items()}
            recorder.write_summary(document)
            cut = "" if cell.complete else " (cut short by the time limit)"
            say(f"{label}: {summary.tests} tests, {summary.errors} errors, {_tps(summary)} TPS, "
                f"mean {_ms(summary.mean_ms)} ms{cut}")

        def subscribe(context: RunContext) -> None:
            context.events.sample.add_listener(recorder.record)
            context.events.cell_stop.add_listener(cell_done)
            if listen is not None:
                listen(context)

        run_plan_locally(plan, user_class, settings, cell_time_limit=cell_time_limit, listen=subscribe)
        document["finished"] = time.time()
        recorder.write_summary(document)
    return RunReport(run_dir, cells, summaries)


def _averages(cells: list[dict[str, Any]]) -> dict[str, Summary]:
    by_pattern: dict[str, list[Summary]] = {}
    for cell in cells:
        by_pattern.setdefault(cell["pattern"], []).append(Summary.from_dict(cell["summary"]))
    return {pattern: average(items) for pattern, items in by_pattern.items()}


def _resumed(run_dir: Path) -> dict[str, Any] | None:
    """The summary.json of a run folder to continue, or None for a fresh one."""
    try:
        document = json.loads((run_dir / SUMMARY_FILE).read_text())
    except FileNotFoundError:
        return None
    document["finished"] = None
    return document


def _tps(summary: Summary) -> str:
    return "-" if summary.tps is None else f"{summary.tps:.2f}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def print_report(report: RunReport, say: Callable[[str], None] = print) -> None:
    say("")
    say(format_runs(report.summaries))
    say(f"\nresults: {report.run_dir}")
    sys.stdout.flush()
