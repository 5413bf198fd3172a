"""Refused writes on a real full disk (a small tmpfs): no partial row is left, and the first error reaches the
run's greenlet once, wherever it happened (results.writes)."""

from __future__ import annotations

import csv
import errno
import subprocess
from pathlib import Path
from types import SimpleNamespace

import gevent
import pytest

from authbench.cluster.resources import COLUMNS as RESOURCE_COLUMNS
from authbench.cluster.resources import ResourceSampler
from authbench.events import RunEvents
from authbench.patterns import Pattern
from authbench.results.failures import Evidence, FailureKeeper
from authbench.results.recorder import COLUMNS, SAMPLES_FILE, Recorder, read_samples
from authbench.results.sample import MEASURED, OK, Sample
from authbench.results.writes import RESERVE_FILE, WriteCut, WriteGuard

MAX_ROWS = 100_000  # far more than a small tmpfs takes
WAIT_S = 10.0


def sample(i: int) -> Sample:
    return Sample(start=1795264764.125 + i, duration_ms=12.5, user=i % 3, iteration=i, outcome=OK, reason="",
                  phase=MEASURED, pattern="3x100", repetition=1, account=f"user{i:04d}", detail="x" * (i % 50))


def fill(folder: Path) -> None:
    """Take every byte the file system has left."""
    with (folder / "filler").open("wb", buffering=0) as f:
        try:
            while True:
                f.write(bytes(4096))
        except OSError as exc:
            assert exc.errno == errno.ENOSPC


def whole_rows(path: Path, columns: int) -> list[list[str]]:
    text = path.read_text()
    assert text.endswith("\n")
    rows = list(csv.reader(text.splitlines()))
    assert all(len(row) == columns for row in rows)
    return rows


def test_a_user_greenlets_refused_row_reaches_the_run_greenlet_and_leaves_no_partial_row(small_tmpfs):
    folder = small_tmpfs("32k")
    guard = WriteGuard()  # this greenlet is the run's
    recorder = Recorder(folder, guard=guard)
    recorder.write_summary({"run_id": "r", "cells": []})
    assert (folder / RESERVE_FILE).stat().st_size > 0  # room held back for the last summary.json

    def user() -> None:
        for i in range(MAX_ROWS):
            recorder.record(sample(i))
            gevent.sleep(0)

    guard.arm()
    writer = gevent.spawn(user)
    with pytest.raises(WriteCut):
        gevent.sleep(WAIT_S)
    guard.disarm()
    writer.kill()
    failure = guard.taken()
    assert failure is not None and failure.path == folder / SAMPLES_FILE and failure.error.errno == errno.ENOSPC
    assert recorder.unwritten >= 1
    assert len(list(read_samples(folder / SAMPLES_FILE))) == recorder.count > 0
    assert len(whole_rows(folder / SAMPLES_FILE, len(COLUMNS))) == recorder.count + 1  # the header and whole rows only
    recorder.record(sample(0))  # after the error: counted, not written
    assert len(list(read_samples(folder / SAMPLES_FILE))) == recorder.count
    assert recorder.write_last_summary({"run_id": "r", "write_error": failure.record()}) is None  # the reserve's room
    recorder.close()
    assert not (folder / RESERVE_FILE).exists()


def test_a_refused_row_is_only_remembered_while_the_guard_is_not_armed(small_tmpfs):
    folder = small_tmpfs("8k")
    guard = WriteGuard()
    recorder = Recorder(folder, guard=guard)
    fill(folder)
    gevent.spawn(lambda: [recorder.record(sample(i)) for i in range(MAX_ROWS // 100)]).join()
    gevent.sleep(0.1)  # nothing is delivered: the load is not running
    assert guard.failure is not None and recorder.count < MAX_ROWS // 100
    with pytest.raises(WriteCut):
        guard.check()  # the run's greenlet asks at the end of a cell
    guard.check()  # once
    recorder.close()


def test_failure_evidence_that_does_not_fit_is_not_listed(small_tmpfs):
    folder = small_tmpfs("8k")
    guard = WriteGuard()
    keeper = FailureKeeper(folder, guard=guard)
    fill(folder)
    evidence = Evidence("http 500", "login POST: 500", "user001", ["1. GET 200 /"] * 200, "<html>" + "x" * 9000)
    gevent.spawn(keeper.keep_evidence, evidence).join()
    assert guard.failure is not None and guard.failure.error.errno == errno.ENOSPC
    assert keeper.examples == {"http 500": []}
    assert not list(folder.glob("failures/*.txt"))
    keeper.keep_evidence(evidence)  # after the error: nothing more is tried
    assert keeper.examples == {"http 500": []}


def test_resources_csv_keeps_whole_rows_and_the_run_greenlet_hears_of_it(small_tmpfs):
    folder = small_tmpfs("8k")
    guard = WriteGuard()
    idle = subprocess.Popen(["sleep", "60"])  # a process without children: cheap to read
    try:
        sampler = ResourceSampler({"idle": idle.pid}, folder / "resources.csv")
        sampler.listen(SimpleNamespace(events=RunEvents(), writes=guard))
        sampler.cell_start(Pattern(1, 1), 1, warmup_s=0)
        fill(folder)
        with pytest.raises(WriteCut):  # taken in the run's greenlet (cell_start, measuring): raised there at once
            for _ in range(MAX_ROWS):
                sampler.take()
        assert guard.failure is not None and guard.failure.path == folder / "resources.csv"
        rows = whole_rows(folder / "resources.csv", len(RESOURCE_COLUMNS))
        assert rows[0] == list(RESOURCE_COLUMNS)
        sampler.take()  # after the error: no more rows, no error
        assert whole_rows(folder / "resources.csv", len(RESOURCE_COLUMNS)) == rows
        assert sampler.cell_summary()["components"]  # the readings still summarise the cell
        sampler.stop()
    finally:
        idle.kill()
        idle.wait()
