"""The web UI and the open model through Flask's test client (real app, real lab): the form's rate and search
fields with the CLI's defaults, estimates of rate plans, errors naming fields, a capacity search watched
step by step with its progress, a failed preflight's trail and the links a finished run leaves."""

from __future__ import annotations

import json
import shutil
import time

import gevent
import pytest

from authbench.cli import build_parser
from authbench.cli.web import build

from ports import WEB

RUN_LIMIT = 90.0  # seconds an in-process run may take
SEARCH_FORM = {"target": "lab:stateless", "capacity": "on", "slo": "p99<2s", "start_rate": "4/s",
               "max_rate": "200/s", "growth": "4", "precision": "50%", "step_duration": "1s", "step_warmup": "0s",
               "max_users": "1", "warmup": "0"}  # one journey in flight: 200/s cannot be held, 4/s can


def _build(tmp_path, *extra: str):
    args = build_parser().parse_args(["web", "--web-port", str(WEB + 3), "--results", str(tmp_path / "results"),
                                      *extra])
    return build(args, {})


@pytest.fixture
def lab_env(lab, monkeypatch):
    monkeypatch.setenv("AUTHBENCH_LAB_DIR", str(lab.run_dir))
    return lab


def test_the_forms_rate_fields_have_the_clis_defaults(tmp_path):
    environment, web_ui, _, _ = _build(tmp_path)
    defaults = web_ui.app.test_client().get("/authbench/api/state").get_json()["defaults"]
    cli = build_parser().parse_args(["run", "--target", "lab:x"])
    for field in ("start_rate", "max_rate", "precision", "step_duration", "step_warmup", "max_users"):
        assert defaults[field] == getattr(cli, field), field  # shown in the form: 2000/s is no silent ceiling
    assert float(defaults["growth"]) == cli.growth
    page = web_ui.app.test_client().get("/authbench/").get_data(as_text=True)
    for field in ("start_rate", "max_rate", "growth", "precision", "step_duration", "capacity", "max_users"):
        assert f'name="{field}"' in page, field
    assert "static/openmodel.js" in page
    environment.runner.quit()


def test_estimates_of_rate_plans_and_errors_naming_fields(tmp_path):
    environment, web_ui, _, _ = _build(tmp_path)
    client = web_ui.app.test_client()

    def estimate(**form):
        return client.post("/authbench/api/estimate", json={"pattern": "2x1000,10x200,20x200", **form})

    levels = estimate(levels="a=5/s:30s:10s,b=10/s:1m", warmup="0", repeat="2").get_json()
    assert levels["ok"] and levels["seconds"] == 2 * (40 + 60) and levels["phrase"] == "about 3m 20s"
    assert not levels["bound"] and levels["confirm"]  # the levels' own length, not the patterns'
    short = estimate(rate="5/s", duration="20s", warmup="0").get_json()
    assert short["seconds"] == 20 and not short["confirm"]
    search = estimate(**{k: v for k, v in SEARCH_FORM.items() if k != "target"}).get_json()
    assert search["ok"] and search["bound"] and search["phrase"].startswith("at most ")
    assert 0 < search["seconds"] <= 15 * 2 and not search["confirm"]  # 10 steps at most
    default = estimate(capacity="on", slo="p99<500ms").get_json()  # the CLI's knobs: up to 2000/s
    assert default["confirm"] and default["seconds"] > 300
    for form, message in (({"max_rate": "10/s", "start_rate": "100/s"}, "Start rate 100/s is above Max rate 10/s"),
                          ({"growth": "x"}, "Growth: invalid float value: 'x'"),
                          ({"growth": "20"}, "Growth 20 must be more than 1 and at most 10"),
                          ({"precision": "90%"}, "Precision '90%' must be more than 0 and at most 50%"),
                          ({"slo": ""}, "needs SLO"),
                          ({"step_duration": "0s"}, "Step duration must be more than 0")):
        answer = estimate(**{"capacity": "on", "slo": "p99<500ms", **form})
        body = answer.get_json()
        assert answer.status_code == 400 and message in body["message"] and "--" not in body["message"], body
    start = client.post("/authbench/api/start", json={"target": "lab:stateless", "capacity": "on",
                                                       "slo": "p99<500ms", "max_rate": "1/s", "start_rate": "5/s"})
    assert start.status_code == 400 and start.get_json()["message"] == "Start rate 5/s is above Max rate 1/s"
    environment.runner.quit()


def test_a_capacity_search_from_the_form_step_by_step(lab_env, tmp_path):
    environment, web_ui, launcher, _ = _build(tmp_path)
    client = web_ui.app.test_client()
    answer = client.post("/authbench/api/start", json=SEARCH_FORM)
    assert answer.status_code == 200, answer.get_json()
    run_id = answer.get_json()["run_id"]
    seen, deadline = [], time.monotonic() + RUN_LIMIT
    while not launcher.greenlet.dead:
        assert time.monotonic() < deadline, "the search did not end"
        state = client.get("/authbench/api/state").get_json()
        seen.append(state)
        gevent.sleep(0.3)
    state = client.get("/authbench/api/state").get_json()
    assert state["state"] == "done", state["message"]
    search = state["open"]["search"]
    bound = search["bound"]
    for snapshot in seen:  # never negative, never "N of M" with N > M
        progress = snapshot["open"]["progress"]
        assert progress["left_s"] >= 0 and 0 <= progress["share"] <= 1 and snapshot["time"]["left_s"] >= 0
        steps = snapshot["open"]["search"]["steps"]
        assert len(steps) <= bound and f"of at most {bound}" in progress["text"]
        assert snapshot["current"] is None or snapshot["current"]["cell"] <= snapshot["plan"]["cells"]
        assert snapshot["journeys"]["measured"] <= max(1, snapshot["journeys"]["planned"])
    assert any(s["open"]["search"]["steps"] and s["open"]["search"]["steps"][-1].get("running") for s in seen)
    document = json.loads((tmp_path / "results" / run_id / "summary.json").read_text())
    found = document["capacity"]
    assert [(s["rate"], s["stage"], s["passed"]) for s in search["steps"]] == [
        (s["rate"], s["stage"], s["passed"]) for s in found["steps"]]  # the page's steps are the search's
    assert search["steps"][0]["passed"] is True and search["steps"][0]["why"].startswith("sustained")
    failed = [s for s in search["steps"] if s["passed"] is False]
    assert failed and all(s["why"] and s["why"] != "sustained" for s in failed)  # 200/s with one user in flight
    assert search["answer"]["rate"] == found["answer"] and search["answer"]["text"]
    assert state["open"]["progress"]["share"] == 1 and state["open"]["progress"]["left_s"] == 0
    assert state["links"] == {"report": f"runs/{run_id}/report.html", "folder": str(tmp_path / "results" / run_id)}
    report = client.get(f"/authbench/{state['links']['report']}")  # written when first opened
    assert report.status_code == 200 and b"authbench report" in report.data
    environment.runner.quit()


def test_a_levels_run_fills_the_levels_table_live(lab_env, tmp_path):
    environment, web_ui, launcher, _ = _build(tmp_path)
    client = web_ui.app.test_client()
    answer = client.post("/authbench/api/start", json={"target": "lab:stateless", "pattern": "2x1000",
                                                       "levels": "low=5/s:2s,high=10/s:2s", "slo": "p99<5s",
                                                       "warmup": "0.5s", "repeat": "1"})
    assert answer.status_code == 200, answer.get_json()
    running, deadline = [], time.monotonic() + RUN_LIMIT
    while not launcher.greenlet.dead:
        assert time.monotonic() < deadline
        levels = client.get("/authbench/api/state").get_json()["open"]["levels"]
        running += [row for row in levels if row["running"] and row["phase"] == "measured" and row["late"] is not None]
        gevent.sleep(0.2)
    assert running and running[-1]["target_rate"] in (5.0, 10.0) and running[-1]["achieved_rate"] >= 0
    state = client.get("/authbench/api/state").get_json()
    rows = state["open"]["levels"]
    assert [(r["label"], r["target_rate"], r["running"]) for r in rows] == [("low", 5.0, False), ("high", 10.0, False)]
    assert all(r["slo_met"] and r["response_p99_ms"] > 0 and r["dropped"] == 0 for r in rows), rows
    document = json.loads((tmp_path / "results" / answer.get_json()["run_id"] / "summary.json").read_text())
    assert [r["sustained"] for r in rows] == [c["open"]["sustained"] for c in document["cells"]]  # the summary's
    assert state["open"]["search"] is None and state["open"]["progress"]["text"] == "level 2 of 2"
    assert state["journeys"]["planned"] == 30 and state["open"]["slo"] == "p99<5000ms"
    environment.runner.quit()


def test_a_failed_preflight_shows_its_trail(lab_env, tmp_path):
    (tmp_path / "files").mkdir()
    shutil.copy(lab_env.ca_cert, tmp_path / "files" / "lab-ca.pem")
    environment, web_ui, launcher, _ = _build(tmp_path, "--files-dir", str(tmp_path / "files"))
    form = {"target": lab_env.sp_url("local") + "/secure/", "pattern": "1x1", "ca_bundle": "lab-ca.pem",
            "accounts_template": "user{000..009}", "password_rule": "Wrong-{user}-1"}
    answer = web_ui.app.test_client().post("/authbench/api/start", json=form)
    body = answer.get_json()
    assert answer.status_code == 400 and body["message"].startswith("preflight login as user000 failed")
    trail = body["trail"]
    assert trail[0] == "preflight: one login as user000" and trail[-1].startswith("  verdict: failed")
    assert any("[IdP login POST]" in line for line in trail)  # hop by hop
    assert "Wrong-user000-1" not in json.dumps(body) and not launcher.running
    environment.runner.quit()
