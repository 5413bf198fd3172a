"""`compare` over Keycloak's designs and a reference backend (issue 27): each design's lab brought up after the
previous one is down, Tests 1-3 and Test 4 per backend, CPU per JVM, the report's rows, nothing left running."""

from __future__ import annotations

import json

import psutil
from kc_kit import USERS

from authbench.cli import main
from authbench_lab import processes
from authbench_lab.config import LabConfig

from ports import KEYCLOAK as KEYCLOAK_BASE_PORT

BACKENDS = ["local", "keycloak-owners2", "keycloak-local"]
# Node B of whichever cluster is measured; the users log in during the warm-up (a Keycloak login takes seconds on
# a busy machine), so each is logged in when the node stops.
NODE_STOP = "at=3s stop idp-b; at=10s start idp-b"


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
    assert [s["clusters"] for s in starts] == [["local"], ["keycloak-owners2"], ["keycloak-local"]]
    assert all(s["keycloak_seconds"] > 0 for s in starts[1:]) and "keycloak_seconds" not in starts[0]
    assert out.count("lab down") == 3  # after local, after owners2, at the end
    checks = {name: [row["passed"] for row in rows] for name, rows in campaign["checks"].items()}
    assert checks == {"local": [True, False, False], "keycloak-owners2": [True, True, True],
                      "keycloak-local": [True, False, False]}
    for name, node in (("local", "local/idp-b"), ("keycloak-owners2", "keycloak-b"), ("keycloak-local", "keycloak-b")):
        cell = json.loads((tmp_path / "kc" / "runs" / name / "summary.json").read_text())["cells"][0]
        assert cell["faults"][0]["target"] == node
        parts = cell["resources"]["components"]
        if name.startswith("keycloak-"):  # each JVM, PostgreSQL, slapd, HAProxy; no store of the reference IdP
            assert {"keycloak-a", "keycloak-b", "postgres", "ldap", "lb"} <= set(parts)
            assert not {"memcached-a", "redis-primary"} & set(parts)
            assert parts["keycloak-a"]["cpu_s"] > 0 and parts["keycloak-a"]["rss_mib_max"] > 100
    test4 = {name: json.loads((tmp_path / "kc" / "runs" / name / "summary.json").read_text())["cells"][0][
        "failover"]["faults"][0]["test4"] for name in BACKENDS}
    assert test4["keycloak-owners2"] == "○" and test4["keycloak-local"] in ("△", "×"), test4  # two owners; none
    report = (tmp_path / "kc" / "report.md").read_text()
    for name in BACKENDS:
        assert f"**{name}: CPU per component**" in report
        assert any(line.startswith(f"| {name} |") for line in report.splitlines()), name
    assert "| keycloak-owners2 | at=3s stop keycloak-b |" in report
    # the last lab is down: no process of it and no port left
    assert not [p.info for p in psutil.process_iter(["cmdline"]) if str(lab_dir) in " ".join(p.info["cmdline"] or [])]
    config = LabConfig(run_dir=lab_dir, base_port=KEYCLOAK_BASE_PORT, backends=["local"],
                       extras=["postgres", "keycloak"])
    assert all(processes.port_is_free(port) for port in config.all_ports().values())
