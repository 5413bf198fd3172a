"""A headless run from plan to printed table: results directory, Locust runner, summaries on the go.

Everything a run measures is written as it happens — each sample to `samples.csv` as its journey
ends, `summary.json` after every pattern × repetition and capacity step — so an interrupted run keeps
what it measured.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from locust.env import Environment

from . import metrics
from .events import RunEvents
from .openmodel import report as open_report
from .openmodel.rates import LevelPlan
from .openmodel.runner import run_any
from .patterns import DEFAULT_CELL_TIME_LIMIT, Plan
from .results import journeys, verdicts
from .results.failures import DEFAULT_KEEP, FailureBudget, FailureKeeper, failures_section, format_failures
from .results.provenance import machine, versions
from .results.recorder import SAMPLES_FILE, SUMMARY_FILE, Recorder, keep_cells, results_dir
from .results.summary import Summary, averages_by_pattern, summarize
from .results.table import CUT_SHORT_LABEL, degraded_text, format_runs, run_label
from .results.writes import ResultsWriteError, WriteCut, WriteGuard
from .runner import CellResult, create_environment
from .signals import Interrupted, StoppedByUser, note, stop_record
from .user import JourneyUser, RunContext


@dataclass
class RunReport:
    run_dir: Path
    cells: list[CellResult]
    summaries: list[tuple[str, Summary]]
    failures: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)  # summary.json's `failures`
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)  # top-level findings, e.g. the capacity
    verdicts: dict[str, Any] = dataclasses.field(default_factory=dict)  # summary.json's (results.verdicts)
    records: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # summary.json's `cells`

    @property
    def complete(self) -> bool:
        return all(cell.complete for cell in self.cells)

    @property
    def degraded(self) -> bool:
        return any(cell.degraded for cell in self.cells)


def execute(
    plan: Plan | LevelPlan,
    user_class: type[JourneyUser] | Sequence[type[JourneyUser]],  # a --mix: one per journey
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
    environment: Environment | None = None,
    metrics_port: int | None = None,
    metrics_host: str = metrics.DEFAULT_METRICS_HOST,
    keep_failures: int = DEFAULT_KEEP,
) -> RunReport:
    """Run the plan; `config` describes the run for the record and must hold no secrets.

    `listen` subscribes to the run's events; `resume` continues a run folder, skipping the cells its
    summary.json holds (and the capacity steps it lists) and dropping the samples of a cell that was cut
    off. Without `environment` the run is local (a runner made and shut down here); a caller's environment
    keeps its runner (a master with its workers, see distributed.master). `metrics_port` serves /metrics.
    """
    run_dir = results_dir(results_base, run_id)
    document = _resumed(run_dir) if resume else None
    if document is not None:
        document["config"] = {**(document.get("config") or {}), "max_error_pct": config.get("max_error_pct")}
        done = {(cell["pattern"], cell["repetition"]) for cell in document["cells"]}
        keep_cells(run_dir / SAMPLES_FILE, done)
        plan = dataclasses.replace(plan, skip=frozenset(done))
    else:
        document = {
            "run_id": run_dir.name, "started": time.time(), "finished": None, "config": config,
            "plan": open_report.summary_plan(plan),
            "versions": versions(), "machine": machine(), "cells": [], "averages": {},
        }
    summaries = [(run_label(c["pattern"], c["repetition"]), Summary.from_dict(c["summary"]))
                 for c in document["cells"]]
    cells: list[CellResult] = []
    current: dict[str, Any] = {}  # the cell running now, for the record of an interruption

    def failures() -> dict[str, Any]:
        totals: dict[str, int] = {}
        for cell in document["cells"]:
            for reason, count in cell["summary"].get("reasons", {}).items():
                totals[reason] = totals.get(reason, 0) + count
        return failures_section(totals, keeper.examples)

    mixed = journeys.names(config)
    guard = WriteGuard()  # a refused write anywhere ends the run here (results.writes)
    keeper = FailureKeeper(run_dir, keep_failures, guard)
    recorder: Recorder | None = None
    own = environment is None
    try:
        recorder = Recorder(run_dir, target=str(config.get("target", "")), guard=guard)
        events: RunEvents | None = None  # the run's, once its environment is there

        def save() -> None:
            """summary.json with its verdicts, and the verdicts to whoever shows them live."""
            document["verdicts"] = verdicts.compute(document)
            recorder.write_summary(document)
            if events is not None:
                events.verdicts.fire(verdicts=document["verdicts"])

        save()

        def cell_done(cell: CellResult) -> None:
            guard.check()  # a row of this cell was not written: it is cut, not done
            summary = summarize(cell.samples)
            label = run_label(cell.pattern.label, cell.repetition) + ("" if cell.complete else CUT_SHORT_LABEL) \
                + (" (degraded)" if cell.degraded else "") + open_report.label_suffix(cell)
            summaries.append((label, summary))
            cells.append(cell)
            entry = {"pattern": cell.pattern.label, "repetition": cell.repetition, "complete": cell.complete,
                     "summary": summary.to_dict(), "steps": cell.steps, **(cell_extras() if cell_extras else {})}
            if cell.degraded:
                entry["degraded"] = cell.degraded
            if mixed:  # --mix: each journey's own figures
                entry["journeys"] = journeys.by_journey(cell.samples, mixed)
            entry.update(open_report.cell_record(cell))
            document["cells"].append(entry)
            document["averages"] = {k: v.to_dict() for k, v in averages_by_pattern(document["cells"]).items()}
            if mixed:
                document["journey_averages"] = journeys.averages(document["cells"])
            document["failures"] = failures()
            save()
            say(f"{label}: {summary.tests} tests, {summary.errors} errors, {_tps(summary)} TPS, "
                f"mean {_ms(summary.mean_ms)} ms{_remark(cell)}")

        if environment is None:
            environment = create_environment(user_class, settings)
            environment.create_local_runner()
        environment.authbench.failures = FailureBudget(keep_failures)
        environment.authbench.writes = guard
        events = environment.authbench.events
        events.verdicts.fire(verdicts=document["verdicts"])  # a resumed run's, or the empty panel

        def cell_start(pattern: Any, repetition: int, **_: Any) -> None:
            current.update(pattern=pattern.label, repetition=repetition)

        events.sample.add_listener(recorder.record)
        events.cell_start.add_listener(cell_start)
        events.cell_stop.add_listener(cell_done)
        events.failure.add_listener(keeper.keep_evidence)
        if listen is not None:
            listen(environment.authbench)
        server = metrics.serve(environment, metrics_port, metrics_host) if metrics_port is not None else None

        def progress(extra: dict[str, Any]) -> None:  # the capacity search's steps, as they are measured
            document.update(extra)
            save()

        try:
            guard.arm()
            extra = run_any(environment, plan, cell_time_limit=cell_time_limit, searched=document.get("capacity"),
                            progress=progress)
            guard.check()  # one the hub had not delivered yet
            document.update(extra)
        except (Interrupted, StoppedByUser) as exc:
            guard.disarm()
            _record_interruption(document, current, cells, exc, run_dir)
            document["verdicts"] = verdicts.compute(document)
            lost = recorder.write_last_summary(document)
            if lost is not None:
                note(exc, f"{SUMMARY_FILE} could not record it: {lost.strerror or lost}")
            raise
        finally:
            guard.disarm()
            events.sample.remove_listener(recorder.record)  # a caller's environment may run again
            events.cell_start.remove_listener(cell_start)
            events.cell_stop.remove_listener(cell_done)
            events.failure.remove_listener(keeper.keep_evidence)
            if server is not None:
                server.shutdown()
                server.server_close()
            if own:
                environment.runner.quit()
        guard.check()  # a straggler's row lost while the runner stopped
        document["finished"] = time.time()
        document["failures"] = failures()
        save()
    except WriteCut:
        guard.disarm()
        if not own and environment is not None:
            environment.runner.stop()  # a caller's runner (a master, the web UI's): its load ends now too
        document["failures"] = failures()
        raise ResultsWriteError(_record_write_cut(document, current, cells, guard, recorder)) from None
    finally:
        guard.close()
        if recorder is not None:
            recorder.close()
    return RunReport(run_dir, cells, summaries, document["failures"], extra, document["verdicts"], document["cells"])


def _record_interruption(document: dict[str, Any], current: dict[str, Any], cells: list[CellResult],
                         exc: BaseException, run_dir: Path) -> None:
    """Mark the cell a signal or the user cut off: its samples stay in samples.csv, it gets no summary entry."""
    cell = None
    if current and not any((c.pattern.label, c.repetition) == (current["pattern"], current["repetition"])
                           for c in cells):
        cell = dict(current)
    document["interrupted"] = {**stop_record(exc), "at": time.time(), "cell": cell}
    done = f"cell {run_label(cell['pattern'], cell['repetition'])} marked interrupted" if cell else "between cells"
    note(exc, f"{done}, {len(cells)} cell(s) finished in this run; results in {run_dir}")


def _record_write_cut(document: dict[str, Any], current: dict[str, Any], cells: list[CellResult], guard: WriteGuard,
                      recorder: Recorder | None) -> str:
    """Mark the cell a refused write cut (its written rows stay in samples.csv, it gets no summary entry) and
    say it in one line: the folder, the error, what was kept."""
    failure = guard.taken()
    assert failure is not None
    cell = None
    if current and not any((c.pattern.label, c.repetition) == (current["pattern"], current["repetition"])
                           for c in cells):
        cell = dict(current)
    written, unwritten = (recorder.count, recorder.unwritten) if recorder is not None else (0, 0)
    document["write_error"] = {**failure.record(), "at": time.time(), "cell": cell, "rows_written": written,
                               "rows_not_written": unwritten}
    where = (f"cell {run_label(cell['pattern'], cell['repetition'])} cut by a write error" if cell
             else f"{len(cells)} cell(s) finished" if cells else "before any journey")
    kept = f"{written} row(s) kept in {SAMPLES_FILE}" + (f", {unwritten} not written" if unwritten else "")
    document["verdicts"] = verdicts.compute(document)
    lost = recorder.write_last_summary(document) if recorder is not None else None
    record = (f"; {SUMMARY_FILE} could not record it: {lost.strerror or lost}" if lost
              else f"; {SUMMARY_FILE} says so")
    return f"{failure.describe()}; the run stopped: {where}, {kept}{record}"


def _resumed(run_dir: Path) -> dict[str, Any] | None:
    """The summary.json of a run folder to continue, or None for a fresh one."""
    try:
        document = json.loads((run_dir / SUMMARY_FILE).read_text())
    except FileNotFoundError:
        return None
    document["finished"] = None
    document.pop("interrupted", None)  # the cell it names runs again now
    document.pop("write_error", None)
    return document


def _remark(cell: CellResult) -> str:
    remarks = [] if cell.complete else ["cut short by the time limit"]
    if cell.degraded:
        remarks.append(f"degraded: {degraded_text(cell.degraded)}")
    remarks += open_report.remarks(cell)
    return f" ({'; '.join(remarks)})" if remarks else ""


def _tps(summary: Summary) -> str:
    return "-" if summary.tps is None else f"{summary.tps:.2f}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def print_report(report: RunReport, say: Callable[[str], None] = print) -> None:
    say("")
    say(format_runs(report.summaries))
    mixed = journeys.format_table(report.records)
    if mixed:
        say(mixed)
    for line in format_failures(report.failures, report.run_dir):
        say(line)
    tables = open_report.format_report(report.cells, report.extra)
    if tables:
        say(tables)
    say(f"\nresults: {report.run_dir}")
    panel = verdicts.lines(report.verdicts)
    if panel:
        say("")
        for line in panel:
            say(line)
    sys.stdout.flush()
