"""The `keycloak-owners1` design: the 2012 report's memcached without replication, asked of real Keycloak.

The lab gives both nodes a cache file with owners="1" for the session caches (and cache-config-mutate=true).
Keycloak 26.7.3 does not keep it: with persistent user sessions off it raises `sessions` and `clientSessions` to
two owners when they have one and no shared store, and it keeps `authenticationSessions` at two or more
(CacheConfigurator in keycloak-model-infinispan; its log says so). These tests pin what Keycloak really does:
its log, Tests 1-3, and Test 4, where stopping a node loses no returning user's session.
"""

from __future__ import annotations

import json
import re

import psutil
import pytest
from kc_kit import assert_down_leaves_nothing, cluster_check_marks, design_lab, node_stop_run

from authbench_lab import lab as lab_api
from authbench_lab.config import EXPECTED_CLUSTER_CHECKS
from authbench_lab.keycloak import server as keycloak

CLUSTER = "keycloak-owners1"
RAISED = {  # cache -> the line of node A's log that shows Keycloak overriding owners="1"
    "sessions": re.compile(r"number of owners set to default value 1 for cache sessions .*num_owners=2"),
    "clientSessions": re.compile(r"number of owners set to default value 1 for cache clientSessions .*num_owners=2"),
    "authenticationSessions": re.compile(r"Setting num_owners=2 \(configured value is 1\) for cache "
                                         r"'authenticationSessions'"),
}


@pytest.fixture(scope="module")
def owners1_lab(tmp_path_factory: pytest.TempPathFactory):
    with design_lab(tmp_path_factory, "owners1") as config:
        yield config


def test_the_nodes_load_the_owners1_file_and_keycloak_raises_the_session_caches_to_two(owners1_lab):
    status = {row["name"]: row for row in lab_api.status(owners1_lab.run_dir)}
    assert all(status[name]["healthy"] for name in keycloak.COMPONENTS), status
    assert owners1_lab.clusters() == ["terracotta", CLUSTER]
    cmdline = " ".join(psutil.Process(status["keycloak-a"]["pid"]).cmdline())
    assert f"--cache-config-file={keycloak.OWNERS1_FILE}" in cmdline and "--cache-config-mutate=true" in cmdline
    log = (owners1_lab.component_dir("keycloak-a") / "server.log").read_text(errors="replace")
    assert "Modifying the default cache configuration" not in log  # mutate=true: the file is taken as meant
    assert {cache: bool(line.search(log)) for cache, line in RAISED.items()} == dict.fromkeys(RAISED, True), log[-4000:]


def test_the_2012_cluster_checks_on_owners1(owners1_lab, capsys):
    marks, out = cluster_check_marks(owners1_lab, CLUSTER, capsys)
    assert marks == EXPECTED_CLUSTER_CHECKS[CLUSTER], out


def test_a_node_stop_loses_no_session_because_keycloak_keeps_two_owners(owners1_lab, tmp_path, capsys):
    """Test 4 as for owners2 (returning users, node B stopped at 5 s): what memcached lost, Keycloak keeps."""
    code, out, cell, fault = node_stop_run(owners1_lab, CLUSTER, tmp_path, capsys)
    assert code == 0, out
    print(f"\nowners1 Test 4: {json.dumps(fault)}")
    assert fault["fault"] == "at=5s stop keycloak-b" and fault["logged_in_users"] > 0
    assert fault["test4"] == "○" and fault["reauthenticated_users"] == 0, fault
    assert cell["summary"]["tests"] == 100 and cell["summary"]["errors"] == 0, cell["summary"]


def test_down_leaves_no_owners1_process_or_port(owners1_lab):
    assert_down_leaves_nothing(owners1_lab)
