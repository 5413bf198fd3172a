"""An arrival-rate level started from the web UI's form and watched through its state (real app, real lab)."""

from __future__ import annotations

import json
import time

import gevent
import pytest

from authbench.cli import build_parser
from authbench.cli.web import build

from ports import WEB

RUN_LIMIT = 60.0  # seconds the in-process run may take


@pytest.fixture
def lab_env(lab, monkeypatch):
    monkeypatch.setenv("AUTHBENCH_LAB_DIR", str(lab.run_dir))
    return lab


def test_a_rate_started_from_the_form(lab_env, tmp_path):
    args = build_parser().parse_args(["web", "--web-port", str(WEB + 2), "--results", str(tmp_path / "results")])
    environment, web_ui, launcher, _ = build(args, {})  # the app only: its socket is never opened
    client = web_ui.app.test_client()
    bad = client.post("/authbench/api/start", json={"target": "lab:stateless", "rate": "10/d", "duration": "1s"})
    assert bad.status_code == 400 and "unknown unit 'd'" in bad.get_json()["message"]
    answer = client.post("/authbench/api/start", json={"target": "lab:stateless", "pattern": "2x1000,10x200,20x200",
                                                       "rate": "10/s", "duration": "2s", "slo": "p99<5s"})
    assert answer.status_code == 200, answer.get_json()
    live = None
    deadline = time.monotonic() + RUN_LIMIT
    while live is None and not launcher.greenlet.dead and time.monotonic() < deadline:
        gevent.sleep(0.2)  # the run goes on in its greenlet meanwhile
        level = client.get("/authbench/api/state").get_json()["level"]
        live = level if level and level["started"] else None
    assert live is not None, "the running level's figures were never shown"
    assert live["label"] == "10/s" and live["target_rate"] == 10.0 and live["achieved_rate"] > 0
    assert live["late"] >= 0 and live["dropped"] == 0 and live["in_flight_peak"] >= 1
    launcher.greenlet.join(timeout=RUN_LIMIT)
    state = client.get("/authbench/api/state").get_json()
    assert state["state"] == "done" and state["journeys"]["planned"] == state["journeys"]["measured"] == 20
    assert state["level"] is None  # finished levels are rows
    (row,) = state["rows"]
    assert row["label"] == "10/s #1" and row["summary"]["tests"] == 20
    assert row["open"]["target_rate"] == 10.0 and row["open"]["started"] == 20 and row["open"]["slo_met"]
    assert state["current"]["users"] is None  # a level has arrivals, not users × runs
    document = json.loads((tmp_path / "results" / answer.get_json()["run_id"] / "summary.json").read_text())
    assert document["plan"]["model"] == "open" and document["cells"][0]["open"]["planned"] == 20
    page = client.get("/authbench/").get_data(as_text=True)
    assert 'name="rate"' in page and 'id="open-figures"' in page
    environment.runner.quit()
