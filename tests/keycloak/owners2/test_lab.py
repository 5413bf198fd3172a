"""Real Keycloak in the lab: two nodes in one Infinispan cluster, users from slapd, SSO through the lab's SP.

The package's lab (conftest.py); test_oidc.py runs on it next and takes it down.
"""

from __future__ import annotations

import json
import re
import time

import psutil
import pytest
from kc_kit import USERS, node_stop_run

from authbench.cli import main
from authbench_lab import lab as lab_api
from authbench_lab import slapd
from authbench_lab.config import KEYCLOAK_CLUSTER, LabConfig
from authbench_lab.keycloak import server as keycloak

CLUSTER_VIEW = re.compile(r"ISPN000094: Received new cluster view .*\(2\) \[")  # both nodes are members


def rows(config: LabConfig) -> dict[str, dict]:
    return {row["name"]: row for row in lab_api.status(config.run_dir)}


def test_both_nodes_and_the_sp_are_healthy_and_the_nodes_form_one_cluster(kc_lab):
    status = rows(kc_lab)
    for name in keycloak.COMPONENTS:
        assert status[name]["healthy"], status[name]
    assert status["keycloak-a"]["rss_bytes"] > 0
    log = (kc_lab.component_dir("keycloak-a") / "server.log").read_text(errors="replace")
    assert CLUSTER_VIEW.search(log), "keycloak-a never saw a two-member cluster view"
    assert "Realm 'authbench' imported" in log
    # with persistent user sessions off, Keycloak itself keeps two owners of each user session (its log says so)
    assert re.search(r"number of owners set to default value 1 for cache sessions .*num_owners=2", log)


def test_no_secret_on_a_command_line_or_in_the_state_file(kc_lab):
    secrets = [keycloak.db_password_file(kc_lab).read_text().strip(),
               slapd.paths(kc_lab).idp_password.read_text().strip()]
    state = (kc_lab.run_dir / "lab.json").read_text()
    assert not [secret for secret in secrets if secret in state]
    for name in ("keycloak-a", "keycloak-b"):
        cmdline = " ".join(psutil.Process(rows(kc_lab)[name]["pid"]).cmdline())
        assert not [secret for secret in secrets if secret in cmdline]
        conf = kc_lab.component_dir(name) / "home" / "conf" / "keycloak.conf"
        assert conf.stat().st_mode & 0o077 == 0


@pytest.mark.parametrize("target", ["lab", "url"])
def test_a_saml_run_through_keycloak_succeeds_on_every_journey(kc_lab, tmp_path, capsys, target):
    """`lab:keycloak-owners2` (the lab's accounts and CA) and the SP's URL with accounts given: the real walk."""
    args = ["--target", f"lab:{KEYCLOAK_CLUSTER}"] if target == "lab" else [
        "--target", f"{keycloak.sp_url(kc_lab)}/secure/", "--ca-bundle", str(kc_lab.ca_cert),
        "--accounts-template", f"user{{000..{USERS - 1:03d}}}", "--password-rule", "pw-{user}"]
    code = main(["run", *args, "--pattern", "2x5", "--warmup", "0", "--lab-dir", str(kc_lab.run_dir),
                 "--results", str(tmp_path), "--run-id", "kc"])
    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    assert "Sign in to authbench" in captured.out + captured.err  # Keycloak's own login page was walked
    summary = json.loads((tmp_path / "kc" / "summary.json").read_text())["cells"][0]["summary"]
    assert summary["tests"] == 10 and summary["errors"] == 0, summary


def test_the_2012_cluster_checks_run_on_keycloak_nodes(kc_lab, capsys):
    """Tests 1-3 through each node's own HAProxy frontend; what owners2 gave when first measured: all ○."""
    code = main(["check-cluster", "--target", f"lab:{KEYCLOAK_CLUSTER}", "--lab-dir", str(kc_lab.run_dir)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert [line.split()[:3] for line in out.splitlines() if line.startswith("Test ")] == [
        ["Test", "1", "○"], ["Test", "2", "○"], ["Test", "3", "○"]], out


def test_lab_check_and_status_cover_keycloaks_cluster(kc_lab, capsys):
    """Issue 27: `lab check` checks Keycloak's cluster beside the reference backends against the expected table,
    and `lab status` lists its nodes (health from /health/ready) and its endpoints."""
    code = main(["lab", "check", "--lab-dir", str(kc_lab.run_dir)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"{KEYCLOAK_CLUSTER} SSO through the balancer: ok" in out
    assert [line.split()[1:] for line in out.splitlines() if line.startswith(KEYCLOAK_CLUSTER + " ")][-1] == \
        ["○", "○", "○"], out
    assert main(["lab", "status", "--lab-dir", str(kc_lab.run_dir)]) == 0
    out = capsys.readouterr().out
    assert [line.split()[3] for line in out.splitlines() if line.split()[:1] in (["keycloak-a"], ["keycloak-b"])] \
        == ["healthy", "healthy"], out
    assert f"{KEYCLOAK_CLUSTER} lb {keycloak.lb_url(kc_lab)}" in out


def test_a_virtual_sp_on_keycloak_is_refused_in_one_line(kc_lab, tmp_path, capsys):
    code = main(["run", "--target", f"lab:{KEYCLOAK_CLUSTER}", "--sp", "virtual", "--pattern", "1x1",
                 "--lab-dir", str(kc_lab.run_dir), "--results", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "drop --sp virtual" in err and len(err.strip().splitlines()) == 1


def test_a_fault_plan_stops_a_node_and_owners2_loses_no_sso_session(kc_lab, tmp_path, capsys):
    """Test 4 on real Keycloak: returning users keep single sign-on while node B is down (two owners per session)."""
    code, out, cell, fault = node_stop_run(kc_lab, KEYCLOAK_CLUSTER, tmp_path, capsys)
    assert code == 0, out
    assert fault["fault"] == "at=5s stop keycloak-b" and fault["logged_in_users"] > 0
    assert fault["test4"] == "○" and fault["reauthenticated_users"] == 0, fault
    # A journey under way on node B when it stops may end in an HTTP error (at most one per user in flight); the
    # users still keep their sessions (○ above: their last journeys got SSO).
    assert cell["summary"]["tests"] == 100 and cell["summary"]["errors"] <= 4, cell["summary"]
    assert rows(kc_lab)["keycloak-b"]["healthy"]  # the plan started it again


def test_stop_and_start_one_node(kc_lab):
    stopped = lab_api.stop_component(kc_lab.run_dir, "keycloak-b")
    assert stopped["was_running"]
    assert rows(kc_lab)["keycloak-b"]["pid"] is None
    assert not psutil.pid_exists(stopped["pid"]) or psutil.Process(stopped["pid"]).status() == psutil.STATUS_ZOMBIE
    began = time.perf_counter()
    started = lab_api.start_component(kc_lab.run_dir, "keycloak-b")
    print(f"\nkeycloak-b restarted in {time.perf_counter() - began:.1f} s")
    assert started["detail"] == f"GET {keycloak.HEALTH_PATH} 200"
    assert rows(kc_lab)["keycloak-b"]["healthy"]
