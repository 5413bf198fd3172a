"""A lab node killed (kill -9) while a run measures, on the session lab: the console names it, summary.json and
the report mark the cell degraded, and the capacity search does not confirm on what is left of the cluster."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import gevent
import pytest

from authbench.cli import main
from authbench.report import write_report
from authbench.results.recorder import read_samples
from authbench_lab import lab as lab_api

NODE = "stateless/idp-b"
WAIT_LIMIT = 60.0  # seconds for the run to reach the moment the node is killed
RESTART_LIMIT = 60.0  # seconds for the killed node's port to free up and the node to start again


@pytest.fixture
def lab_env(lab, monkeypatch):
    monkeypatch.setenv("AUTHBENCH_LAB_DIR", str(lab.run_dir))
    return lab


@pytest.fixture
def killed_node(lab_env):
    """kill(samples_csv, prefix, rows): kill -9 the node (its process group) once `rows` measured journeys of cells
    named `prefix…` are in samples.csv; the node is started again afterwards, for the tests that follow."""
    killer: list[gevent.Greenlet] = []

    def kill(samples: Path, prefix: str, rows: int) -> int:
        pid = lab_api.read_state(lab_env.run_dir)["components"][NODE]["pid"]

        def when_loaded() -> None:
            deadline = time.monotonic() + WAIT_LIMIT
            while time.monotonic() < deadline:
                try:
                    done = sum(s.phase == "measured" and s.pattern.startswith(prefix) for s in read_samples(samples))
                except (FileNotFoundError, ValueError):
                    done = 0
                if done >= rows:
                    os.killpg(pid, signal.SIGKILL)
                    return
                gevent.sleep(0.05)

        killer.append(gevent.spawn(when_loaded))
        return pid

    yield kill
    for greenlet in killer:
        greenlet.kill()
    deadline = time.monotonic() + RESTART_LIMIT
    while True:
        try:
            lab_api.start_component(lab_env.run_dir, NODE)
            break
        except lab_api.LabError:  # its port is held until the last of its workers is gone
            assert time.monotonic() < deadline, f"{NODE} did not start again"
            time.sleep(0.5)


def test_a_node_killed_mid_run_is_named_and_marks_the_cell(killed_node, tmp_path, capsys):
    pid = killed_node(tmp_path / "h" / "samples.csv", "10/s", 10)
    code = main(["run", "--target", "lab:stateless", "--rate", "10/s", "--duration", "4s", "--warmup", "0.5s",
                 "--results", str(tmp_path), "--run-id", "h"])
    out = capsys.readouterr().out
    assert code == 1, out  # a degraded cell, like a lost worker
    assert (f"lab component {NODE} went down during 10/s #1: its process (pid {pid}) ended, not by the fault plan"
            in out)
    assert "10/s #1 (degraded): " in out and f"degraded: lab component {NODE} down (not in the fault plan)" in out
    cell = json.loads((tmp_path / "h" / "summary.json").read_text())["cells"][0]
    assert cell["degraded"] == {"components_down": [NODE]}
    write_report(tmp_path / "h")
    report = (tmp_path / "h" / "report.md").read_text()
    assert f"10/s #1 is degraded: lab component {NODE} down (not in the fault plan); its figures were measured on " \
           "what was left of the cluster." in report


def test_a_capacity_search_does_not_confirm_on_a_degraded_cluster(killed_node, tmp_path, capsys):
    killed_node(tmp_path / "c" / "samples.csv", "max-2-", 3)
    code = main(["capacity", "--target", "lab:stateless", "--slo", "p99<5s,errors<50%", "--start-rate", "4/s",
                 "--growth", "2", "--max-rate", "16/s", "--step-duration", "2s", "--step-warmup", "0",
                 "--results", str(tmp_path), "--run-id", "c"])
    out = capsys.readouterr().out
    assert code == 1, out
    found = json.loads((tmp_path / "c" / "summary.json").read_text())["capacity"]
    assert found["stopped"] and not found["confirmed"] and found["answer"] is None
    assert [(s["rate"], s["stage"], s["passed"]) for s in found["steps"]] == [(4.0, "grow", True), (8.0, "grow", False)]
    assert found["components_down"] == [NODE]
    assert ", confirmed)" not in out
    assert (f"maximum capacity: not confirmed — the search stopped at step 2, on a degraded cluster: lab component "
            f"{NODE} down (not in the fault plan)") in out and "steps: 4/s grow pass, 8/s grow FAIL (degraded)" in out
    write_report(tmp_path / "c")
    report = (tmp_path / "c" / "report.md").read_text()
    assert "No confirmed maximum capacity" in report and "The search stopped: the cluster was degraded" in report
