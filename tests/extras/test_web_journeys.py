"""The web UI's form starts the database-login and privacyIDEA journeys as it starts SAML SSO."""

from __future__ import annotations

import json

import pytest

from authbench.cli import build_parser
from authbench.cli.web import build

from ports import WEB

RUN_LIMIT = 60.0


@pytest.mark.parametrize(("target", "journey"), [("lab:postgres", "database-login"),
                                                 ("lab:privacyidea", "privacyidea-validate")])
def test_the_form_runs_the_journey_its_target_names(extras_env, tmp_path, target, journey):
    args = build_parser().parse_args(["web", "--web-port", str(WEB + 2), "--results", str(tmp_path / "results")])
    environment, web_ui, launcher, _ = build(args, {})
    client = web_ui.app.test_client()
    try:
        assert target.removeprefix("lab:") in client.get("/authbench/api/state").get_json()["lab_backends"]
        answer = client.post("/authbench/api/start", json={"target": target, "pattern": "2x3", "warmup": "0"})
        assert answer.status_code == 200, answer.get_json()
        launcher.greenlet.join(timeout=RUN_LIMIT)
        state = client.get("/authbench/api/state").get_json()
        assert state["state"] == "done", state["message"]
        assert state["rows"][0]["summary"]["tests"] == 6 and state["rows"][0]["summary"]["errors"] == 0
        document = json.loads((tmp_path / "results" / answer.get_json()["run_id"] / "summary.json").read_text())
        assert document["config"]["journey"] == journey and document["cells"][0]["summary"]["tests"] == 6
    finally:
        environment.runner.quit()
