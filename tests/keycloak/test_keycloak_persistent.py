"""The `keycloak-persistent` design: persistent user sessions (Keycloak 26's default), the 2012 report's database
store. Every user session is written to PostgreSQL; the session caches keep one owner in memory, and a node
that does not hold a session reads it back from the database. A node stop therefore loses no session (Test 4 ○).
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
CLUSTER = "keycloak-persistent"


@pytest.fixture(scope="module")
def persistent_lab(tmp_path_factory: pytest.TempPathFactory):
    config = LabConfig(run_dir=tmp_path_factory.mktemp("keycloak-persistent"), base_port=KEYCLOAK_BASE_PORT,
                       backends=["terracotta"], users=USERS, extras=["postgres", "keycloak"],
                       keycloak_design="persistent")
    began = time.perf_counter()
    try:
        result = lab_api.up(config)
        print(f"\nlab up --with keycloak --keycloak-design persistent: {time.perf_counter() - began:.1f} s; "
              f"install steps that ran: {result['state'].get('keycloak_install') or 'none (cached)'}")
        yield config
    finally:
        lab_api.down(config.run_dir)


def test_the_nodes_run_from_a_build_with_persistent_sessions(persistent_lab):
    status = {row["name"]: row for row in lab_api.status(persistent_lab.run_dir)}
    assert all(status[name]["healthy"] for name in keycloak.COMPONENTS), status
    built = (keycloak.home(persistent_lab, "a") / "lib").resolve().parent
    assert json.loads((built / ".authbench-build.json").read_text())["options"] == sorted(
        keycloak.PERSISTENT_BUILD_OPTIONS)
    log = (persistent_lab.component_dir("keycloak-a") / "server.log").read_text(errors="replace")
    assert "Setting num_owners=2 to avoid data loss" not in log  # the volatile-sessions guard did not run


def test_the_2012_cluster_checks_on_persistent(persistent_lab, capsys):
    code = main(["check-cluster", "--target", f"lab:{CLUSTER}", "--lab-dir", str(persistent_lab.run_dir)])
    out = capsys.readouterr().out
    assert code == 0, out
    marks = [line.split()[2] == "○" for line in out.splitlines() if line.startswith("Test ")]
    assert tuple(marks) == EXPECTED_CLUSTER_CHECKS[CLUSTER], out


def test_a_node_stop_loses_no_session_because_the_database_holds_them(persistent_lab, tmp_path, capsys):
    code = main(["run", "--target", f"lab:{CLUSTER}", "--pattern", "4x25", "--warmup", "0",
                 "--reuse-session", "--fault", "at=5s stop keycloak-b; at=15s start keycloak-b",
                 "--lab-dir", str(persistent_lab.run_dir), "--results", str(tmp_path), "--run-id", "t4"])
    captured = capsys.readouterr()
    cell = json.loads((tmp_path / "t4" / "summary.json").read_text())["cells"][0]
    fault = cell["failover"]["faults"][0]
    print(f"\npersistent Test 4 (exit {code}): {json.dumps(fault)}; summary {json.dumps(cell['summary'])}")
    assert code == 0, captured.out + captured.err
    assert fault["fault"] == "at=5s stop keycloak-b" and fault["logged_in_users"] > 0
    assert fault["test4"] == "○" and fault["reauthenticated_users"] == 0, fault


def test_down_leaves_no_persistent_process_or_port(persistent_lab):
    lab_api.down(persistent_lab.run_dir)
    assert not [proc.info for proc in psutil.process_iter(["pid", "cmdline"])
                if str(persistent_lab.run_dir) in " ".join(proc.info["cmdline"] or [])]
    assert all(processes.port_is_free(port) for port in persistent_lab.all_ports().values())
