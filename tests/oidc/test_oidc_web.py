"""The web UI starts an OIDC plan (Flask's test client, the real app, panva's oidc-provider): the form's OIDC
fields are `authbench run`'s options, the client secret is typed into the form and kept in memory, never a file the
form names, and neither the page's answers nor the run folder hold it. Here, not in tests/web, for the provider
fixture."""

from __future__ import annotations

import json

from authbench.cli import build_parser
from authbench.cli.web import build

from ports import WEB

RUN_LIMIT = 60.0  # seconds the in-process run may take


def test_the_web_ui_starts_an_oidc_plan_with_a_grant(op, tmp_path, monkeypatch):
    monkeypatch.delenv("AUTHBENCH_CLIENT_SECRET", raising=False)
    secret_file = tmp_path / "client-secret"
    secret_file.write_text(op.secret + "\n")
    args = build_parser().parse_args(["web", "--web-port", str(WEB + 2), "--results", str(tmp_path / "results"),
                                      "--files-dir", str(tmp_path)])
    environment, web_ui, launcher, _ = build(args, {})
    client = web_ui.app.test_client()
    form = {"target": op.target, "pattern": "2x3", "warmup": "0", "accounts_template": "user{000..009}",
            "client_id": "rp-basic", "client_secret": op.secret, "grant": "introspection",
            "scope": "openid", "redirect_uri": op.redirect_uri}
    try:
        named = client.post("/authbench/api/start", json={**form, "client_secret": "",
                                                          "client_secret_file": secret_file.name})
        assert named.status_code == 400 and "has no field 'client_secret_file'" in named.get_json()["message"]
        saml = client.post("/authbench/api/start", json={**form, "target": "lab:local"})
        assert saml.status_code == 400 and "Client secret is for an OpenID Connect target" in saml.get_json()["message"]
        public = client.post("/authbench/api/start", json={**form, "client_secret": "", "grant": "logout",
                                                           "client_id": ""})
        assert public.status_code == 400 and "needs Client ID" in public.get_json()["message"]
        answer = client.post("/authbench/api/start", json=form)
        assert answer.status_code == 200, answer.get_json()
        launcher.greenlet.join(timeout=RUN_LIMIT)
        state = client.get("/authbench/api/state").get_json()
        assert state["state"] == "done", state["message"]
        run_dir = tmp_path / "results" / answer.get_json()["run_id"]
        document = json.loads((run_dir / "summary.json").read_text())
        assert document["config"]["grant"] == "introspection" and document["config"]["client_id"] == "rp-basic"
        (cell,) = document["cells"]
        assert cell["summary"]["tests"] == 6 and cell["summary"]["errors"] == 0
        assert "OP introspection" in cell["steps"]
        served = "".join(client.get(path).get_data(as_text=True) for path in (
            "/authbench/api/state", "/authbench/api/campaign", "/stats/requests", "/exceptions", "/logs"))
        written = "".join(p.read_text(errors="replace") for p in run_dir.rglob("*") if p.is_file())
        assert op.secret not in served + written and "pw-user00" not in written
    finally:
        environment.runner.quit()
