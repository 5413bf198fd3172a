"""Database logins against LDAP on the lab's real PostgreSQL and slapd: success, refusals, outages."""

from __future__ import annotations

import json
import time

import pytest

from authbench.cli import main
from authbench.kinds.postgres.client import CONNECT_ERROR, Endpoint, LoginFailure, login
from authbench_lab import lab as lab_api
from authbench_lab import postgres
from authbench_lab.config import LabConfig

REFUSED = "invalid_authorization_specification (28000)"  # what PostgreSQL tells a client LDAP refused
RESUME_LIMIT = 30.0  # seconds a restarted server gets to take logins again


def endpoint(config: LabConfig, database: str = "postgres") -> Endpoint:
    return Endpoint(config.host, config.extra_port("postgres"), database, timeout=5.0)


def refusal(config: LabConfig, user: str, password: str, database: str = "postgres") -> LoginFailure:
    with pytest.raises(LoginFailure) as caught:
        login(endpoint(config, database), user, password)
    return caught.value


def test_status_row_and_ldap_hba(extras_lab):
    rows = {row["name"]: row for row in lab_api.status(extras_lab.run_dir)}
    assert rows["postgres"]["healthy"], rows["postgres"]
    assert rows["postgres"]["url"] == extras_lab.postgres_url()
    hba = postgres.paths(extras_lab).hba.read_text()
    assert f"ldapport={extras_lab.shared_port('ldap')}" in hba and 'ldapprefix="uid="' in hba
    assert "trust" not in hba.split("METHOD", 1)[1]  # no way in but LDAP


def test_login_works_and_wrong_password_unknown_user_and_database_fail_with_reasons(extras_lab):
    login(endpoint(extras_lab), "user001", "pw-user001")
    wrong = refusal(extras_lab, "user001", "pw-user002")
    assert wrong.reason == REFUSED and 'user "user001"' in wrong.detail
    assert refusal(extras_lab, "nobody", "pw-nobody").reason == REFUSED  # no such LDAP entry (nor role)
    assert refusal(extras_lab, "user001", "pw-user001", "nosuchdb").reason == "invalid_catalog_name (3D000)"
    log = (extras_lab.component_dir("postgres") / "server.log").read_text()
    assert "Invalid credentials" in log  # the server's side: its bind to slapd was refused
    assert "pw-user002" not in log


def wait_for_login(config: LabConfig) -> int:
    """Logins tried until one works (bounded by RESUME_LIMIT); returns how many failed first."""
    deadline, failed = time.monotonic() + RESUME_LIMIT, 0
    while True:
        try:
            login(endpoint(config), "user003", "pw-user003")
            return failed
        except LoginFailure:
            failed += 1
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_stopped_slapd_fails_logins_and_they_resume(extras_lab):
    lab_api.stop_component(extras_lab.run_dir, "ldap")
    try:
        failure = refusal(extras_lab, "user003", "pw-user003")
        assert failure.reason == REFUSED  # PostgreSQL tells a client no more than that, by design
        log = (extras_lab.component_dir("postgres") / "server.log").read_text()
        assert "Can't contact LDAP server" in log  # its log names the cause
    finally:
        lab_api.start_component(extras_lab.run_dir, "ldap")
    wait_for_login(extras_lab)


def test_stopped_database_is_a_connect_error_and_start_brings_it_back(extras_lab):
    lab_api.stop_component(extras_lab.run_dir, "postgres")
    try:
        assert refusal(extras_lab, "user004", "pw-user004").reason == CONNECT_ERROR
    finally:
        result = lab_api.start_component(extras_lab.run_dir, "postgres")
    assert result["detail"] == "asks for the LDAP password"
    wait_for_login(extras_lab)


def run(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(["run", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_run_lab_postgres_counts_refusals_and_keeps_evidence(extras_env, tmp_path, capsys):
    rows = ["user,password"] + [f"user{i:03d},{'wrong' if i % 4 == 3 else f'pw-user{i:03d}'}" for i in range(8)]
    (tmp_path / "accounts.csv").write_text("\n".join(rows) + "\n")
    code, out, err = run(["--target", "lab:postgres", "--pattern", "2x8", "--accounts-csv",
                          str(tmp_path / "accounts.csv"), "--results", str(tmp_path), "--run-id", "p"], capsys)
    assert code == 0, out + err
    document = json.loads((tmp_path / "p" / "summary.json").read_text())
    summary = document["cells"][0]["summary"]
    assert summary["tests"] == 16 and summary["errors"] == 4 and summary["reasons"] == {REFUSED: 4}
    assert document["config"]["journey"] == "database-login" and "time_wait_after" in document["cells"][0]
    kept = (tmp_path / "p" / "failures").glob("*.txt")
    assert any("LDAP authentication failed" in path.read_text() for path in kept)
    everything = out + json.dumps(document) + (tmp_path / "p" / "samples.csv").read_text()
    assert "pw-user" not in everything and "wrong" not in everything
    assert main(["report", str(tmp_path / "p")]) == 0  # the report renders database-login runs
    assert REFUSED in (tmp_path / "p" / "report.md").read_text()


@pytest.mark.parametrize(("args", "message"), [
    (["--target", "postgresql://127.0.0.1:1/postgres", "--accounts-template", "user{000..009}"], "connect error"),
    (["--target", "lab:postgres", "--accounts-template", "user{000..009}", "--password-rule", "x{user}"],
     REFUSED),
    (["--target", "postgresql://me:secret@127.0.0.1:1/db", "--accounts-template", "user{000..009}"],
     "no user or password"),
])
def test_bad_database_targets_exit_2_with_one_line(extras_env, tmp_path, capsys, args, message):
    code, out, err = run([*args, "--pattern", "1x1", "--results", str(tmp_path)], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], err
    assert "secret" not in err + out


def test_lab_up_refuses_an_unknown_optional_server(tmp_path, capsys):
    code = main(["lab", "up", "--lab-dir", str(tmp_path), "--with", "oracle"])
    err = capsys.readouterr().err
    assert code == 2 and "unknown --with 'oracle'" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("target", ["lab:postgres", "lab:privacyidea"])
def test_a_database_or_otp_target_under_load_elsewhere_is_refused(extras_env, tmp_path, capsys, target):
    from authbench.targets_lock import lab_key, target_lock

    args = ["--target", target, "--pattern", "1x1", "--results", str(tmp_path), "--run-id", "busy"]
    if target == "lab:privacyidea":
        args += ["--otp-type", "spass"]
    with target_lock(lab_key(extras_env.run_dir), "authbench compare (results elsewhere)"):
        code, _, err = run(args, capsys)
    assert code == 2 and err.count("\n") == 1 and "is already under load by authbench compare" in err
    assert not (tmp_path / "busy").exists()


def test_a_fault_plan_stops_and_starts_the_database_inside_a_paced_run(extras_env, tmp_path, capsys):
    """Test 4's fault plans on a database-login run: PostgreSQL stopped and started by the plan, every login
    tried while it was down a connect error, logins again once it is back; no SSO, so no Test 4 verdict."""
    try:
        code, out, err = run(["--target", "lab:postgres", "--pattern", "2x25", "--pace", "0.2s", "--fault",
                              "at=1s stop postgres; at=2.5s start postgres", "--results", str(tmp_path),
                              "--run-id", "f"], capsys)
    finally:
        lab_api.start_component(extras_env.run_dir, "postgres")
        wait_for_login(extras_env)
    assert code == 0, out + err
    cell = json.loads((tmp_path / "f" / "summary.json").read_text())["cells"][0]
    stop, start = cell["faults"]
    assert stop["status"].startswith("stopped") and start["status"].startswith("started")
    down = [r for r in (tmp_path / "f" / "samples.csv").read_text().splitlines()[1:]
            if stop["time"] + stop["seconds"] <= float(r.split(",", 1)[0]) < start["time"]]
    assert down and all(f",error,{CONNECT_ERROR}," in row for row in down)
    assert cell["failover"]["faults"][0]["test4"] == "-" and cell["summary"]["tests"] == 50
    assert cell["summary"]["errors"] < 50  # the logins before the stop and after the restart worked
