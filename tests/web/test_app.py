"""`authbench web`'s routes through Flask's test client (real app, real lab; only the socket is skipped).

Login, refusals and a run started in-process against the session lab, with failures injected.
"""

from __future__ import annotations

import base64
import json
import shutil
import time
from pathlib import Path

import gevent
import pytest
from campaign_data import make_campaign

from authbench.cli import build_parser, main
from authbench.cli.web import build
from authbench.web.auth import AUTH_ENV, BAD_LOGIN

from ports import WEB

ACCOUNT, SECRET = "admin", "s3cret-Web-pass"
RUN_LIMIT = 60.0  # seconds the in-process run may take


def _build(tmp_path, *extra: str, environ: dict[str, str] | None = None):
    args = build_parser().parse_args(["web", "--web-port", str(WEB + 1), "--results", str(tmp_path / "results"),
                                      *extra])
    return build(args, environ or {})


def _basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


@pytest.fixture
def lab_env(lab, monkeypatch):
    monkeypatch.setenv("AUTHBENCH_LAB_DIR", str(lab.run_dir))
    return lab


def test_login_guards_every_route(tmp_path):
    environment, web_ui, _, _ = _build(tmp_path, "--web-host", "0.0.0.0", environ={AUTH_ENV: f"{ACCOUNT}:{SECRET}"})
    client = web_ui.app.test_client()
    for path in ("/authbench/", "/", "/stats/requests", "/authbench/static/vendor/uplot/uPlot.iife.min.js"):
        assert client.get(path).status_code == 302, path  # pages: to the login page
    for path in ("/authbench/api/state", "/authbench/api/campaign", "/authbench/api/timeline", "/metrics",
                 "/authbench/failures/r/x.txt", "/authbench/runs/r/failures/x.txt",
                 "/authbench/runs/c/runs/m/failures/x.txt"):
        answer = client.get(path)  # API calls and the failure examples a report links: a 401 a script can read
        assert answer.status_code == 401 and answer.get_json()["ok"] is False, path
        assert answer.headers["WWW-Authenticate"].startswith("Basic"), path
    assert client.get("/authbench/api/state", headers=_basic(ACCOUNT, "wrong")).status_code == 401
    answer = client.get("/authbench/api/state", headers=_basic(ACCOUNT, SECRET))
    assert answer.status_code == 200 and answer.get_json()["state"] == "idle"
    bad = client.post("/authbench/login", data={"username": ACCOUNT, "password": "nope"})
    assert bad.status_code == 302 and bad.location.endswith("/login")
    assert BAD_LOGIN in client.get("/login").get_data(as_text=True)
    good = client.post("/authbench/login", data={"username": ACCOUNT, "password": SECRET})
    assert good.status_code == 302 and good.location.endswith("/authbench/")
    assert "SameSite=Strict" in good.headers["Set-Cookie"]  # never sent with another site's request
    page = client.get("/authbench/")
    assert page.status_code == 200 and b"Grinder table" in page.data
    for path in ("/", "/login", "/authbench/api/state", "/authbench/api/campaign"):
        assert SECRET not in client.get(path).get_data(as_text=True)
    assert client.get("/authbench/api/state").get_json()["login"] is True
    timeline = client.get("/authbench/api/timeline").get_json()  # the chart's data, idle: no bucket yet
    assert timeline["series"]["t"] == [] and timeline["marks"] == []
    assert client.get("/authbench/static/vendor/uplot/uPlot.iife.min.js").status_code == 200
    assert client.get("/authbench/static/no-such-file.js").status_code == 404  # an error, not a 200 page
    out = client.get("/authbench/logout")
    assert out.status_code == 302 and out.location.endswith("/login")
    assert client.get("/authbench/api/state").status_code == 401  # the session is gone
    environment.runner.quit()


def test_foreign_hosts_and_cross_origin_reads_are_refused(tmp_path):
    environment, web_ui, _, _ = _build(tmp_path, "--web-allowed-host", "bench.example.org")
    client = web_ui.app.test_client()
    for host in ("localhost:8089", "127.0.0.1:8089", "[::1]:8089", "bench.example.org:8089", "BENCH.example.org"):
        assert client.get("/authbench/api/state", headers={"Host": host}).status_code == 200, host
    rebound = client.get("/authbench/api/state", headers={"Host": "attacker.example:8089"})  # DNS rebinding
    assert rebound.status_code == 421 and "--web-allowed-host" in rebound.get_json()["message"]
    assert client.post("/authbench/api/start", json={"target": "lab:local"},
                       headers={"Host": "attacker.example:8089"}).status_code == 421
    assert client.get("/", headers={"Host": "attacker.example"}).status_code == 421  # Locust's pages too
    read = client.get("/authbench/api/state", headers={"Origin": "https://evil.example"})
    assert read.status_code == 200 and "Access-Control-Allow-Origin" not in read.headers  # no cross-origin read
    preflight = client.options("/authbench/api/start", headers={
        "Origin": "https://evil.example", "Access-Control-Request-Method": "POST"})
    assert "Access-Control-Allow-Origin" not in preflight.headers
    assert client.get("/authbench/api/state").get_json()["login"] is False
    environment.runner.quit()


def test_locust_start_dialog_points_to_ours_and_forged_requests_are_refused(tmp_path):
    environment, web_ui, _, _ = _build(tmp_path)
    client = web_ui.app.test_client()
    index = client.get("/").get_data(as_text=True)  # Locust's own UI, with a link to ours in its Download tab
    assert "window.templateArgs" in index and '"href": "/authbench/"' in index
    swarm = client.post("/swarm", data={"user_count": "5", "spawn_rate": "1"}).get_json()
    assert swarm["success"] is False and "/authbench/" in swarm["message"]
    assert environment.runner.state == "ready"  # nothing started
    form = {"target": "lab:stateless", "pattern": "2x5"}
    assert client.post("/authbench/api/start", data=form).status_code == 400  # an HTML form post
    forged = client.post("/authbench/api/start", json=form, headers={"Origin": "https://evil.example"})
    assert forged.status_code == 403
    assert client.post("/authbench/api/stop", json={}, headers={"Origin": "https://evil.example"}).status_code == 403
    assert client.post("/authbench/api/stop", json={}).get_json() == {"ok": False}  # nothing to stop
    environment.runner.quit()


def test_no_page_can_be_framed_by_another_site(tmp_path):
    run_id = "r1"
    (tmp_path / "results" / run_id / "failures").mkdir(parents=True)
    (tmp_path / "results" / run_id / "failures" / "x.txt").write_text("trail")
    environment, web_ui, _, _ = _build(tmp_path)
    client = web_ui.app.test_client()
    for path in ("/", "/stats/requests", "/login", "/assets/favicon-light.png", "/authbench/", "/authbench/api/state",
                 "/authbench/static/no-such-file.js", f"/authbench/runs/{run_id}/failures/x.txt"):
        answer = client.get(path)
        assert answer.headers["X-Frame-Options"] == "DENY", path
        assert "frame-ancestors 'none'" in answer.headers["Content-Security-Policy"], path
    assert client.get(f"/authbench/runs/{run_id}/failures/x.txt").headers["Content-Security-Policy"] == \
        "sandbox; frame-ancestors 'none'"  # a foreign page's copy still runs nothing
    rebound = client.get("/", headers={"Host": "attacker.example"})
    assert rebound.status_code == 421 and rebound.headers["X-Frame-Options"] == "DENY"
    environment.runner.quit()


@pytest.mark.parametrize(("form", "message"), [
    ({"target": "lab:stateless", "pattern": "2x2O"}, "is not USERSxRUNS"),
    ({"target": "lab:stateless", "pattern": "2x5", "warmup": "soon"}, "duration 'soon'"),
    ({"target": "lab:stateless", "pattern": "2x5", "repeat": "two"}, "repetitions 'two'"),
    ({"target": "", "pattern": "2x5"}, "give a target"),
    ({"target": "lab:nope", "pattern": "2x5"}, "has no 'nope' cluster"),
    ({"target": "ftp://127.0.0.1/", "pattern": "2x5"}, "is not an http(s) URL"),
    ({"target": "https://idp.invalid/", "pattern": "2x5"}, "is not allowed here"),
])
def test_bad_form_is_one_line(lab_env, tmp_path, form, message):
    environment, web_ui, _, _ = _build(tmp_path)
    answer = web_ui.app.test_client().post("/authbench/api/start", json=form)
    body = answer.get_json()
    assert answer.status_code == 400 and body["ok"] is False and message in body["message"]
    assert "\n" not in body["message"] and "Traceback" not in body["message"]
    environment.runner.quit()


def test_run_started_here_is_written_and_shown_with_failures(lab_env, tmp_path):
    rows = ["user,password"] + [f"user{i:03d},{'wrong' if i % 5 == 4 else f'pw-user{i:03d}'}" for i in range(10)]
    (tmp_path / "accounts.csv").write_text("\n".join(rows) + "\n")
    make_campaign(tmp_path / "results")
    environment, web_ui, launcher, _ = _build(tmp_path, "--run-options", f"--accounts-csv {tmp_path / 'accounts.csv'}")
    client = web_ui.app.test_client()
    answer = client.post("/authbench/api/start", json={"target": "lab:stateless", "pattern": "2x10", "warmup": "0.5s"})
    assert answer.status_code == 200, answer.get_json()
    run_id = answer.get_json()["run_id"]
    assert client.post("/authbench/api/start", json={"target": "lab:stateless", "pattern": "1x1"}).status_code == 400
    launcher.greenlet.join(timeout=RUN_LIMIT)
    state = client.get("/authbench/api/state").get_json()
    assert state["state"] == "done" and state["busy"] is False
    document = json.loads((tmp_path / "results" / run_id / "summary.json").read_text())
    summary = document["cells"][0]["summary"]
    assert document["finished"] and summary["tests"] == 20 and summary["errors"] == 4  # preflight took user000
    assert state["rows"][0]["summary"]["tests"] == 20 and state["rows"][0]["summary"]["tps"] == summary["tps"]
    assert state["reasons"] == [{"reason": "bad credentials", "measured": 4, "warmup": state["reasons"][0]["warmup"],
                                 "example": "bad-credentials-1.txt"}]
    example = client.get(f"/authbench/failures/{run_id}/bad-credentials-1.txt")  # the page links it
    assert example.status_code == 200 and example.mimetype == "text/plain"
    assert "reason: bad credentials" in example.get_data(as_text=True) and "[IdP login POST]" in example.get_data(
        as_text=True)
    assert client.get(f"/authbench/failures/{run_id}/..%2Fsummary.json").status_code == 404
    assert document["failures"]["bad credentials"] == {"journeys": 4, "examples": [
        "failures/bad-credentials-1.txt", "failures/bad-credentials-2.txt", "failures/bad-credentials-3.txt"]}
    assert state["journeys"]["measured"] == 20 and state["journeys"]["planned"] == 20
    assert sum(u["measured"] for u in state["current"]["per_user"]) == 20
    assert document["config"]["accounts"]["type"] == "csv"
    # No password anywhere the UI serves: ours, Locust's JSON, the run folder.
    served = "".join(client.get(path).get_data(as_text=True) for path in (
        "/authbench/api/state", "/authbench/api/campaign", "/", "/stats/requests", "/exceptions", "/logs", "/tasks"))
    written = "".join(path.read_text() for path in (tmp_path / "results" / run_id).rglob("*") if path.is_file())
    assert "pw-" not in served + written and "wrong" not in served + written
    scraped = client.get("/metrics").get_data(as_text=True)  # the UI's runs, for Prometheus
    assert 'authbench_journeys_total{outcome="error",phase="measured",reason="bad credentials"} 4.0' in scraped
    environment.runner.quit()


@pytest.mark.parametrize(("args", "environ", "message"), [
    (["--web-host", "0.0.0.0"], {}, "refusing to serve the web UI on 0.0.0.0 without a login"),
    (["--web-host", ""], {}, "on every address without a login"),
    (["--web-login"], {}, "--web-login needs an account"),
    ([], {AUTH_ENV: "no-colon-secret"}, f"${AUTH_ENV} must hold USER:PASSWORD"),
    (["--web-auth-file", "/nonexistent/auth"], {}, "cannot read --web-auth-file"),
    (["--run-options=--no-such-option"], {}, "unrecognized arguments: --no-such-option"),
    (["--run-options=--fault 'at=1s run=true'"], {}, "--run-options: 'at=1s run=true': run=COMMAND faults are "
                                                      "refused by the web UI"),
])
def test_command_line_refusals(tmp_path, capsys, monkeypatch, args, environ, message):
    monkeypatch.delenv(AUTH_ENV, raising=False)
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    code = main(["web", "--web-port", str(WEB + 2), "--results", str(tmp_path), *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert "no-colon-secret" not in err


def test_stop_ends_the_run_and_keeps_its_samples(lab_env, tmp_path):
    environment, web_ui, launcher, _ = _build(tmp_path)
    client = web_ui.app.test_client()
    answer = client.post("/authbench/api/start", json={"target": "lab:stateless", "pattern": "2x1000",
                                                       "warmup": "1m", "repeat": "3"})
    run_id = answer.get_json()["run_id"]
    deadline = time.monotonic() + RUN_LIMIT
    while client.get("/authbench/api/state").get_json()["journeys"]["warmup"] < 5:  # load is on
        assert time.monotonic() < deadline
        gevent.sleep(0.1)
    clock = client.get("/authbench/api/state").get_json()["time"]
    assert 0 < clock["warmup_left_s"] <= 60 and clock["elapsed_s"] > 0 and clock["left_s"] > 60  # a long plan
    assert client.post("/authbench/api/stop", json={}).get_json() == {"ok": True}
    state = client.get("/authbench/api/state").get_json()
    assert state["state"] == "stopped" and not state["busy"] and environment.runner.state == "stopped"
    assert state["time"]["left_s"] == 0 and state["time"]["warmup_left_s"] is None
    rows = (tmp_path / "results" / run_id / "samples.csv").read_text().splitlines()
    assert len(rows) - 1 >= 5 and all(",warmup," in row for row in rows[1:])
    assert json.loads((tmp_path / "results" / run_id / "summary.json").read_text())["finished"] is None
    environment.runner.quit()


def test_estimate_before_a_long_plan(tmp_path):
    environment, web_ui, _, _ = _build(tmp_path)
    client = web_ui.app.test_client()
    long = client.post("/authbench/api/estimate", json={"pattern": "2x1000,10x200,20x200", "warmup": "60s",
                                                        "repeat": "3"}).get_json()
    short = client.post("/authbench/api/estimate", json={"pattern": "1x5", "warmup": "0", "repeat": "1"}).get_json()
    assert long["ok"] and long["confirm"] and long["seconds"] > 600 and long["text"].endswith("s")
    assert short["ok"] and not short["confirm"] and short["seconds"] < 10
    bad = client.post("/authbench/api/estimate", json={"pattern": "2x"})
    assert bad.status_code == 400 and "'2x' is not USERSxRUNS" in bad.get_json()["message"]
    environment.runner.quit()


def test_locusts_own_stop_ends_the_plan_and_reset_and_edit_are_refused(lab_env, tmp_path):
    environment, web_ui, launcher, _ = _build(tmp_path)
    client = web_ui.app.test_client()
    answer = client.post("/authbench/api/start", json={"target": "lab:stateless", "pattern": "2x300", "warmup": "0"})
    run_id = answer.get_json()["run_id"]
    deadline = time.monotonic() + RUN_LIMIT
    while client.get("/authbench/api/state").get_json()["journeys"]["measured"] < 5:  # the cell is measuring
        assert time.monotonic() < deadline
        gevent.sleep(0.1)
    for path, data in (("/stats/reset", None), ("/user", {"user_class_name": "SAMLUser", "user_count": 9})):
        refused = client.post(path, json=data)
        assert refused.status_code == 409 and "authbench plan runs" in refused.get_json()["message"], path
    for path in ("/stop", "/stats/reset", "/user", "/swarm"):  # another site's page posting a plain form
        for sender in ({"Origin": "https://evil.example"}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}):
            forged = client.post(path, data={"user_count": "1"}, headers=sender)
            assert forged.status_code == 403 and forged.get_json()["success"] is False, (path, sender)
    assert launcher.running and environment.runner.state in ("spawning", "running")  # still measuring
    stopped = client.post("/stop", headers={"Origin": "http://localhost", "Sec-Fetch-Site": "same-origin"})
    assert stopped.get_json()["success"] is True
    state = client.get("/authbench/api/state").get_json()
    assert state["state"] == "stopped" and not state["busy"] and "Locust's STOP button" in state["message"]
    assert environment.runner.state == "stopped"
    document = json.loads((tmp_path / "results" / run_id / "summary.json").read_text())
    assert document["cells"] == [] and document["averages"] == {}  # the cut cell counts nowhere …
    stopped_by = document["interrupted"]
    assert stopped_by["by_user"] and "Locust's STOP button" in stopped_by["by"]  # … it is marked stopped …
    assert stopped_by["cell"] == {"pattern": "2x300", "repetition": 1}
    rows = (tmp_path / "results" / run_id / "samples.csv").read_text().splitlines()
    assert len(rows) - 1 >= 5  # … and its journeys stay in the samples
    assert client.post("/stats/reset").status_code == 200  # no plan running: Locust's own again
    environment.runner.quit()


def test_a_target_under_load_elsewhere_is_refused(lab_env, tmp_path):
    from authbench.targets_lock import lab_key, target_lock

    environment, web_ui, launcher, _ = _build(tmp_path)
    client = web_ui.app.test_client()
    with target_lock(lab_key(lab_env.run_dir), "authbench run (results from the CLI)"):
        answer = client.post("/authbench/api/start", json={"target": "lab:stateless", "pattern": "1x1"})
        assert answer.status_code == 400 and "already under load by authbench run (results from the CLI)" in \
            answer.get_json()["message"]
        assert not launcher.running
    answer = client.post("/authbench/api/start", json={"target": "lab:stateless", "pattern": "1x1"})
    assert answer.status_code == 200  # free again
    launcher.greenlet.join(timeout=RUN_LIMIT)
    environment.runner.quit()


def test_runs_started_anywhere_are_listed_live_with_reports_and_a_comparison(lab_env, tmp_path):
    import subprocess
    import sys

    environment, web_ui, _, _ = _build(tmp_path)
    client = web_ui.app.test_client()
    results = tmp_path / "results"
    make_campaign(results)
    assert main(["run", "--target", "lab:local", "--pattern", "1x3", "--results", str(results), "--run-id", "a"]) == 0
    command = [sys.executable, "-m", "authbench", "run", "--target", "lab:local", "--pattern", "2x60",
               "--results", str(results), "--run-id", "b"]
    cli_run = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline, seen = time.monotonic() + RUN_LIMIT, set()
        while "done" not in seen:  # the CLI's run, followed through its results folder
            assert time.monotonic() < deadline and (cli_run.poll() in (None, 0)), cli_run.stderr.read()
            rows = {row["id"]: row for row in client.get("/authbench/api/runs").get_json()["runs"]}
            if "b" in rows:
                seen.add(rows["b"]["state"])
            gevent.sleep(0.2)
        assert "running" in seen
    finally:
        cli_run.wait(timeout=RUN_LIMIT)
    rows = {row["id"]: row for row in client.get("/authbench/api/runs").get_json()["runs"]}
    assert rows["a"]["tests"] == 3 and rows["b"]["tests"] == 120 and rows["b"]["target"].endswith("/secure/")
    assert {row["id"] for row in rows.values() if row["kind"] == "campaign"} == {"campaign-1"}

    built = client.post("/authbench/api/runs/a/report", json={})
    assert built.status_code == 200 and built.get_json()["url"] == "runs/a/report.html"
    page = client.get("/authbench/runs/a/report.html")
    assert page.status_code == 200 and page.mimetype == "text/html" and b"authbench report" in page.data
    assert client.post("/authbench/api/runs/nope/report", json={}).status_code == 404
    compared = client.get("/authbench/compare?a=a&b=b")
    assert compared.status_code == 200 and "attachment" in compared.headers["Content-Disposition"]
    html = compared.get_data(as_text=True)
    assert "1x3" in html and "2x60" in html  # both runs' patterns, side by side
    assert client.get("/authbench/compare?a=a&b=..").status_code == 400
    environment.runner.quit()


def test_an_unfinished_run_is_running_while_its_samples_grow(tmp_path):
    from authbench.web.runs import INTERRUPTED, RUNNING, RUNNING_QUIET_S, list_runs

    folder = tmp_path / "r1"
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps({"started": 1.0, "finished": None, "cells": [], "config": {}}))
    (folder / "samples.csv").write_text("start\n")
    stamp = (folder / "samples.csv").stat().st_mtime
    assert list_runs(tmp_path, now=stamp + 1)[0]["state"] == RUNNING
    assert list_runs(tmp_path, now=stamp + RUNNING_QUIET_S + 1)[0]["state"] == INTERRUPTED
    (tmp_path / "..hidden").mkdir()
    assert [row["id"] for row in list_runs(tmp_path)] == ["r1"]


def test_a_url_target_with_uploaded_accounts_and_a_ca_bundle(lab_env, tmp_path):
    import tempfile
    from pathlib import Path

    files = tmp_path / "files"
    files.mkdir()
    shutil.copy(lab_env.ca_cert, files / "lab-ca.pem")
    environment, web_ui, launcher, _ = _build(tmp_path, "--files-dir", str(files))
    client = web_ui.app.test_client()
    before = set(Path(tempfile.gettempdir()).glob("authbench-accounts-*"))
    csv = "user,password\nuser001,pw-user001\nuser002,Uploaded-Wr0ng\nuser003,pw-user003\n"
    form = {"target": lab_env.sp_url("local") + "/secure/", "pattern": "1x4", "ca_bundle": "lab-ca.pem",
            "accounts_csv_text": csv}
    answer = client.post("/authbench/api/start", json=form)
    assert answer.status_code == 200, answer.get_json()
    launcher.greenlet.join(timeout=RUN_LIMIT)
    run_dir = tmp_path / "results" / answer.get_json()["run_id"]
    document = json.loads((run_dir / "summary.json").read_text())
    assert document["cells"][0]["summary"]["tests"] == 4 and document["cells"][0]["summary"]["errors"] >= 1
    assert document["config"]["accounts"] == {"type": "csv", "file": "uploaded in the web UI", "accounts": 3,
                                              "order": "sequential"}
    written = "".join(p.read_text(errors="replace") for p in run_dir.rglob("*") if p.is_file())
    assert "Uploaded-Wr0ng" not in written and "pw-user00" not in written
    assert set(Path(tempfile.gettempdir()).glob("authbench-accounts-*")) == before  # the upload is gone
    bad = client.post("/authbench/api/start", json={**form, "ca_bundle": "none.pem"})
    assert bad.status_code == 400 and "CA bundle 'none.pem': no such file in --files-dir" in bad.get_json()["message"]
    environment.runner.quit()


def test_a_fault_plan_from_the_form_is_played_marked_and_not_replayed(lab_env, tmp_path):
    """Test 4 from the web UI: returning users, a node stopped and started in the measured phase, the faults
    on the chart's marks and in summary.json; the next run (same UI process) plays no fault of its own."""
    from authbench_lab import lab as lab_api

    environment, web_ui, launcher, _ = _build(tmp_path)
    client = web_ui.app.test_client()
    form = {"target": "lab:stateless", "pattern": "8x14", "warmup": "0", "reuse_session": "on", "pace": "0.5s",
            "fault": "at=2s stop idp-a; at=4.5s start idp-a"}
    try:
        answer = client.post("/authbench/api/start", json=form)
        assert answer.status_code == 200, answer.get_json()
        launcher.greenlet.join(timeout=RUN_LIMIT)
    finally:
        lab_api.start_component(lab_env.run_dir, "stateless/idp-a")  # already running unless the run broke off
    state = client.get("/authbench/api/state").get_json()
    assert state["state"] == "done", state["message"]
    assert [m["label"] for m in state["marks"] if m["what"] == "fault"] == ["stop stateless/idp-a",
                                                                           "start stateless/idp-a"]
    cell = json.loads((tmp_path / "results" / answer.get_json()["run_id"] / "summary.json").read_text())["cells"][0]
    assert [f["ok"] for f in cell["faults"]] == [True, True] and cell["failover"]["faults"][0]["logged_in_users"] == 8
    again = client.post("/authbench/api/start", json={"target": "lab:stateless", "pattern": "1x2", "warmup": "0"})
    launcher.greenlet.join(timeout=RUN_LIMIT)
    state = client.get("/authbench/api/state").get_json()
    assert state["state"] == "done" and not [m for m in state["marks"] if m["what"] == "fault"]
    second = json.loads((tmp_path / "results" / again.get_json()["run_id"] / "summary.json").read_text())["cells"][0]
    assert not second.get("faults")
    environment.runner.quit()


def test_fault_commands_only_with_allow_fault_commands(lab_env, tmp_path):
    """Issue 25 item 3: the form's fault plan ran any command (`run=touch /tmp/PWNED`) as the UI's user, for
    anyone who could reach the page (on loopback, any local user). Lab stop/start items stay allowed."""
    pwned = tmp_path / "PWNED"
    environment, web_ui, launcher, _ = _build(tmp_path)
    client = web_ui.app.test_client()
    for plan, item in ((f"at=1s run=touch {pwned}", f"at=1s run=touch {pwned}"),
                       (f"at=1s stop idp-a; at=2s start idp-a; at=3s run=touch {pwned}", f"at=3s run=touch {pwned}")):
        answer = client.post("/authbench/api/start", json={"target": "lab:stateless", "pattern": "1x1",
                                                           "fault": plan})
        message = answer.get_json()["message"]
        assert answer.status_code == 400 and "\n" not in message, message
        assert f"fault plan: '{item}': run=COMMAND faults are refused by the web UI" in message
        assert "--allow-fault-commands" in message and "lab stop/start items are allowed" in message
        assert not launcher.running
    assert not pwned.exists()
    assert not list((tmp_path / "results").iterdir())  # no run folder either
    environment.runner.quit()

    environment, web_ui, launcher, _ = _build(tmp_path, "--allow-fault-commands")
    client = web_ui.app.test_client()
    answer = client.post("/authbench/api/start", json={"target": "lab:stateless", "pattern": "1x3", "pace": "0.3s",
                                                       "warmup": "0", "fault": f"at=0s run=touch {pwned}"})
    assert answer.status_code == 200, answer.get_json()
    launcher.greenlet.join(timeout=RUN_LIMIT)
    assert client.get("/authbench/api/state").get_json()["state"] == "done" and pwned.exists()
    environment.runner.quit()


def test_other_journeys_start_from_the_form_like_saml(lab_env, tmp_path):
    """An LDAP target in the form runs LDAP binds (its preflight, user class and record), and the next run on
    a SAML target is SAML again: the journey follows the target, run by run."""
    environment, web_ui, launcher, _ = _build(tmp_path)
    client = web_ui.app.test_client()
    assert "ldap" in client.get("/authbench/api/state").get_json()["lab_backends"]  # offered in the form
    runs = {}
    for target in ("lab:ldap", "lab:local"):
        answer = client.post("/authbench/api/start", json={"target": target, "pattern": "2x5", "warmup": "0"})
        assert answer.status_code == 200, answer.get_json()
        launcher.greenlet.join(timeout=RUN_LIMIT)
        assert client.get("/authbench/api/state").get_json()["state"] == "done"
        runs[target] = tmp_path / "results" / answer.get_json()["run_id"]
    ldap_run = json.loads((runs["lab:ldap"] / "summary.json").read_text())
    assert ldap_run["config"]["journey"] == "ldap-bind" and ldap_run["cells"][0]["summary"]["tests"] == 10
    assert (runs["lab:ldap"] / "preflight.txt").read_text().startswith("preflight: one journey against ldap://")
    saml_run = json.loads((runs["lab:local"] / "summary.json").read_text())
    assert saml_run["config"]["journey"] == "saml" and saml_run["cells"][0]["summary"]["tests"] == 10
    assert "[IdP login POST]" in (runs["lab:local"] / "preflight.txt").read_text()
    refused = client.post("/authbench/api/start", json={"target": "lab:ldap", "pattern": "1x1",
                                                        "fault": "at=1s stop idp-a"})
    assert refused.status_code == 400 and "the lab has no component 'idp-a'" in refused.get_json()["message"]
    environment.runner.quit()


def test_your_own_journey_runs_from_the_web_ui(lab_env, tmp_path):
    """`authbench web -f FILE`: every run started in the browser is that journey, through the same run path."""
    example = Path(__file__).resolve().parents[2] / "locustfiles" / "sso_then_page.py"
    environment, web_ui, launcher, _ = _build(tmp_path, "-f", str(example))
    client = web_ui.app.test_client()
    try:
        answer = client.post("/authbench/api/start", json={"target": "lab:stateless", "pattern": "2x5", "warmup": "0"})
        assert answer.status_code == 200, answer.get_json()
        launcher.greenlet.join(timeout=RUN_LIMIT)
        state = client.get("/authbench/api/state").get_json()
        assert state["state"] == "done", state["message"]
        run = json.loads((tmp_path / "results" / answer.get_json()["run_id"] / "summary.json").read_text())
        assert run["config"]["journey"] == "custom: SSOThenPage"
        assert run["cells"][0]["summary"]["tests"] == 10 and run["cells"][0]["summary"]["errors"] == 0
        assert "SP protected page (second call)" in run["cells"][0]["steps"]
    finally:
        environment.runner.quit()


def test_a_journey_file_that_is_no_journey_is_refused_when_the_ui_starts(tmp_path, capsys):
    assert main(["web", "--web-port", str(WEB + 2), "--results", str(tmp_path), "-f", str(tmp_path / "none.py")]) == 2
    err = capsys.readouterr().err
    assert "is not a readable file" in err and err.count("\n") == 1
