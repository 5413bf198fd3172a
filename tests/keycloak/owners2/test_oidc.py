"""The OIDC kind on the lab's real Keycloak (`keycloak-owners2`): the realm's RPs, exact patterns with 0 errors,
the preflight's one-line failures, a replayed code, check-cluster's Tests 1-3 and Test 4 under a node stop.

The package's lab, after test_lab.py; the last tests stop node B (a provider that answers 5xx) and take the lab down.
"""

from __future__ import annotations

import json
from pathlib import Path

import psutil
import pytest
from kc_kit import assert_down_leaves_nothing, cluster_check_marks, node_stop_run
from results_kit import assert_no_secret_in, run_summary

from authbench.cli import main
from authbench.journeys.fastbrowser import FastBrowser
from authbench.journeys.settings import login_fields
from authbench.kinds.oidc import flow as oidc
from authbench_lab import lab as lab_api
from authbench_lab.config import KEYCLOAK_CLUSTER
from authbench_lab.keycloak import realm
from authbench_lab.keycloak import server as keycloak

TARGET = f"oidc+lab:{KEYCLOAK_CLUSTER}"
JWT_HEAD = "eyJhb"  # how every JWT (ID and access tokens) begins


def secret_of(lab) -> str:
    return keycloak.oidc_secret_file(lab).read_text().strip()


def run(lab, tmp_path: Path, *args: str, run_id: str = "o") -> tuple[int, dict | None]:
    return run_summary([*args, "--warmup", "0", "--lab-dir", str(lab.run_dir)], tmp_path, run_id)


def no_secret_in(folder: Path, *secrets: str) -> None:
    assert_no_secret_in(folder, secrets, (JWT_HEAD, "code_verifier"))


def test_the_oidc_secret_is_private_and_nowhere_else(kc_lab):
    secret = secret_of(kc_lab)
    assert keycloak.oidc_secret_file(kc_lab).stat().st_mode & 0o077 == 0
    assert secret not in (kc_lab.run_dir / "lab.json").read_text()
    for row in lab_api.status(kc_lab.run_dir):
        if row["name"] in ("keycloak-a", "keycloak-b"):
            assert secret not in " ".join(psutil.Process(row["pid"]).cmdline())


@pytest.mark.parametrize("args", [
    [TARGET, "--validate-id-token", "--userinfo"],  # the confidential RP, client_secret_basic
    [TARGET, "--client-auth", "client_secret_post"],
    ["lab:" + KEYCLOAK_CLUSTER, "--kind", "oidc", "--client-id", realm.OIDC_PUBLIC_CLIENT_ID, "--validate-id-token"],
], ids=["basic-validated-userinfo", "post", "public"])
def test_code_flows_on_keycloak_all_ok_and_no_secret_kept(kc_lab, tmp_path, capsys, args):
    code, summary = run(kc_lab, tmp_path, "--target", *args, "--pattern", "2x5")
    out = capsys.readouterr()
    assert code == 0, out.out + out.err
    (cell,) = summary["cells"]
    assert cell["summary"]["tests"] == 10 and cell["summary"]["errors"] == 0, cell["summary"]
    assert summary["config"]["target"] == keycloak.realm_url(kc_lab)
    no_secret_in(tmp_path / "o", secret_of(kc_lab), "pw-user00")


@pytest.mark.parametrize("grant", ["refresh", "client-credentials", "introspection", "logout"])
def test_each_grant_on_keycloak_all_ok_and_no_secret_kept(kc_lab, tmp_path, capsys, grant):
    """Keycloak's own endpoints from its discovery: the confidential RP's service account (client credentials),
    refresh and introspection of a user's tokens, RP-initiated logout back to the registered redirect URI."""
    logout = ["--post-logout-redirect-uri", realm.OIDC_REDIRECT_URI] if grant == "logout" else []
    code, summary = run(kc_lab, tmp_path, "--target", TARGET, "--grant", grant, *logout, "--pattern", "2x4")
    out = capsys.readouterr()
    assert code == 0, out.out + out.err
    (cell,) = summary["cells"]
    assert cell["summary"]["tests"] == 8 and cell["summary"]["errors"] == 0, cell["summary"]
    no_secret_in(tmp_path / "o", secret_of(kc_lab), "pw-user00")


def test_a_one_to_five_mix_of_logins_and_refreshes_at_a_rate_with_rows_per_journey(kc_lab, tmp_path, capsys):
    """Keycloak's own benchmark's traffic (1 code-flow login : 5 refreshes) at an arrival rate: each journey keeps
    its own count, errors and SLO, in summary.json and in the report's rows."""
    code, summary = run(kc_lab, tmp_path, "--target", TARGET, "--mix", "code-flow=1,refresh=5", "--rate", "6/s",
                        "--duration", "2s", "--slo", "errors<1%", run_id="mix")
    out = capsys.readouterr()
    assert code == 0, out.out + out.err
    (cell,) = summary["cells"]
    assert {name: (s["tests"], s["errors"]) for name, s in cell["journeys"].items()} == {
        "code-flow": (2, 0), "refresh": (10, 0)}, cell["journeys"]
    assert main(["report", str(tmp_path / "mix")]) == 0
    report = (tmp_path / "mix" / "report.md").read_text()
    assert "· code-flow" in report and "· refresh" in report, report
    no_secret_in(tmp_path / "mix", secret_of(kc_lab), "pw-user00")


@pytest.mark.parametrize(("args", "words"), [
    (["--accounts-template", "user{000..009}", "--password-rule", "no-{user}"],
     ["at step 'OP login POST'", "bad credentials"]),
    (["--client-secret-file", "WRONG"], ["at step 'OP token'", "token error: unauthorized_client"]),
    (["--redirect-uri", "http://127.0.0.1:9/not-registered"],
     ["at step 'OP authorization'", "provider error: invalid_redirect_uri: 400"]),
    (["--client-id", "nobody"], ["at step 'OP authorization'", "provider error: invalid_client: 400"]),
], ids=["bad-credentials", "wrong-secret", "redirect-uri-refused", "unknown-client"])
def test_preflight_failures_on_keycloak_are_one_line_exit_2(kc_lab, tmp_path, capsys, args, words):
    wrong = tmp_path / "wrong-secret"
    wrong.write_text("not-the-secret\n")
    code = main(["run", "--target", TARGET, *[str(wrong) if a == "WRONG" else a for a in args], "--pattern", "1x1",
                 "--lab-dir", str(kc_lab.run_dir), "--results", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert all(word in err for word in words), err
    assert secret_of(kc_lab) not in err and "not-the-secret" not in err


def test_a_replayed_code_is_invalid_grant_on_keycloak(kc_lab):
    client = oidc.Client(realm.OIDC_CLIENT_ID, realm.OIDC_REDIRECT_URI, auth=oidc.BASIC, secret=secret_of(kc_lab))
    ca = str(kc_lab.ca_cert)
    with FastBrowser(verify=ca, catch=client.caught) as browser, \
            FastBrowser(verify=ca, accept="application/json") as rp:
        provider = oidc.discover(rp, keycloak.realm_url(kc_lab))
        flow = oidc.Flow()
        oidc.authorize(browser, flow, provider, client, "user007", "pw-user007", login_fields())
        assert oidc.exchange(rp, flow, provider, client).access_token
        with pytest.raises(oidc.FlowFailed) as replayed:
            oidc.exchange(rp, flow, provider, client)
    assert replayed.value.reason == oidc.TOKEN_ERROR and replayed.value.detail.startswith("invalid_grant")


def test_check_cluster_on_keycloak_as_an_op(kc_lab, capsys):
    """Tests 1-3 with the code flow: each node logs in, SSO through the other, the form from A posted to B."""
    marks, out = cluster_check_marks(kc_lab, KEYCLOAK_CLUSTER, capsys, oidc=True)
    assert marks == (True, True, True), out
    assert "new SP session via B: ok; no password asked" in out and secret_of(kc_lab) not in out


def test_test4_oidc_returning_users_keep_sso_when_node_b_stops(kc_lab, tmp_path, capsys):
    """owners2 keeps two owners of each user session: returning OIDC users stay signed in (○)."""
    code, out, cell, fault = node_stop_run(kc_lab, KEYCLOAK_CLUSTER, tmp_path, capsys, target=TARGET)
    print(f"\nowners2 OIDC Test 4 (exit {code}): {json.dumps(fault)}; summary {json.dumps(cell['summary'])}")
    assert code == 0, out
    assert fault["logged_in_users"] > 0 and fault["test4"] == "○" and fault["reauthenticated_users"] == 0, fault
    assert cell["summary"]["tests"] == 100 and cell["summary"]["errors"] <= 4, cell["summary"]


def test_a_provider_that_answers_5xx_is_a_preflight_error(kc_lab, tmp_path, capsys):
    """Node B stopped: its own frontend answers 503; the issuer through it is a one-line http status error."""
    lab_api.stop_component(kc_lab.run_dir, "keycloak-b")
    issuer = f"{kc_lab.node_url(KEYCLOAK_CLUSTER, 'b')}/realms/{realm.REALM}"
    code = main(["run", "--kind", "oidc", "--target", issuer, "--client-id", realm.OIDC_PUBLIC_CLIENT_ID,
                 "--ca-bundle", str(kc_lab.ca_cert), "--accounts-template", "user{000..001}", "--pattern", "1x1",
                 "--results", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "at step 'OP discovery': http status: no discovery document: 503" \
        in err, err


def test_down_leaves_nothing(kc_lab):
    assert_down_leaves_nothing(kc_lab)
