"""`compare` over two Keycloak designs and a reference backend (issue 27): each design's lab brought up after the
previous one is down, Tests 1-3 and Test 4 per backend, CPU per JVM, the report's rows, nothing left running.

The two designs are the ones no other module runs, so this test also pins what they do (a Keycloak lab costs a
minute; owners2 and local have modules of their own):

- `keycloak-owners1`, the 2012 report's memcached without replication. The lab gives both nodes a cache file
  with owners="1" for the session caches (and cache-config-mutate=true). Keycloak 26.7.3 does not keep it: with
  persistent user sessions off it raises `sessions` and `clientSessions` to two owners when they have one and no
  shared store, and it keeps `authenticationSessions` at two or more (CacheConfigurator in
  keycloak-model-infinispan; its log says so). So a node stop loses no returning user's session (Test 4 ○).
- `keycloak-persistent`, the database store: persistent user sessions (Keycloak 26's default, a build of its
  own). Every user session is written to PostgreSQL, and a node that does not hold one reads it back: Test 4 ○.
"""

from __future__ import annotations

import json
import re

import psutil
from kc_kit import USERS

from authbench.cli import main
from authbench_lab import processes
from authbench_lab.config import EXPECTED_CLUSTER_CHECKS, LabConfig
from authbench_lab.keycloak import server as keycloak

from ports import KEYCLOAK as KEYCLOAK_BASE_PORT

BACKENDS = ["local", "keycloak-owners1", "keycloak-persistent"]
# Node B of whichever cluster is measured; the users log in during the warm-up (a Keycloak login takes seconds on
# a busy machine), so each is logged in when the node stops.
NODE_STOP = "at=3s stop idp-b; at=10s start idp-b"
RAISED = {  # cache -> the line of node A's owners1 log that shows Keycloak overriding owners="1"
    "sessions": re.compile(r"number of owners set to default value 1 for cache sessions .*num_owners=2"),
    "clientSessions": re.compile(r"number of owners set to default value 1 for cache clientSessions .*num_owners=2"),
    "authenticationSessions": re.compile(r"Setting num_owners=2 \(configured value is 1\) for cache "
                                         r"'authenticationSessions'"),
}
LAUNCH = "\n=== "  # the lab's line before each launch of a component, in its server.log


def summary_of(tmp_path, name: str) -> dict:
    return json.loads((tmp_path / "kc" / "runs" / name / "summary.json").read_text())["cells"][0]


def test_compare_brings_two_designs_up_one_after_another(tmp_path, capsys):
    lab_dir = tmp_path / "lab"
    code = main(["compare", "--backends", ",".join(BACKENDS), "--lab-dir", str(lab_dir), "--base-port",
                 str(KEYCLOAK_BASE_PORT), "--users", str(USERS), "--pattern", "4x15", "--warmup", "5s", "--repeat", "1",
                 "--fault", NODE_STOP, "--results", str(tmp_path), "--campaign-id", "kc"])
    captured = capsys.readouterr()
    out = captured.out + captured.err
    print(out)
    assert code == 0, out
    campaign = json.loads((tmp_path / "kc" / "campaign.json").read_text())
    # one lab per Keycloak design, after the reference backend's; each start timed, Keycloak's apart
    starts = campaign["lab_starts"]
    assert [s["clusters"] for s in starts] == [[name] for name in BACKENDS]
    assert all(s["keycloak_seconds"] > 0 for s in starts[1:]) and "keycloak_seconds" not in starts[0]
    assert out.count("lab down") == 3  # after local, after owners1, at the end
    checks = {name: tuple(row["passed"] for row in rows) for name, rows in campaign["checks"].items()}
    assert checks == {name: EXPECTED_CLUSTER_CHECKS[name] for name in BACKENDS}
    for name, node in zip(BACKENDS, ("local/idp-b", "keycloak-b", "keycloak-b"), strict=True):
        cell = summary_of(tmp_path, name)
        assert cell["faults"][0]["target"] == node
        parts = cell["resources"]["components"]
        if name.startswith("keycloak-"):  # each JVM, PostgreSQL, slapd, HAProxy; no store of the reference IdP
            assert {"keycloak-a", "keycloak-b", "postgres", "ldap", "lb"} <= set(parts)
            assert not {"memcached-a", "redis-primary"} & set(parts)
            assert parts["keycloak-a"]["cpu_s"] > 0 and parts["keycloak-a"]["rss_mib_max"] > 100
            # what memcached lost, Keycloak keeps: a second owner, or the database
            fault = cell["failover"]["faults"][0]
            print(f"\n{name} Test 4: {json.dumps(fault)}")
            assert fault["logged_in_users"] > 0 and fault["test4"] == "○" and fault["reauthenticated_users"] == 0
    report = (tmp_path / "kc" / "report.md").read_text()
    for name in BACKENDS:
        assert f"**{name}: CPU per component**" in report
        assert any(line.startswith(f"| {name} |") for line in report.splitlines()), name
    assert "| keycloak-owners1 | at=3s stop keycloak-b |" in report

    # node A started once per design: its log holds owners1's launch, then persistent's
    owners1_log, persistent_log = (lab_dir / "keycloak-a" / "server.log").read_text(errors="replace").split(LAUNCH)
    assert not any(line.search(persistent_log) for line in RAISED.values())  # one design per part
    assert "Modifying the default cache configuration" not in owners1_log  # mutate=true: the file is taken as meant
    assert {cache: bool(line.search(owners1_log)) for cache, line in RAISED.items()} == dict.fromkeys(RAISED, True)
    assert "Setting num_owners=2 to avoid data loss" not in persistent_log  # the volatile-sessions guard did not run
    persistent = LabConfig(run_dir=lab_dir, base_port=KEYCLOAK_BASE_PORT, backends=["local"],
                           extras=["postgres", "keycloak"], keycloak_design="persistent")
    built = (keycloak.home(persistent, "a") / "lib").resolve().parent
    assert json.loads((built / ".authbench-build.json").read_text())["options"] == sorted(
        keycloak.PERSISTENT_BUILD_OPTIONS)

    # the last lab is down: no process of it and no port left
    assert not [p.info for p in psutil.process_iter(["cmdline"]) if str(lab_dir) in " ".join(p.info["cmdline"] or [])]
    assert all(processes.port_is_free(port) for port in persistent.all_ports().values())
