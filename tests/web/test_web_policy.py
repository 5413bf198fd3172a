"""What a request to the web UI may make the server read or load (issue 33, item 1): no path a request names, a
file only by name in --files-dir, a target only on the lab, loopback or --allow-target. No lab needed."""

from __future__ import annotations

import base64
import json
import os
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from authbench.cli import build_parser, main
from authbench.cli.web import build
from authbench.cli.web_policy import WebPolicy, policy
from authbench.errors import AuthbenchError

from ports import WEB


class _Recorder(BaseHTTPRequestHandler):
    """A provider a requester would run: discovery and a token endpoint, every request kept whole."""

    seen: list[bytes] = []

    def _keep(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        basic = (self.headers.get("Authorization") or "").removeprefix("Basic ")
        self.seen.append(str(self.headers).encode() + body + base64.b64decode(basic + "==", validate=False))

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self._keep()
        base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._answer(200, {"issuer": base, "token_endpoint": base + "/token",
                           "authorization_endpoint": base + "/auth", "jwks_uri": base + "/jwks"})

    def do_POST(self) -> None:  # noqa: N802
        self._keep()
        self._answer(400, {"error": "invalid_client"})

    def _answer(self, status: int, document: dict) -> None:
        data = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def provider():
    _Recorder.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", _Recorder.seen
    finally:
        server.shutdown()
        server.server_close()


def test_no_file_a_request_names_reaches_a_provider(provider, tmp_path):
    """A canary only this server can read (0600), named by every file field a request could use: each start is
    refused in one line, and the provider never sees the canary, nor the UI's environment."""
    issuer, seen = provider
    canary = secrets.token_hex(16)
    secret = tmp_path / "canary"
    secret.write_text(canary)
    secret.chmod(0o600)
    files = tmp_path / "files"
    files.mkdir()
    (files / "link").symlink_to(secret)  # a link out of --files-dir is no file of it
    args = build_parser().parse_args(["web", "--web-port", str(WEB + 5), "--results", str(tmp_path / "results"),
                                      "--files-dir", str(files)])
    environment, web_ui, _, _ = build(args, {})
    client = web_ui.app.test_client()
    form = {"target": "oidc+" + issuer, "pattern": "1x1", "warmup": "0", "grant": "client-credentials",
            "client_id": "attacker"}
    tries = [({"client_secret_file": str(secret)}, "has no field 'client_secret_file'"),
             ({"password_file": str(secret)}, "has no field 'password_file'"),
             ({"ca_bundle": str(secret)}, "give the bare name of a file in --files-dir"),
             ({"ca_bundle": "/proc/self/environ"}, "give the bare name of a file in --files-dir"),
             ({"ca_bundle": "../canary"}, "give the bare name of a file in --files-dir"),
             ({"ca_bundle": "link"}, "CA bundle 'link': no such file in --files-dir")]
    try:
        for fields, message in tries:
            answer = client.post("/authbench/api/start", json={**form, **fields})
            assert answer.status_code == 400 and message in answer.get_json()["message"], (fields, answer.get_json())
    finally:
        environment.runner.quit()
    received = b"".join(seen)
    assert canary.encode() not in received and os.environ.get("PATH", "").encode() not in received


def test_a_target_off_loopback_is_refused_before_any_connection(tmp_path):
    args = build_parser().parse_args(["web", "--web-port", str(WEB + 5), "--results", str(tmp_path / "results")])
    environment, web_ui, _, _ = build(args, {})
    client = web_ui.app.test_client()
    try:
        for target in ("https://idp.invalid/secure/", "oidc+https://op.invalid", "ldap://dir.invalid:389"):
            answer = client.post("/authbench/api/start", json={"target": target, "pattern": "1x1"})
            message = answer.get_json()["message"]
            assert answer.status_code == 400 and "is not allowed here" in message and "--allow-target" in message
    finally:
        environment.runner.quit()


def test_the_policy_allows_the_lab_loopback_and_named_hosts_only():
    allowed = policy([], ["idp.example.org", "[2001:db8::1], 192.0.2.7"])
    for target in ("lab:stateless", "https://127.0.0.1:17403/secure/", "https://127.8.9.10/x", "https://[::1]:443/",
                   "oidc+https://localhost:8443", "https://IDP.example.org/secure/", "ldaps://[2001:db8::1]:636",
                   "postgresql://192.0.2.7:5432/db"):
        allowed.check_target(target)
    for target in ("https://idp.example.org.evil.test/", "https://10.0.0.1/", "oidc+https://other.example.org"):
        with pytest.raises(AuthbenchError, match="is not allowed here"):
            allowed.check_target(target)
    for bad in ("https://idp.example.org", "idp.example.org:443", ""):
        with pytest.raises(AuthbenchError, match="--allow-target"):
            policy([], [bad])


def test_files_by_bare_name_only(tmp_path):
    (tmp_path / "ca.pem").write_text("x")
    (tmp_path / "sub").mkdir()
    files = policy([str(tmp_path)], [])
    assert files.file("CA bundle", "ca.pem") == str(tmp_path / "ca.pem")
    for name, message in (("sub", "no such file"), ("none.pem", "no such file"), ("../ca.pem", "bare name"),
                          (str(tmp_path / "ca.pem"), "bare name"), (".hidden", "bare name")):
        with pytest.raises(AuthbenchError, match=message):
            files.file("CA bundle", name)
    with pytest.raises(AuthbenchError, match="reads no file a form names; start it with --files-dir"):
        WebPolicy().file("CA bundle", "ca.pem")


def test_bad_web_policy_options_exit_2(tmp_path, capsys):
    assert main(["web", "--files-dir", str(tmp_path / "none"), "--results", str(tmp_path / "r")]) == 2
    assert "--files-dir" in capsys.readouterr().err
    assert main(["web", "--allow-target", "https://x.example", "--results", str(tmp_path / "r")]) == 2
    assert "--allow-target 'https://x.example'" in capsys.readouterr().err
