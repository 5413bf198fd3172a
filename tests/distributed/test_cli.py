"""`authbench run --workers/--worker` against the session lab: real master and worker processes, kill -9."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import psutil
import pytest

from authbench.cli import main
from authbench.report import write_report
from authbench.results.recorder import read_samples
from authbench.results.summary import summarize

from ports import DISTRIBUTED

MASTER_PORT = DISTRIBUTED + 20  # this file's ports: +20..+29
METRICS_PORT = DISTRIBUTED + 21
KILL_AFTER_ROWS = 20
WAIT_LIMIT = 90.0  # seconds any subprocess in this file may take
MASTER_TIMEOUT = "5s"  # the workers' patience with a silent master: short for the test, not so short that a
# crowded machine's scheduling delays look like a dead master


@pytest.fixture
def lab_env(lab, monkeypatch):
    monkeypatch.setenv("AUTHBENCH_LAB_DIR", str(lab.run_dir))
    return lab


def _workers_of(port: int) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if "--worker" in cmdline and "--master-port" in cmdline and str(port) in cmdline:
            found.append(process)
    return found


def test_workers_run_exact_patterns_write_one_samples_file_and_leave_no_process(lab_env, tmp_path, capsys):
    code = main(["run", "--target", "lab:stateless", "--pattern", "3x4,2x3", "--warmup", "1s", "--workers", "2",
                 "--master-bind-port", str(MASTER_PORT), "--metrics-port", str(METRICS_PORT),
                 "--results", str(tmp_path), "--run-id", "d"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "started 2 worker processes" in out
    samples = list(read_samples(tmp_path / "d" / "samples.csv"))
    for label, users, runs in (("3x4", 3, 4), ("2x3", 2, 3)):
        measured = [s for s in samples if s.pattern == label and s.phase == "measured"]
        assert sorted((s.user, s.iteration) for s in measured) == [(u, i) for u in range(users) for i in range(runs)]
        warm = [s for s in samples if s.pattern == label and s.phase == "warmup"]
        assert warm and max(s.start for s in warm) < min(s.start for s in measured)
    document = json.loads((tmp_path / "d" / "summary.json").read_text())
    assert [c["summary"]["tests"] for c in document["cells"]] == [12, 6]
    assert all("IdP login POST" in c["steps"] and "degraded" not in c for c in document["cells"])
    assert "pw-user" not in (tmp_path / "d" / "samples.csv").read_text() + json.dumps(document)
    assert _workers_of(MASTER_PORT) == []  # reaped with the run
    with pytest.raises(OSError):  # and /metrics went away with it
        urllib.request.urlopen(f"http://127.0.0.1:{METRICS_PORT}/metrics", timeout=2)


def test_kill_9_of_the_master_workers_exit_and_samples_stay_readable(lab_env, tmp_path):
    log = tmp_path / "stderr.txt"
    with log.open("w") as stderr:
        master = subprocess.Popen(
            [sys.executable, "-m", "authbench", "run", "--target", "lab:local", "--pattern", "2x100000",
             "--workers", "2", "--master-bind-port", str(MASTER_PORT + 2), "--master-timeout", MASTER_TIMEOUT,
             "--cell-time-limit", "60s", "--results", str(tmp_path), "--run-id", "k"],
            stdout=subprocess.DEVNULL, stderr=stderr)
    csv_path = tmp_path / "k" / "samples.csv"
    deadline = time.monotonic() + WAIT_LIMIT
    try:
        while time.monotonic() < deadline and master.poll() is None:
            if csv_path.exists() and csv_path.read_text().count("\n") > KILL_AFTER_ROWS + 1:  # + the header
                break
            time.sleep(0.2)
        assert master.poll() is None, log.read_text()[-2000:]
        workers = psutil.Process(master.pid).children()
        assert len(workers) == 2
        master.send_signal(signal.SIGKILL)
        master.wait(timeout=10)
        killed_at = time.monotonic()
        gone, alive = psutil.wait_procs(workers, timeout=20)
    finally:
        for process in _workers_of(MASTER_PORT + 2):
            process.kill()
    assert not alive and time.monotonic() - killed_at < 20  # bounded: the master timeout and a little
    # (their exit status, 1, is not observable here: orphans are reaped by init; their one-line error is)
    lines = [line for line in log.read_text().splitlines() if line.startswith("authbench: error:")]
    assert len(lines) == 2 and all("lost the master at 127.0.0.1" in line for line in lines)
    samples = list(read_samples(csv_path))
    assert len(samples) > KILL_AFTER_ROWS
    summary = summarize([s for s in samples if s.phase == "measured"])
    assert summary.tests == len(samples) and summary.errors == 0
    html, _ = write_report(tmp_path / "k")  # the report works on what the killed master left
    assert "incomplete" in html.read_text() and "2x100000" in html.read_text()


def test_a_worker_that_cannot_reach_the_master_says_so_and_exits_2(lab_env):
    began = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "authbench", "run", "--worker", "--target", "lab:local", "--master-port",
         str(MASTER_PORT + 4), "--connect-timeout", "2s"],
        capture_output=True, text=True, timeout=WAIT_LIMIT, env={**os.environ})
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert f"cannot reach the authbench master at 127.0.0.1:{MASTER_PORT + 4} within 2 s" in result.stderr
    assert time.monotonic() - began < WAIT_LIMIT


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workers", "0"], "--workers and --expect-workers must be at least 1"),
        (["--worker", "--connect-timeout", "never"], "duration 'never'"),
        (["--workers", "1", "--worker-wait", "0"], "--worker-wait must be more than 0"),
    ],
)
def test_bad_distributed_options_give_one_line_and_exit_2(lab_env, tmp_path, capsys, args, message):
    code = main(["run", "--target", "lab:local", "--pattern", "1x1", "--results", str(tmp_path), *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1


def test_master_port_in_use_is_a_one_line_error(lab_env, tmp_path, capsys):
    import socket

    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", MASTER_PORT + 6))
        blocker.listen()
        code = main(["run", "--target", "lab:local", "--pattern", "1x1", "--workers", "1", "--master-bind-port",
                     str(MASTER_PORT + 6), "--results", str(tmp_path)])
        err = capsys.readouterr().err
    assert code == 2 and f"cannot listen for workers on 127.0.0.1:{MASTER_PORT + 6}" in err
