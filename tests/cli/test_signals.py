"""SIGTERM and SIGINT end `run`, `compare` (with a lab of its own) and a distributed master the same orderly
way: the current cell marked interrupted, samples kept, the lab down, the workers gone, one line, 128+N."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import test_run

from authbench.results.recorder import read_samples

from ports import SIGNALS

lab_env = test_run.lab_env
ROWS_BEFORE_SIGNAL = 10  # measured rows in samples.csv before the signal is sent
WAIT_LIMIT = 90.0  # seconds for a lab to come up and the load to start, under a busy machine
EXIT_WAIT = 40.0  # seconds the command may take to clean up and exit after the signal
LOAD = ["--pattern", "2x100000", "--cell-time-limit", "120s"]


def _start(argv: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "authbench", *argv], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _rows(path: Path) -> int:
    return path.read_text().count("\n") - 1 if path.exists() else 0


def _signal_when_loaded(process: subprocess.Popen, samples: Path, signum: int) -> tuple[str, str]:
    deadline = time.monotonic() + WAIT_LIMIT
    try:
        while _rows(samples) < ROWS_BEFORE_SIGNAL:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the load did not start"
            time.sleep(0.2)
        process.send_signal(signum)
        out, err = process.communicate(timeout=EXIT_WAIT)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return out, err


def _check_run_folder(folder: Path, signum: int) -> None:
    document = json.loads((folder / "summary.json").read_text())
    assert document["interrupted"]["signal"] == signal.Signals(signum).name
    assert document["interrupted"]["cell"] == {"pattern": "2x100000", "repetition": 1}
    assert document["finished"] is None and document["cells"] == []
    samples = list(read_samples(folder / "samples.csv"))
    assert len(samples) >= ROWS_BEFORE_SIGNAL and all(s.outcome == "ok" for s in samples)


def _one_line(err: str, signum: int, *notes: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"authbench: interrupted by {signal.Signals(signum).name}; cell 2x100000 #1 "
                               "marked interrupted"), err
    assert all(note in lines[0] for note in notes), err


def _children(pid: int) -> list[int]:
    tasks = Path(f"/proc/{pid}/task")
    return [int(child) for task in tasks.iterdir() for child in (task / "children").read_text().split()]


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_run(lab_env, tmp_path, signum):
    env = {**os.environ, "AUTHBENCH_LAB_DIR": str(lab_env.run_dir)}
    process = _start(["run", "--target", "lab:local", *LOAD, "--results", str(tmp_path), "--run-id", "r"], env)
    _, err = _signal_when_loaded(process, tmp_path / "r" / "samples.csv", signum)
    assert process.returncode == 128 + signum
    _one_line(err, signum, f"results in {tmp_path / 'r'}")
    _check_run_folder(tmp_path / "r", signum)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_distributed_master(lab_env, tmp_path, signum):
    env = {**os.environ, "AUTHBENCH_LAB_DIR": str(lab_env.run_dir)}
    process = _start(["run", "--target", "lab:local", *LOAD, "--workers", "2", "--results", str(tmp_path),
                      "--run-id", "d"], env)
    samples = tmp_path / "d" / "samples.csv"
    deadline = time.monotonic() + WAIT_LIMIT
    while _rows(samples) < 1 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.2)
    workers = _children(process.pid)
    assert len(workers) == 2, workers
    _, err = _signal_when_loaded(process, samples, signum)
    assert process.returncode == 128 + signum
    _one_line(err, signum, "workers told to stop; 2 worker process(es) ended")
    assert all(_gone(pid) for pid in workers)
    _check_run_folder(tmp_path / "d", signum)
    assert {s.worker for s in read_samples(samples)} - {""}  # each row names its worker


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_compare_with_its_own_lab(tmp_path, signum):
    lab_dir = tmp_path / "lab"
    process = _start(["compare", "--backends", "local", "--lab-dir", str(lab_dir), "--base-port", str(SIGNALS),
                      "--users", "20", *LOAD, "--warmup", "0", "--repeat", "1", "--results", str(tmp_path),
                      "--campaign-id", "c"], dict(os.environ))
    folder = tmp_path / "c"
    _, err = _signal_when_loaded(process, folder / "runs" / "local" / "samples.csv", signum)
    assert process.returncode == 128 + signum
    _one_line(err, signum, f"continue it with --resume {folder}", "the lab this command started is down")
    _check_run_folder(folder / "runs" / "local", signum)
    campaign = json.loads((folder / "campaign.json").read_text())
    assert campaign["finished"] is None and campaign["cells"] == []
    assert not any(_listening(SIGNALS + offset) for offset in (1, 500, 501, 502, 503, 510, 511, 512))
    leftovers = subprocess.run(["pgrep", "-f", str(lab_dir)], capture_output=True, text=True).stdout.split()
    assert leftovers == [], leftovers
