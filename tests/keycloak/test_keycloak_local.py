"""The `keycloak-local` design: no clustering (`--cache=local`), each node keeps its own sessions and login
conversations, HAProxy sticky on AUTH_SESSION_ID, the 2012 report's unclustered baseline on real Keycloak.

Here a node stop does lose sessions: the returning users HAProxy kept on the stopped node are sent to the other
one, which never saw them, and they sign in again (Test 4 △ or ×).
"""

from __future__ import annotations

import json
import time

import psutil
import pytest

from authbench.cli import main
from authbench_lab import lab as lab_api
from authbench_lab import processes
from authbench_lab.config import EXPECTED_CLUSTER_CHECKS, LabConfig
from authbench_lab.keycloak import server as keycloak

from ports import KEYCLOAK as KEYCLOAK_BASE_PORT

USERS = 50
CLUSTER = "keycloak-local"


@pytest.fixture(scope="module")
def local_lab(tmp_path_factory: pytest.TempPathFactory):
    config = LabConfig(run_dir=tmp_path_factory.mktemp("keycloak-local"), base_port=KEYCLOAK_BASE_PORT,
                       backends=["terracotta"], users=USERS, extras=["postgres", "keycloak"], keycloak_design="local")
    began = time.perf_counter()
    try:
        lab_api.up(config)
        print(f"\nlab up --with keycloak --keycloak-design local: {time.perf_counter() - began:.1f} s")
        yield config
    finally:
        lab_api.down(config.run_dir)


def test_the_nodes_run_unclustered(local_lab):
    status = {row["name"]: row for row in lab_api.status(local_lab.run_dir)}
    assert all(status[name]["healthy"] for name in keycloak.COMPONENTS), status
    assert "--cache=local" in psutil.Process(status["keycloak-b"]["pid"]).cmdline()
    log = (local_lab.component_dir("keycloak-a") / "server.log").read_text(errors="replace")
    assert "ISPN000094" not in log  # no cluster view: JGroups never started


def test_the_2012_cluster_checks_on_local(local_lab, capsys):
    code = main(["check-cluster", "--target", f"lab:{CLUSTER}", "--lab-dir", str(local_lab.run_dir)])
    out = capsys.readouterr().out
    assert code == 0, out
    marks = [line.split()[2] == "○" for line in out.splitlines() if line.startswith("Test ")]
    assert tuple(marks) == EXPECTED_CLUSTER_CHECKS[CLUSTER], out


def test_a_node_stop_loses_the_sessions_that_node_held(local_lab, tmp_path, capsys):
    """Test 4 as for owners2 and owners1 (returning users, node B stopped at 5 s): here users lose SSO; measured
    2026-11-25 (two runs): 2 of 4 logged-in users asked for their password again (△), 98-100 of 100 journeys ok."""
    code = main(["run", "--target", f"lab:{CLUSTER}", "--pattern", "4x25", "--warmup", "0",
                 "--reuse-session", "--fault", "at=5s stop keycloak-b; at=15s start keycloak-b",
                 "--lab-dir", str(local_lab.run_dir), "--results", str(tmp_path), "--run-id", "t4"])
    captured = capsys.readouterr()
    cell = json.loads((tmp_path / "t4" / "summary.json").read_text())["cells"][0]
    fault = cell["failover"]["faults"][0]
    print(f"\nlocal Test 4 (exit {code}): {json.dumps(fault)}; summary {json.dumps(cell['summary'])}")
    assert fault["fault"] == "at=5s stop keycloak-b" and fault["logged_in_users"] > 0, captured.out + captured.err
    assert fault["test4"] in ("△", "×") and fault["reauthenticated_users"] > 0, fault
    # they sign in again on node A; a journey caught on node B as it stops may fail with an HTTP error (0 and 2 of
    # 100 in two runs), within the run's error budget
    assert code == 0 and cell["summary"]["errors"] <= fault["logged_in_users"], cell["summary"]


def test_down_leaves_no_local_process_or_port(local_lab):
    lab_api.down(local_lab.run_dir)
    assert not [proc.info for proc in psutil.process_iter(["pid", "cmdline"])
                if str(local_lab.run_dir) in " ".join(proc.info["cmdline"] or [])]
    assert all(processes.port_is_free(port) for port in local_lab.all_ports().values())
