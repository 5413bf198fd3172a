"""The `keycloak-persistent` design: persistent user sessions (Keycloak 26's default), the 2012 report's database
store. Every user session is written to PostgreSQL; the session caches keep one owner in memory, and a node
that does not hold a session reads it back from the database. A node stop therefore loses no session (Test 4 ○).
"""

from __future__ import annotations

import json

import pytest
from kc_kit import assert_down_leaves_nothing, cluster_check_marks, design_lab, node_stop_run

from authbench_lab import lab as lab_api
from authbench_lab.config import EXPECTED_CLUSTER_CHECKS
from authbench_lab.keycloak import server as keycloak

CLUSTER = "keycloak-persistent"


@pytest.fixture(scope="module")
def persistent_lab(tmp_path_factory: pytest.TempPathFactory):
    with design_lab(tmp_path_factory, "persistent") as config:
        yield config


def test_the_nodes_run_from_a_build_with_persistent_sessions(persistent_lab):
    status = {row["name"]: row for row in lab_api.status(persistent_lab.run_dir)}
    assert all(status[name]["healthy"] for name in keycloak.COMPONENTS), status
    built = (keycloak.home(persistent_lab, "a") / "lib").resolve().parent
    assert json.loads((built / ".authbench-build.json").read_text())["options"] == sorted(
        keycloak.PERSISTENT_BUILD_OPTIONS)
    log = (persistent_lab.component_dir("keycloak-a") / "server.log").read_text(errors="replace")
    assert "Setting num_owners=2 to avoid data loss" not in log  # the volatile-sessions guard did not run


def test_the_2012_cluster_checks_on_persistent(persistent_lab, capsys):
    marks, out = cluster_check_marks(persistent_lab, CLUSTER, capsys)
    assert marks == EXPECTED_CLUSTER_CHECKS[CLUSTER], out


def test_a_node_stop_loses_no_session_because_the_database_holds_them(persistent_lab, tmp_path, capsys):
    code, out, cell, fault = node_stop_run(persistent_lab, CLUSTER, tmp_path, capsys)
    print(f"\npersistent Test 4 (exit {code}): {json.dumps(fault)}; summary {json.dumps(cell['summary'])}")
    assert code == 0, out
    assert fault["fault"] == "at=5s stop keycloak-b" and fault["logged_in_users"] > 0
    assert fault["test4"] == "○" and fault["reauthenticated_users"] == 0, fault


def test_down_leaves_no_persistent_process_or_port(persistent_lab):
    assert_down_leaves_nothing(persistent_lab)
