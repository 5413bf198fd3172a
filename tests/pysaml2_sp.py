"""A real second SP: pysaml2's `Saml2Client` behind a small WSGI app, served by werkzeug on loopback.

It is not the lab's SP and shows nothing the lab's SP shows: no `remote-user` element, its own paths
(`/app/private`, `/saml/acs`), its own session cookie. pysaml2 builds the AuthnRequest, checks the
Response's signature with xmlsec1 against the IdP's metadata, its audience and InResponseTo. Its
metadata, made by pysaml2, is dropped into the lab's metadata folder so the lab's IdP trusts it.

`mode` picks what the protected page does after login, as SPs in the wild do:
- "user": shows the user in its own markup;
- "ok": shows only "OK";
- "landing": the ACS sends the browser to a landing page on another path, not back to the protected URL.
`strict=True` wants signed assertions, which the lab does not send (it signs the Response only, as
Shibboleth IdP does by default): every login is then refused at the ACS with a 403.
"""

from __future__ import annotations

import html
import secrets
import threading
from pathlib import Path
from urllib.parse import urlsplit

from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.client import Saml2Client
from saml2.config import SPConfig
from saml2.metadata import entity_descriptor
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

XMLSEC1 = "/usr/bin/xmlsec1"
PROTECTED = "/app/private"
ACS_PATH = "/saml/acs"
LANDING = "/landing/home"
SESSION_COOKIE = "pysaml2_sp_session"


class Pysaml2SP:
    """The SP app; `issued` lets a test look for its secrets (session ids, SAMLResponses) in written files."""

    def __init__(self, idp_metadata: Path, mode: str = "user", strict: bool = False) -> None:
        self.idp_metadata, self.mode, self.strict = idp_metadata, mode, strict
        self.base = ""
        self.entity_id = ""
        self.client: Saml2Client | None = None
        self.sessions: dict[str, str] = {}  # session cookie value → user
        self.outstanding: dict[str, str] = {}  # AuthnRequest ID → the URL it protects
        self.responses: list[str] = []  # every SAMLResponse received (secrets a run must never write)

    def configure(self, base: str) -> None:
        self.base = base
        self.entity_id = f"{base}/saml/metadata"
        config = SPConfig()
        config.load({
            "entityid": self.entity_id,
            "xmlsec_binary": XMLSEC1,
            "metadata": {"local": [str(self.idp_metadata)]},
            "service": {"sp": {
                "endpoints": {"assertion_consumer_service": [(base + ACS_PATH, BINDING_HTTP_POST)]},
                "want_response_signed": True,
                "want_assertions_signed": self.strict,
                "allow_unsolicited": False,
                "authn_requests_signed": False,
            }},
        })
        self.client = Saml2Client(config)

    def metadata(self) -> str:
        assert self.client is not None
        return str(entity_descriptor(self.client.config))

    def __call__(self, environ, start_response):
        request = Request(environ)
        if request.path == PROTECTED:
            response = self.protected(request)
        elif request.path == ACS_PATH and request.method == "POST":
            response = self.acs(request)
        elif request.path == LANDING and self.sessions.get(request.cookies.get(SESSION_COOKIE, "")):
            response = _html("<h1>Home</h1><p>Welcome back.</p>")
        else:
            response = Response("not here", status=404)
        return response(environ, start_response)

    def protected(self, request: Request) -> Response:
        user = self.sessions.get(request.cookies.get(SESSION_COOKIE, ""))
        if user:
            shown = f'<h1>Private</h1><p class="who">Signed in: <b>{html.escape(user)}</b></p>'
            body = "OK" if self.mode == "ok" else shown
            return _html(body)
        assert self.client is not None
        request_id, info = self.client.prepare_for_authenticate(binding=BINDING_HTTP_REDIRECT)
        self.outstanding[request_id] = request.url
        location = dict(info["headers"])["Location"]
        return Response(status=302, headers={"Location": location})

    def acs(self, request: Request) -> Response:
        assert self.client is not None
        saml_response = request.form.get("SAMLResponse", "")
        self.responses.append(saml_response)
        try:
            parsed = self.client.parse_authn_request_response(saml_response, BINDING_HTTP_POST,
                                                              outstanding=self.outstanding)
        except Exception as exc:  # pysaml2 raises many types; an SP answers them all with a refusal
            return _html(f"<h1>Forbidden</h1><p>{html.escape(type(exc).__name__)}</p>", status=403)
        if parsed is None:
            return _html("<h1>Forbidden</h1>", status=403)
        came_from = self.outstanding.pop(parsed.in_response_to, self.base + PROTECTED)
        user = (parsed.ava.get("uid") or [parsed.name_id.text])[0]
        session = secrets.token_urlsafe(24)
        self.sessions[session] = user
        target = self.base + LANDING if self.mode == "landing" else came_from
        response = Response(status=302, headers={"Location": target})
        response.set_cookie(SESSION_COOKIE, session, path="/", httponly=True)
        return response


def _html(body: str, status: int = 200) -> Response:
    return Response(f"<!doctype html><html><head><title>pysaml2 SP</title></head><body>{body}</body></html>",
                    status=status, mimetype="text/html")


class Pysaml2Server:
    """Serves a `Pysaml2SP` on 127.0.0.1 (a free port) and registers it with the lab's IdP while it runs."""

    def __init__(self, app: Pysaml2SP, metadata_dir: Path) -> None:
        self.app = app
        self._server = make_server("127.0.0.1", 0, app, threaded=True)
        app.configure(f"http://127.0.0.1:{self._server.server_port}")
        host = urlsplit(app.base).port
        self._registered = Path(metadata_dir) / f"pysaml2-sp-{host}.xml"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def protected_url(self) -> str:
        return self.app.base + PROTECTED

    def __enter__(self) -> Pysaml2Server:
        self._registered.write_text(self.app.metadata())
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._registered.unlink(missing_ok=True)
