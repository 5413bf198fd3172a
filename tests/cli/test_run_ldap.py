"""`authbench run` with LDAP targets: the patterns, warm-up, repetitions and results of SAML runs, for binds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import test_run

from authbench.results.recorder import read_samples
from authbench_lab import slapd
from authbench_lab.config import LDAP_IDP_DN, LDAP_PEOPLE

ROOT = Path(__file__).resolve().parents[2]
lab_env, run = test_run.lab_env, test_run.run  # the SAML run tests' fixture and helper
WAIT_LIMIT = 60.0


def test_patterns_warmup_repeat_and_result_codes(lab_env, tmp_path, capsys):
    rows = ["user,password"] + [f"user{i:03d},{'wrong' if i % 5 == 4 else f'pw-user{i:03d}'}" for i in range(10)]
    (tmp_path / "accounts.csv").write_text("\n".join(rows) + "\n")
    code, out, err = run(["--target", "lab:ldap", "--pattern", "2x10,5x4", "--warmup", "0.5s", "--repeat", "2",
                          "--accounts-csv", str(tmp_path / "accounts.csv"), "--results", str(tmp_path),
                          "--run-id", "l"], capsys)
    assert code == 0, out + err
    document = json.loads((tmp_path / "l" / "summary.json").read_text())
    assert [(c["pattern"], c["summary"]["tests"]) for c in document["cells"]] == [
        ("2x10", 20), ("2x10", 20), ("5x4", 20), ("5x4", 20)]
    assert all(c["summary"]["errors"] == 4 and c["summary"]["reasons"] == {"invalidCredentials (49)": 4}
               for c in document["cells"])  # sequential accounts: every fifth has a wrong password
    samples = list(read_samples(tmp_path / "l" / "samples.csv"))
    assert sum(s.phase == "measured" for s in samples) == 80 and any(s.phase == "warmup" for s in samples)
    assert document["config"]["journey"] == "ldap-bind" and "2x10 #2" in out and "average" in out
    assert "pw-user" not in (tmp_path / "l" / "samples.csv").read_text() + json.dumps(document) + out


def test_ldaps_search_then_bind_and_new_connections(lab_env, tmp_path, capsys):
    secret = tmp_path / "idp.pw"
    secret.write_text(slapd.paths(lab_env).idp_password.read_text())
    code, out, err = run(["--target", "lab:ldaps", "--pattern", "3x5", "--search-base", LDAP_PEOPLE,
                          "--search-as", LDAP_IDP_DN, "--search-password-file", str(secret), "--new-connection",
                          "--results", str(tmp_path), "--run-id", "s"], capsys)
    assert code == 0, out + err
    document = json.loads((tmp_path / "s" / "summary.json").read_text())
    assert document["cells"][0]["summary"]["tests"] == 15 and document["cells"][0]["summary"]["errors"] == 0
    assert document["config"]["ldap"]["mode"] == "search-then-bind"
    assert "time_wait_after" in document["cells"][0]
    assert f"TIME_WAIT towards port {lab_env.shared_port('ldaps')}" in out
    assert secret.read_text().strip() not in json.dumps(document) + out


@pytest.mark.parametrize(("args", "message"), [
    (["--target", "ldap://127.0.0.1:1"], "connect error"),
    (["--target", "lab:ldap", "--account", "user001", "--password-file", "/dev/null"], "empty password"),
    (["--target", "lab:ldap", "--accounts-template", "user{000..009}", "--password-rule", "x{user}"],
     "invalidCredentials (49)"),
    (["--target", "ldap://127.0.0.1:1", "--bind-dn", "uid=fixed"], "--bind-dn with {user}"),
    (["--target", "lab:ldaps", "--start-tls"], "--start-tls is for ldap://"),
])
def test_bad_ldap_targets_exit_2_with_one_line(lab_env, tmp_path, capsys, args, message):
    if "--bind-dn" not in args and "lab:" not in args[1]:
        args += ["--bind-dn", "uid={user},ou=people,dc=example,dc=org", "--accounts-template", "user{000..009}"]
    code, out, err = run([*args, "--pattern", "1x1", "--results", str(tmp_path)], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], err


def test_plain_locust_runs_the_ldap_locustfile(lab, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(ROOT / "locustfiles" / "ldap_bind.py"), "--headless",
         "-u", "3", "-r", "3", "-t", "2s", "--host", lab.ldap_url(), "--accounts-template", "user{000..199}",
         "--bind-dn", "uid={user},ou=people,dc=example,dc=org",
         "--only-summary"], capture_output=True, text=True, timeout=WAIT_LIMIT, cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-2000:]
    assert "LDAP bind" in output
