"""A results folder that fills up (issue 25, item 1): the run stops at once and says so in one line, every
row it wrote stays valid, summary.json and `authbench report` say the run was cut by a write error.

The disk is a real one: a small tmpfs, the way the fault review met it (root only; skipped elsewhere).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from authbench.results.recorder import read_samples

STOP_WITHIN_S = 60.0  # the 4x60 run at --pace 0.2s takes 12 s when nothing stops it; a full disk stops it far sooner


def _run(argv: list[str], lab) -> subprocess.CompletedProcess:
    env = {**os.environ, "AUTHBENCH_LAB_DIR": str(lab.run_dir)}
    return subprocess.run([sys.executable, "-m", "authbench", *argv], env=env, capture_output=True, text=True,
                          timeout=STOP_WITHIN_S + 60)


def _report(folder: Path, out: Path, lab) -> str:
    done = _run(["report", str(folder), "--out", str(out)], lab)
    assert done.returncode == 0, done.stderr
    return (out / "report.md").read_text()


def _valid_rows(samples: Path) -> list:
    """Every line of samples.csv a whole row: the file ends in a newline, each row has every column and parses."""
    text = samples.read_text()
    assert text.endswith("\n")
    header, *rows = list(csv.reader(text.splitlines()))
    assert rows and all(len(row) == len(header) for row in rows)
    parsed = list(read_samples(samples))
    assert len(parsed) == len(rows)
    return parsed


def test_a_full_disk_stops_the_run_in_one_line_and_keeps_every_row_written(lab, small_tmpfs, tmp_path):
    results = small_tmpfs("32k")
    began = time.monotonic()
    # The lab's SP by its URL: the review's run, without the cluster's resources.csv (a lab: target samples its
    # servers' CPU, whose rows would take the small disk's room before the journeys' do)
    done = _run(["run", "--target", lab.sp_url("stateless") + "/secure/", "--ca-bundle", str(lab.ca_cert),
                 "--accounts-template", "user{000..199}", "--pattern", "4x60", "--pace", "0.2s", "--results",
                 str(results), "--run-id", "full"], lab)
    took = time.monotonic() - began
    folder = results / "full"
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stdout + done.stderr and "OSError" not in done.stderr, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"authbench: error: cannot write samples.csv in {folder}: No space left on device "
                           "(ENOSPC); the run stopped: cell 4x60 #1 cut by a write error, "), line
    assert line.endswith("summary.json says so"), line
    assert took < 12, took  # stopped at once, not after the planned 12 s of load

    samples = _valid_rows(folder / "samples.csv")
    assert all(s.pattern == "4x60" and s.outcome == "ok" for s in samples)
    if (folder / "resources.csv").exists():
        assert (folder / "resources.csv").read_text().endswith("\n")
    document = json.loads((folder / "summary.json").read_text())
    cut = document["write_error"]
    assert (cut["file"], cut["errno"], cut["cell"]) == ("samples.csv", "ENOSPC", {"pattern": "4x60", "repetition": 1})
    assert cut["rows_written"] == len(samples) and f"{len(samples)} row(s) kept in samples.csv" in line
    assert document["cells"] == [] and document["finished"] is None and "interrupted" not in document
    assert not (folder / ".space-reserve").exists()

    report = _report(folder, tmp_path / "report", lab)
    assert "The run was cut by a write error: its results folder refused a write to samples.csv (No space left " \
           "on device)" in report
    assert "4x60 #1 (cut by a write error)" in report
    assert "stopped during it" not in report and "interrupted" not in report


def test_a_summary_that_no_longer_fits_stops_the_run_after_the_cell_it_recorded(lab, small_tmpfs, tmp_path):
    """Between cells the disk fills with summary.json's growth: the finished cells are kept as done, the rest is
    not run, and the report counts what was finished."""
    results = small_tmpfs("64k")
    done = _run(["run", "--target", "lab:stateless", "--pattern", "1x1", "--repeat", "100", "--results",
                 str(results), "--run-id", "cells"], lab)
    folder = results / "cells"
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"authbench: error: cannot write summary.json in {folder}: No space left on device"), line
    document = json.loads((folder / "summary.json").read_text())
    finished = len(document["cells"])
    assert 0 < finished < 100 and f"{finished} cell(s) finished" in line
    assert document["write_error"]["file"] == "summary.json" and document["write_error"]["cell"] is None
    samples = _valid_rows(folder / "samples.csv")
    assert len(samples) == finished  # one journey per finished cell, none of a cell not recorded

    report = _report(folder, tmp_path / "report", lab)
    assert "The run was cut by a write error: its results folder refused a write to summary.json" in report
    assert "stopped during it" not in report
