"""A second IdP implementation, clustered: two pysaml2 IdP nodes behind HAProxy, and a pysaml2 SP.

What it is: a small IdP written here around pysaml2's `saml2.server.Server` (which parses the
AuthnRequest and builds and signs the Response with xmlsec1), not a product anyone deploys. What it is
for: an IdP not shaped like Shibboleth — no /idp path, one cookie `pysaml2_idp_sso` at Path=/ — so
the cluster checks are tried against an IdP whose cookies live where the SP's do.

Each node keeps SSO sessions in a `SessionStore`: the lab's memcached (shared by both nodes, as a
cluster that shares SSO sessions) or a dict of its own (the unshared control). The login form carries
the AuthnRequest itself, so a login may move between nodes whatever the store. The IdP serves on
127.0.0.2 (balancer and nodes), the SP on 127.0.0.1: SP and IdP on different hosts, as in most
deployments. Accounts are a dict here, not a directory; everything runs on loopback.
"""

from __future__ import annotations

import html
import os
import shutil
import threading
import time
from pathlib import Path

from pymemcache.client.base import Client as Memcached
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.client import Saml2Client
from saml2.config import Config, IdPConfig, SPConfig
from saml2.metadata import create_metadata_string
from saml2.saml import AUTHN_PASSWORD, NAME_FORMAT_URI, NAMEID_FORMAT_TRANSIENT
from saml2.server import Server
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

from authbench_lab import pki, processes

IDP_HOST, SP_HOST = "127.0.0.2", "127.0.0.1"
SSO_COOKIE = "pysaml2_idp_sso"  # at Path=/, as SimpleSAMLphp and most non-Shibboleth IdPs put theirs
SP_COOKIE = "pysaml2_sp_session"
ACCOUNTS = {"carol": "carol-pw", "dave": "dave-pw", "erin": "erin-pw"}
SESSION_SECONDS = 600
START_TIMEOUT = 20.0  # seconds for HAProxy to answer through the balancer


class SessionStore:
    """A node's SSO sessions: a dict of its own, or memcached shared with the other node."""

    def __init__(self, memcached: tuple[str, int] | None, prefix: str) -> None:
        self._client = Memcached(memcached, connect_timeout=2, timeout=2) if memcached else None
        self._local: dict[str, str] = {}
        self._prefix = prefix
        self._lock = threading.Lock()  # one memcached connection, several server threads

    def get(self, session_id: str) -> str | None:
        if self._client is None:
            return self._local.get(session_id)
        with self._lock:
            value = self._client.get(self._prefix + session_id)
        return value.decode() if value else None

    def put(self, session_id: str, user: str) -> None:
        if self._client is None:
            self._local[session_id] = user
        else:
            with self._lock:
                self._client.set(self._prefix + session_id, user, expire=SESSION_SECONDS)


def _page(title: str, body: str, status: int = 200) -> Response:
    return Response(f"<!DOCTYPE html><html><head><title>{html.escape(title)}</title></head><body>{body}</body></html>",
                    status=status, mimetype="text/html")


def _redirect(location: str) -> Response:
    return Response(status=302, headers={"Location": location})


class IdPNode:
    """One node: SSO (HTTP-Redirect in, HTTP-POST out), a login form, /status for the balancer."""

    def __init__(self, name: str, config: IdPConfig, sessions: SessionStore) -> None:
        self.name, self.server, self.sessions = name, Server(config=config), sessions
        self.lock = threading.Lock()  # pysaml2's Server is not made for concurrent use

    @Request.application
    def __call__(self, request: Request) -> Response:
        if request.path == "/status":
            return Response(f"ok node={self.name}\n", mimetype="text/plain")
        if request.path == "/sso/redirect" and request.method == "GET":
            saml_request, relay_state = request.args.get("SAMLRequest", ""), request.args.get("RelayState", "")
            user = self.sessions.get(request.cookies.get(SSO_COOKIE, ""))
            return self._respond(saml_request, relay_state, user) if user else \
                self._login(saml_request, relay_state, "")
        if request.path == "/sso/login" and request.method == "POST":
            form = request.form
            user = form.get("username", "")
            if ACCOUNTS.get(user) is None or ACCOUNTS[user] != form.get("password"):
                return self._login(form.get("SAMLRequest", ""), form.get("RelayState", ""), "Wrong password.")
            session_id = os.urandom(16).hex()
            self.sessions.put(session_id, user)
            response = self._respond(form.get("SAMLRequest", ""), form.get("RelayState", ""), user)
            response.set_cookie(SSO_COOKIE, session_id, path="/", httponly=True)
            return response
        return _page("Not Found", "", 404)

    def _login(self, saml_request: str, relay_state: str, error: str) -> Response:
        fields = "".join(f'<input type="hidden" name="{name}" value="{html.escape(value)}">'
                         for name, value in (("SAMLRequest", saml_request), ("RelayState", relay_state)))
        return _page("Log in", f'<p class="error">{html.escape(error)}</p>'
                     f'<form method="post" action="/sso/login">{fields}<input name="username">'
                     '<input type="password" name="password">'
                     '<button type="submit">Log in</button></form>')

    def _respond(self, saml_request: str, relay_state: str, user: str) -> Response:
        with self.lock:
            message = self.server.parse_authn_request(saml_request, BINDING_HTTP_REDIRECT).message
            args = self.server.response_args(message, [BINDING_HTTP_POST])
            binding, destination = args.pop("binding"), args["destination"]
            response = self.server.create_authn_response(
                {"uid": [user]}, userid=user, sign_response=True, sign_assertion=True,
                authn={"class_ref": AUTHN_PASSWORD, "authn_auth": self.server.config.entityid}, **args)
            http_args = self.server.apply_binding(binding, str(response), destination, relay_state, response=True)
        return Response(http_args["data"], mimetype="text/html")


class SP:
    """The SP: /secure/ shows the user (in the lab SP's markup; the walk needs none), /acs checks the Response."""

    def __init__(self, config: SPConfig, idp_entity_id: str) -> None:
        self.client, self.idp_entity_id = Saml2Client(config=config), idp_entity_id
        self.outstanding: dict[str, str] = {}
        self.sessions: dict[str, str] = {}
        self.lock = threading.Lock()

    @Request.application
    def __call__(self, request: Request) -> Response:
        if request.path == "/secure/":
            user = self.sessions.get(request.cookies.get(SP_COOKIE, ""))
            if user:
                return _page("Protected content", f'<span id="remote-user">{html.escape(user)}</span>')
            with self.lock:
                request_id, info = self.client.prepare_for_authenticate(
                    entityid=self.idp_entity_id, relay_state="/secure/", binding=BINDING_HTTP_REDIRECT)
                self.outstanding[request_id] = "/secure/"
            return _redirect(dict(info["headers"])["Location"])
        if request.path == "/acs" and request.method == "POST":
            with self.lock:
                try:
                    answer = self.client.parse_authn_request_response(
                        request.form.get("SAMLResponse", ""), BINDING_HTTP_POST, self.outstanding)
                except Exception as exc:  # pysaml2 raises many types for a bad Response
                    return _page("Login refused", html.escape(type(exc).__name__), 403)
            if answer is None:
                return _page("Login refused", "no response", 403)
            session_id = os.urandom(16).hex()
            self.sessions[session_id] = answer.ava["uid"][0]
            response = _redirect("/secure/")
            response.set_cookie(SP_COOKIE, session_id, path="/", httponly=True)
            return response
        return _page("Not Found", "", 404)


def _serve(host: str, app) -> tuple[object, str]:
    server = make_server(host, 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://{host}:{server.server_port}"


def _config(kind: type[Config], settings: dict) -> Config:
    config = kind()
    config.load(settings)
    return config


def _haproxy_cfg(port: int, nodes: list[str]) -> str:
    servers = [f"    server {chr(ord('a') + i)} {url.removeprefix('http://')} check inter 1s"
               for i, url in enumerate(nodes)]
    return "\n".join([
        "global", "    maxconn 256", "defaults", "    mode http", "    timeout connect 2s", "    timeout client 10s",
        "    timeout server 10s", "frontend lb", f"    bind {IDP_HOST}:{port}", "    default_backend nodes",
        "backend nodes", "    balance roundrobin", "    option httpchk GET /status", *servers, ""])


class Pysaml2Cluster:
    """Start with `with`: two IdP nodes, HAProxy round robin over them on `balancer_port`, and the SP."""

    def __init__(self, work_dir: Path, balancer_port: int, memcached: tuple[str, int] | None) -> None:
        self.work_dir, self.balancer_port, self.memcached = work_dir, balancer_port, memcached
        self.lb_url = f"http://{IDP_HOST}:{balancer_port}"
        self.nodes: dict[str, str] = {}
        self.sp_url = ""
        self._servers: list = []
        self._haproxy: processes.Started | None = None

    @property
    def protected_url(self) -> str:
        return self.sp_url + "/secure/"

    def __enter__(self) -> Pysaml2Cluster:
        try:
            self._start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _start(self) -> None:
        idp_cert, idp_key = pki.ensure_signing_pair(self.work_dir / "idp", subject=IDP_HOST)
        sp_cert, sp_key = pki.ensure_signing_pair(self.work_dir / "sp", subject=SP_HOST)
        sp_server = make_server(SP_HOST, 0, lambda environ, start: [], threaded=True)  # the SP's port, app later
        self.sp_url = f"http://{SP_HOST}:{sp_server.server_port}"
        idp_settings = {
            "entityid": self.lb_url + "/metadata", "key_file": str(idp_key), "cert_file": str(idp_cert),
            "service": {"idp": {
                "endpoints": {"single_sign_on_service": [(self.lb_url + "/sso/redirect", BINDING_HTTP_REDIRECT)]},
                "name_id_format": [NAMEID_FORMAT_TRANSIENT],
                "policy": {"default": {"lifetime": {"minutes": 5}, "name_form": NAME_FORMAT_URI}}}},
        }
        sp_settings = {
            "entityid": self.sp_url + "/metadata", "key_file": str(sp_key), "cert_file": str(sp_cert),
            "service": {"sp": {
                "endpoints": {"assertion_consumer_service": [(self.sp_url + "/acs", BINDING_HTTP_POST)]},
                "want_assertions_signed": True, "allow_unsolicited": False}},
        }
        idp_metadata = create_metadata_string(None, _config(IdPConfig, idp_settings)).decode()
        sp_metadata = create_metadata_string(None, _config(SPConfig, sp_settings)).decode()
        prefix = f"pysaml2-{os.urandom(4).hex()}:"
        for name in ("A", "B"):
            config = _config(IdPConfig, {**idp_settings, "metadata": {"inline": [sp_metadata]}})
            server, url = _serve(IDP_HOST, IdPNode(name, config, SessionStore(self.memcached, prefix)))
            self._servers.append(server)
            self.nodes[name] = url
        sp_server.app = SP(_config(SPConfig, {**sp_settings, "metadata": {"inline": [idp_metadata]}}),
                           idp_settings["entityid"])
        threading.Thread(target=sp_server.serve_forever, daemon=True).start()
        self._servers.append(sp_server)
        conf = self.work_dir / "haproxy.cfg"
        conf.write_text(_haproxy_cfg(self.balancer_port, list(self.nodes.values())))
        command = [shutil.which("haproxy") or "haproxy", "-db", "-f", str(conf)]
        self._haproxy = processes.start(command, log_path=self.work_dir / "haproxy.log",
                                        pid_path=self.work_dir / "haproxy.pid", cwd=self.work_dir)
        self._wait_for_balancer()

    def _wait_for_balancer(self) -> None:
        """Both nodes up behind HAProxy: two /status answers in a row, one from each, within the time limit."""
        from authbench.journeys.fastbrowser import FastBrowser

        deadline = time.monotonic() + START_TIMEOUT
        seen: set[str] = set()
        with FastBrowser(timeout=2) as browser:
            while seen != {"A", "B"}:
                if time.monotonic() > deadline:
                    tail = " | ".join(processes.log_tail(self.work_dir / "haproxy.log"))
                    raise RuntimeError(f"HAProxy on {self.lb_url} did not balance over both nodes: {tail}")
                try:
                    page = browser.get(self.lb_url + "/status")
                    if page.status == 200:
                        seen.add(page.text.strip().removeprefix("ok node="))
                except OSError:
                    pass
                time.sleep(0.1)

    def __exit__(self, *_exc: object) -> None:
        if self._haproxy is not None:
            processes.stop(self._haproxy.pid, "haproxy")
            self._haproxy = None
        for server in self._servers:
            server.shutdown()
            server.server_close()
        self._servers.clear()
