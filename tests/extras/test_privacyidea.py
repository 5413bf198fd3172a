"""privacyIDEA on the lab: its own venv, its LDAP realm, and /validate/check with every token type."""

from __future__ import annotations

import dataclasses
import json
import sqlite3

import pytest

from authbench.accounts import Account, AccountPicker
from authbench.cli import main
from authbench.kinds.privacyidea.codes import hotp
from authbench.kinds.privacyidea.counters import CounterStore
from authbench.kinds.privacyidea.user import PrivacyIdeaSettings, check, interpret, new_pool
from authbench_lab import lab as lab_api
from authbench_lab.privacyidea import server

SECRET_FIELDS = ("pin", "key")


def settings(config, token_type: str, tmp_path) -> PrivacyIdeaSettings:
    tokens = json.loads(server.tokens_file(config).read_text())
    picker = AccountPicker([Account(user, "") for user in tokens])
    counters = CounterStore(server.root(config) / "hotp-counters.sqlite") if token_type == "hotp" else None
    return PrivacyIdeaSettings(config.privacyidea_url(), server.REALM, token_type, picker, tokens, counters, 10.0)


def test_status_row_own_venv_and_secrets_kept_private(extras_lab):
    rows = {row["name"]: row for row in lab_api.status(extras_lab.run_dir)}
    assert rows["privacyidea"]["healthy"], rows["privacyidea"]
    venv = server.venv_dir(extras_lab)
    assert (venv / "bin" / "gunicorn").is_file() and (venv / ".authbench-pins").read_text() == server.pins_hash()
    assert oct(server.tokens_file(extras_lab).stat().st_mode & 0o777) == "0o600"
    tokens = json.loads(server.tokens_file(extras_lab).read_text())
    assert len(tokens) == extras_lab.users and set(tokens["user000"]) == {"spass", "hotp", "totp"}
    logs = "".join(path.read_text(errors="replace") for path in server.root(extras_lab).glob("*.log"))
    for kinds in list(tokens.values())[:5]:
        for token in kinds.values():
            assert all(token[name] not in logs for name in SECRET_FIELDS if name in token)


@pytest.mark.parametrize(("token_type", "user"), [("spass", "user001"), ("hotp", "user002"), ("totp", "user003")])
def test_each_token_type_authenticates(extras_lab, token_type, user, tmp_path):
    given = settings(extras_lab, token_type, tmp_path)
    assert check(new_pool(given), given, user) == (True, "", "")


def test_wrong_otp_and_unknown_user_give_their_reasons(extras_lab, tmp_path):
    given = settings(extras_lab, "hotp", tmp_path)
    token = given.tokens["user005"]["hotp"]
    wrong = dict(given.tokens)
    wrong["user005"] = {"hotp": {**token, "key": "00" * 20}}  # right PIN, wrong secret
    ok, reason, _ = check(new_pool(given), PrivacyIdeaSettings(**{**given.__dict__, "tokens": wrong}), "user005")
    assert not ok and reason.startswith("wrong otp value")
    stranger = {**given.tokens, "nobody": given.tokens["user005"]}
    ok, reason, detail = check(new_pool(given), PrivacyIdeaSettings(**{**given.__dict__, "tokens": stranger}),
                               "nobody")
    assert (ok, reason) == (False, "user not found (904)") and "nobody" in detail


def test_hotp_counters_are_never_reused_across_users_or_processes(extras_lab, tmp_path):
    store_path = server.root(extras_lab) / "hotp-counters.sqlite"
    first, second = CounterStore(store_path), CounterStore(store_path)  # two processes' stores share the file
    other = first.take("OATH-user011")  # another test may have used this token already
    taken = [store.take("OATH-user010") for store in (first, second, first, second)]
    assert taken == sorted(set(taken)) and len(taken) == 4
    assert first.take("OATH-user011") == other + 1  # counters are per token: user010's did not move user011's
    given = settings(extras_lab, "hotp", tmp_path)
    pool = new_pool(given)
    assert [check(pool, given, "user010")[0] for _ in range(3)] == [True, True, True]  # window skips 4 values
    rows = dict(sqlite3.connect(store_path).execute("SELECT serial, next FROM counters").fetchall())
    assert rows["OATH-user010"] == taken[-1] + 4
    # a value privacyIDEA has seen is refused: the store is what keeps the load from sending one
    token = given.tokens["user010"]["hotp"]
    replay = token["pin"] + hotp(token["key"], rows["OATH-user010"] - 1, token["digits"])
    response = pool.request("POST", given.url + "/validate/check", encode_multipart=False, retries=False,
                            fields={"user": "user010", "realm": given.realm, "pass": replay})
    assert interpret(response.status, response.data)[0] is False


def test_run_lab_privacyidea_counts_and_keeps_no_secret(extras_lab, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("AUTHBENCH_LAB_DIR", str(extras_lab.run_dir))
    code = main(["run", "--target", "lab:privacyidea", "--otp-type", "hotp", "--pattern", "3x4", "--results",
                 str(tmp_path), "--run-id", "o"])
    out = capsys.readouterr().out
    assert code == 0, out
    document = json.loads((tmp_path / "o" / "summary.json").read_text())
    summary = document["cells"][0]["summary"]
    assert summary["tests"] == 12 and summary["errors"] == 0
    assert document["config"]["journey"] == "privacyidea-validate"
    everything = out + json.dumps(document) + (tmp_path / "o" / "samples.csv").read_text()
    tokens = json.loads(server.tokens_file(extras_lab).read_text())
    assert not any(token["pin"] in everything for kinds in tokens.values() for token in kinds.values())


def test_run_privacyidea_refuses_workers_in_one_line(extras_lab, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("AUTHBENCH_LAB_DIR", str(extras_lab.run_dir))
    code = main(["run", "--target", "lab:privacyidea", "--workers", "2", "--pattern", "1x1", "--results",
                 str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "one process" in err and len(err.strip().splitlines()) == 1


def test_user_cache_fills_on_the_first_pass_when_on(extras_lab, tmp_path):
    """The blog's cold cache: with UserCacheExpiration set, the first check of a user stores its lookup."""
    database = server.root(extras_lab) / "privacyidea.sqlite"

    def cached() -> set[str]:
        with sqlite3.connect(database) as db:
            return {row[0] for row in db.execute("SELECT username FROM usercache")}

    users = [f"user0{i}" for i in range(20, 26)]
    server.enrol(dataclasses.replace(extras_lab, privacyidea_cache=300))
    try:
        given = settings(extras_lab, "spass", tmp_path)
        pool = new_pool(given)
        assert [check(pool, given, user)[0] for user in users] == [True] * len(users)
        assert set(users) <= cached()
    finally:
        server.enrol(extras_lab)  # back to off, as the other tests expect
    with sqlite3.connect(database) as db:
        db.execute("DELETE FROM usercache")
    assert [check(pool, given, user)[0] for user in users] == [True] * len(users)
    assert not set(users) & cached()  # cache off: nothing stored


def test_onespan_levels_on_otp_with_the_servers_cpu(extras_lab, monkeypatch, tmp_path, capsys):
    """OneSpan's baseline (typical, then peak load, as arrival rates) against privacyIDEA's HOTP tokens, scaled
    down to seconds: each level a cell with its rates, and the CPU of privacyIDEA and of slapd beside it."""
    monkeypatch.setenv("AUTHBENCH_LAB_DIR", str(extras_lab.run_dir))
    code = main(["run", "--target", "lab:privacyidea", "--otp-type", "hotp", "--levels",
                 "typical=1/s:3s,peak=3/s:3s", "--results", str(tmp_path), "--run-id", "onespan"])
    out = capsys.readouterr().out
    assert code == 0, out
    cells = json.loads((tmp_path / "onespan" / "summary.json").read_text())["cells"]
    assert [cell["pattern"] for cell in cells] == ["typical", "peak"]
    assert [cell["open"]["target_rate"] for cell in cells] == [1.0, 3.0]
    assert [cell["summary"]["tests"] for cell in cells] == [3, 9] and all(c["summary"]["errors"] == 0 for c in cells)
    for cell in cells:
        parts = cell["resources"]["components"]
        assert {"privacyidea", "ldap", "generator"} <= set(parts) and parts["privacyidea"]["cpu_s"] > 0
    assert main(["report", str(tmp_path / "onespan")]) == 0  # the report renders a run of the new journey
    assert "privacyidea" in (tmp_path / "onespan" / "report.md").read_text()


def test_a_fault_plan_stops_slapd_under_an_otp_run(extras_lab, monkeypatch, tmp_path, capsys):
    """Test 4's fault plan on the OTP journey: privacyIDEA finds its users in LDAP, so stopping slapd fails
    checks (here they hang until the client's timeout: privacyIDEA waits for its LDAP pool, docs/privacyidea.md),
    the analysis gives the outage a recovery time but no Test 4 verdict, and checks pass again afterwards."""
    monkeypatch.setenv("AUTHBENCH_LAB_DIR", str(extras_lab.run_dir))
    try:
        code = main(["run", "--target", "lab:privacyidea", "--otp-type", "spass", "--pattern", "2x25", "--pace",
                     "0.2s", "--fault", "at=1s stop ldap; at=2.5s start ldap", "--results", str(tmp_path),
                     "--run-id", "f"])
    finally:
        lab_api.start_component(extras_lab.run_dir, "ldap")
    out = capsys.readouterr().out
    assert code == 0, out
    cell = json.loads((tmp_path / "f" / "summary.json").read_text())["cells"][0]
    stop, start = cell["faults"]
    assert stop["status"].startswith("stopped") and start["status"].startswith("started")
    assert cell["summary"]["tests"] == 50 and 0 < cell["summary"]["errors"] < 50
    analysis = cell["failover"]["faults"][0]
    assert analysis["test4"] == "-" and analysis["recovery_s"] >= 1.0
    given = settings(extras_lab, "spass", tmp_path)
    assert check(new_pool(given), given, "user030")[0]  # privacyIDEA answers again once slapd is back
