"""Test 4 on the session lab: returning users classified, fault plans played and analysed, bad plans refused.

Every fault test restarts what it stopped (in the plan, and again in `finally`), since the lab is shared.
"""

from __future__ import annotations

import csv
import json
import socket
import time
from collections import Counter

import psutil
import pytest

from authbench.cli import main
from authbench_lab import lab as lab_api

PACED = ["--reuse-session", "--pace", "0.5s", "--pattern", "8x14"]  # 7 s per run, 8 users
STOP_AT, START_AT = 2, 4.5  # seconds into the measured phase


@pytest.fixture
def run(lab, monkeypatch, capsys):
    """`authbench run ARGS` against the session lab: (exit status, stdout, stderr)."""
    monkeypatch.setenv("AUTHBENCH_LAB_DIR", str(lab.run_dir))

    def call(args: list[str]) -> tuple[int, str, str]:
        code = main(["run", *args])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return call


def rows(folder) -> list[dict[str, str]]:
    with (folder / "samples.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def test_returning_users_keep_their_account_and_reuse_sso(run, tmp_path):
    code, out, _ = run(["--target", "lab:memcached", "--reuse-session", "--pattern", "2x10", "--results",
                        str(tmp_path), "--run-id", "r"])
    assert code == 0, out
    samples = rows(tmp_path / "r")
    assert Counter((r["outcome"], r["session"]) for r in samples) == {("ok", "fresh"): 2, ("ok", "reused"): 18}
    accounts = {r["user"]: {s["account"] for s in samples if s["user"] == r["user"]} for r in samples}
    assert all(len(names) == 1 for names in accounts.values()) and len(set.union(*accounts.values())) == 2


def test_one_account_for_all_users_still_goes_through_the_idp(run, tmp_path, monkeypatch):
    monkeypatch.setenv("AUTHBENCH_PASSWORD", "pw-user007")
    code, out, _ = run(["--target", "lab:local", "--reuse-session", "--account", "user007", "--pattern", "3x5",
                        "--results", str(tmp_path), "--run-id", "a"])
    assert code == 0, out
    sessions = Counter(r["session"] for r in rows(tmp_path / "a"))
    assert sessions == {"fresh": 3, "reused": 12}  # never "sp-session": the SP's cookies went each time


def fault_run(lab, run, tmp_path, backend: str, component: str) -> dict:
    plan = f"at={STOP_AT}s stop {component}; at={START_AT}s start {component}"
    try:
        code, out, _ = run(["--target", f"lab:{backend}", *PACED, "--fault", plan, "--results", str(tmp_path),
                            "--run-id", "f"])
    finally:
        full = f"{backend}/{component}" if component.startswith("idp-") else component
        lab_api.start_component(lab.run_dir, full)  # already running unless the run broke off
    assert code == 0, out
    cell = json.loads((tmp_path / "f" / "summary.json").read_text())["cells"][0]
    stop, start = cell["faults"]
    assert stop["ok"] and start["ok"] and stop["status"].startswith("stopped")
    # each at its time, or when the one before it ended (a node's graceful stop takes seconds)
    played = cell["failover"]
    assert played["faults"][0]["at_s"] >= STOP_AT and played["windows"][2]["from_s"] >= START_AT
    assert start["time"] >= stop["time"] + stop["seconds"] - 0.01
    assert "Test 4" in out
    return cell["failover"]["faults"][0]  # the stop


@pytest.mark.parametrize(("backend", "expected"), [("terracotta", "○"), ("memcached", "○"), ("repcached", "○"),
                                                   ("stateless", "○"), ("local", "△")])
def test_stopping_one_idp_node(lab, run, tmp_path, backend, expected):
    fault = fault_run(lab, run, tmp_path, backend, "idp-a")
    assert fault["logged_in_users"] == 8
    assert fault["test4"] == expected, fault


def _wait_until_memcached_is_back_in_every_ring(lab) -> None:
    """Every IdP node that met memcached-a down took it out of its ring; each puts it back on its first command
    the lab's memcached dead retry after that, so a later test of the shared lab meets whole rings again."""
    time.sleep(lab.timing.memcached_dead_retry_s + 0.5)


@pytest.mark.parametrize(("backend", "expected"), [("repcached", "○"), ("memcached", "△")])
def test_stopping_one_memcached(lab, run, tmp_path, backend, expected):
    try:
        fault = fault_run(lab, run, tmp_path, backend, "memcached-a")
    finally:
        _wait_until_memcached_is_back_in_every_ring(lab)
    assert fault["logged_in_users"] == 8
    assert fault["test4"] == expected, fault


def test_stopping_the_redis_primary_stops_terracotta_and_its_restart_loses_every_session(lab, run, tmp_path):
    """The lab's terracotta nodes talk to the primary only: no failover to the replica. The primary comes
    back empty and the replica resyncs from it, so every SSO session is gone (docs/failover.md)."""
    fault = fault_run(lab, run, tmp_path, "terracotta", "redis-primary")
    stop, start = json.loads((tmp_path / "f" / "summary.json").read_text())["cells"][0]["faults"]
    down_from, down_until = stop["time"] + stop["seconds"], start["time"]
    during = [r for r in rows(tmp_path / "f")
              if float(r["start"]) >= down_from and float(r["start"]) + float(r["duration_ms"]) / 1000 < down_until]
    assert during and all(r["outcome"] == "error" for r in during)  # every journey begun meanwhile failed
    assert fault["test4"] == "×" and fault["reauthenticated_users"] == 8


def test_a_failing_command_is_recorded_and_the_run_measured(run, tmp_path):
    code, out, _ = run(["--target", "lab:stateless", "--pattern", "2x4", "--pace", "0.2s", "--fault",
                        "at=0.1s run=sh -c 'echo no such pod >&2; exit 4'", "--results", str(tmp_path),
                        "--run-id", "c"])
    assert code == 0, out
    cell = json.loads((tmp_path / "c" / "summary.json").read_text())["cells"][0]
    [fault] = cell["faults"]
    assert (fault["ok"], fault["exit_status"], fault["status"]) == (False, 4, "exit status 4: no such pod")
    assert cell["summary"]["tests"] == 8 and cell["summary"]["errors"] == 0
    assert "fault at=0.1s run=sh -c 'echo no such pod >&2; exit 4': exit status 4: no such pod" in out


@pytest.mark.parametrize(("plan", "message"), [
    ("at=soon stop idp-a", "at='soon' is not a time"),
    ("at=3s stop idp-z", "the lab has no component 'idp-z'; valid: idp-a, idp-b, sp, ldap"),
    ("at=3s reboot idp-a", "the action must be 'stop COMPONENT'"),
    ("stop idp-a", "begin with at=TIME"),
])
def test_bad_plans_are_refused_before_any_load(run, tmp_path, plan, message):
    code, out, err = run(["--target", "lab:memcached", "--pattern", "1x1", "--fault", plan, "--results",
                          str(tmp_path), "--run-id", "bad"])
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "bad").exists() and "preflight" not in out


def test_compare_puts_test4_beside_tests_1_to_3(lab, tmp_path, capsys):
    plan = f"at={STOP_AT}s stop idp-a; at={START_AT}s start idp-a"
    try:
        code = main(["compare", "--lab-dir", str(lab.run_dir), "--backends", "stateless,local", *PACED[1:],
                     "--warmup", "0", "--repeat", "1", "--fault", plan, "--results", str(tmp_path),
                     "--campaign-id", "c"])
    finally:
        for backend in ("stateless", "local"):
            lab_api.start_component(lab.run_dir, f"{backend}/idp-a")
    out = capsys.readouterr().out
    assert code == 0, out
    lines = out.splitlines()
    table = lines[next(i for i, line in enumerate(lines) if line.split()[:2] == ["cluster", "fault"]):]
    assert table[1].split()[:5] == ["stateless", "at=2s", "stop", "idp-a", "○"]
    assert table[2].split()[:5] == ["local", "at=2s", "stop", "idp-a", "△"]
    # Each backend's verdict panel closes the output, as summary.json has it, and opens the report.
    figures = {}
    for backend, mark in (("stateless", "○"), ("local", "△")):
        panel = json.loads((tmp_path / "c" / "runs" / backend / "summary.json").read_text())["verdicts"]
        (test4,) = [check for check in panel["checks"] if check["check"] == "test4"]
        assert test4["mark"] == mark and f"  {mark} {test4['title']}: {test4['figure']}" in lines
        figures[backend] = test4["figure"]
    assert "local: Verdicts: FAILED" in lines
    report = (tmp_path / "c" / "report.md").read_text()
    assert "Failover under load (Test 4)" in report and "| local | at=2s stop idp-a | △ |" in report
    assert f"| local | △ | Test 4 at 8x14 #1 | {figures['local']} |" in report  # how many: the balancer's share
    config = json.loads((tmp_path / "c" / "runs" / "local" / "summary.json").read_text())["config"]
    assert config["reuse_session"] and config["pace_s"] == 0.5 and config["faults"] == [
        "at=2s stop local/idp-a", "at=4.5s start local/idp-a"]


def test_an_ldap_run_plays_its_fault_plan_paced_and_without_a_test4_verdict(lab, run, tmp_path):
    """Fault plans on any journey: slapd stopped and started inside an LDAP run, users paced, the outage
    measured in time; an LDAP bind keeps no SSO session, so no Test 4 verdict is claimed."""
    pace = 0.1
    try:
        code, out, _ = run(["--target", "lab:ldap", "--pattern", "4x40", "--pace", f"{pace}s", "--fault",
                            "at=1s stop ldap; at=2.5s start ldap", "--results", str(tmp_path), "--run-id", "l"])
    finally:
        lab_api.start_component(lab.run_dir, "ldap")
    assert code == 0, out
    cell = json.loads((tmp_path / "l" / "summary.json").read_text())["cells"][0]
    assert [f["status"].split()[0] for f in cell["faults"]] == ["stopped", "started"]
    before, down, after = cell["failover"]["windows"]
    assert before["journeys"] and before["errors"] == 0 and after["journeys"]
    assert down["errors"] == down["journeys"] > 0  # every bind tried while slapd was down failed
    [stop] = cell["failover"]["faults"]
    assert stop["test4"] == "-" and stop["logged_in_users"] == 0 and "no SSO sessions measured" in out
    samples = rows(tmp_path / "l")
    started = cell["faults"][1]["time"] + cell["faults"][1]["seconds"]  # slapd answers again
    assert not [r for r in samples if float(r["start"]) > started and r["outcome"] != "ok"]
    for user in {r["user"] for r in samples}:
        starts = sorted(float(r["start"]) for r in samples if r["user"] == user)
        assert min(b - a for a, b in zip(starts, starts[1:], strict=False)) >= pace - 0.01  # --pace held


def test_an_ldap_fault_plan_names_the_shared_components(run, tmp_path):
    code, _, err = run(["--target", "lab:ldap", "--pattern", "1x1", "--fault", "at=1s stop idp-a",
                        "--results", str(tmp_path), "--run-id", "bad"])
    assert code == 2 and "the lab has no component 'idp-a'; valid: ldap, memcached-a" in err


def test_a_start_after_the_cell_is_played_at_its_end_so_the_next_repetition_is_whole(lab, run, tmp_path):
    """Issue 25 item 2: `at=1s stop idp-a; at=30s start idp-a` on a short `--repeat 2` run left idp-a stopped: the
    second repetition measured one node, and its Test 4 read ○ beside "stop idp-a: was not running"."""
    running = False
    try:
        code, out, _ = run(["--target", "lab:local", *PACED[:3], "--pattern", "8x10", "--repeat", "2", "--fault",
                            f"at={STOP_AT}s stop idp-a; at=30s start idp-a", "--results", str(tmp_path),
                            "--run-id", "late"])
    finally:
        running = lab_api.start_component(lab.run_dir, "local/idp-a")["already_running"]
    assert code == 0, out
    assert running  # the run left the cluster whole
    cells = json.loads((tmp_path / "late" / "summary.json").read_text())["cells"]
    for cell in cells:
        stop, start = cell["faults"]
        assert stop["status"].startswith("stopped (pid"), stop  # never "was not running"
        assert start["time"] is None and start["ok"]
        assert start["status"].startswith("not reached: the measured phase ended at ")
        assert "; played at the cell's end: started (pid" in start["status"]
        assert cell["restored"][0]["component"] == "local/idp-a"
        # local loses the sessions of the stopped node: in the 2nd repetition too, so the balancer sent to it again
        assert cell["failover"]["faults"][0]["test4"] == "△", cell["failover"]
    said = [line for line in out.splitlines() if line.startswith("fault at=30s start local/idp-a: not reached")]
    assert len(said) == 2 and all("played at the cell's end: started" in line for line in said)


def test_a_start_after_a_known_measured_phase_is_refused_before_any_load(run, tmp_path):
    code, out, err = run(["--target", "lab:local", "--rate", "2/s", "--duration", "3s", "--fault",
                          "at=1s stop idp-a; at=5s start idp-a", "--results", str(tmp_path), "--run-id", "bad"])
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "'at=5s start local/idp-a': level 2/s measures 3 s, so this start would fall after it" in err
    assert not (tmp_path / "bad").exists() and "preflight" not in out


SPARE = "redis-replica"  # a component no journey of lab:stateless needs: stopping it costs no other test


def test_no_cell_starts_on_a_cluster_that_is_not_whole(lab, run, tmp_path):
    """Before each cell the components the plan touches run again: started if down, or the run fails in one line."""
    plan = ["--fault", f"at=0.2s stop {SPARE}; at=0.5s start {SPARE}"]
    try:
        lab_api.stop_component(lab.run_dir, SPARE)  # an earlier run broke off
        code, out, _ = run(["--target", "lab:stateless", "--pattern", "2x3", "--pace", "0.3s", *plan,
                            "--results", str(tmp_path), "--run-id", "whole"])
        assert code == 0, out
        assert f"fault plan: {SPARE} was not running before cell 2x3 #1: started (pid" in out
        lab_api.stop_component(lab.run_dir, SPARE)
        port = lab_api.read_state(lab.run_dir)["components"][SPARE]["port"]
        with socket.socket() as squatter:  # it cannot come back
            squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            squatter.bind(("127.0.0.1", port))
            squatter.listen()
            code, out, err = run(["--target", "lab:stateless", "--pattern", "2x3", "--pace", "0.3s", *plan,
                                  "--results", str(tmp_path), "--run-id", "broken"])
    finally:
        lab_api.start_component(lab.run_dir, SPARE)
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert (f"fault plan: {SPARE} is not running and did not start again before cell 2x3 #1: port {port} "
            in err) and "already in use" in err
    assert "2x3 #1:" not in out  # no cell measured


def test_run_commands_are_bounded_and_leave_no_process(run, tmp_path):
    """Issue 25 item 5: a command's timeout held only for its first process, a longer timeout than the cell gave
    "not run" after 120 s, and the orphaned children outlived the run."""
    began = time.monotonic()
    code, out, _ = run(["--target", "lab:stateless", "--pattern", "2x12", "--pace", "0.3s", "--fault",
                        "at=0.1s timeout=1s run=sh -c 'sleep 30.25 & sleep 30.25'; "
                        "at=1.5s timeout=3600s run=sh -c 'sleep 77.75; true'",
                        "--results", str(tmp_path), "--run-id", "cmd"])
    took = time.monotonic() - began
    assert code == 0, out
    timed_out, cut = json.loads((tmp_path / "cmd" / "summary.json").read_text())["cells"][0]["faults"]
    assert timed_out["status"] == "timed out after 1 s" and timed_out["seconds"] < 2.5, timed_out
    assert cut["status"].startswith("cut: the cell ended after ") and cut["time"] is not None, cut
    assert took < 30, took
    left = [p.info["cmdline"] for p in psutil.process_iter(["cmdline", "status"])
            if p.info["status"] != psutil.STATUS_ZOMBIE and {"30.25", "77.75"} & set(p.info["cmdline"] or ())]
    assert not left


def test_an_interrupted_run_starts_again_what_its_plan_stopped_and_ends_its_commands(lab, tmp_path):
    """Ctrl-C mid-cell: the component the plan stopped runs again and the command's process group is gone."""
    import os
    import signal
    import subprocess
    import sys

    def sleeping() -> list[int]:
        return [p.pid for p in psutil.process_iter(["cmdline", "status"])
                if p.info["status"] != psutil.STATUS_ZOMBIE and "30.5" in (p.info["cmdline"] or ())]

    env = {**os.environ, "AUTHBENCH_LAB_DIR": str(lab.run_dir)}
    plan = f"at=0.2s stop {SPARE}; at=600s start {SPARE}; at=0.3s timeout=3600s run=sh -c 'sleep 30.5 & sleep 30.5'"
    process = subprocess.Popen([sys.executable, "-m", "authbench", "run", "--target", "lab:stateless", "--pattern",
                                "2x100000", "--pace", "0.2s", "--fault", plan, "--results", str(tmp_path),
                                "--run-id", "i"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while len(sleeping()) < 2:  # the stop was played, then the command started
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.2)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=40)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        running = lab_api.start_component(lab.run_dir, SPARE)["already_running"]
    assert process.returncode == 130, err
    assert len(err.strip().splitlines()) == 1 and f"fault plan: {SPARE} started again" in err, err
    assert running and not sleeping()
