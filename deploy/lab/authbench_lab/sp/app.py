"""The reference SP: /secure/ needs a login, the ACS checks the IdP's answer like Shibboleth SP does.

Stateless across its worker processes: the outstanding request and the SP session both travel in
AES-GCM sealed cookies, so no SP-side store is needed and any worker can take any request.
"""

from __future__ import annotations

import hashlib
import os
import time
from html import escape

from werkzeug.wrappers import Request, Response

from ..config import SP_CONFIG_ENV, SPConfig
from ..pki import read_secret
from ..saml.bindings import BindingError, decode_post, redirect_url
from ..saml.metadata import sp_metadata
from ..saml.signing import Verifier
from ..saml.xml import instant, new_id
from ..sealing import Sealer
from .validate import Expected, SPRefusal, validate_response

SESSION_LIFETIME = 8 * 3600  # Shibboleth SP's default session lifetime
STATE_LIFETIME = 600  # seconds a login may take before its relay state is forgotten
ACS_PATH = "/Shibboleth.sso/SAML2/POST"
PROTECTED_PREFIX = "/secure"


def _page(title: str, body: str, status: int = 200) -> Response:
    html = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title></head>\n'
            f"<body>\n<h1>{escape(title)}</h1>\n{body}\n</body></html>\n")
    return Response(html, status=status, mimetype="text/html", headers={"Cache-Control": "no-store"})


def _redirect(location: str) -> Response:
    return Response(status=302, headers={"Location": location, "Cache-Control": "no-store"})


def _cookie(response: Response, name: str, value: str, max_age: int | None = None) -> None:
    response.set_cookie(name, value, path="/", secure=True, httponly=True, samesite="None", max_age=max_age)


class ServiceProvider:
    def __init__(self, config: SPConfig) -> None:
        self.config = config
        self.verifier = Verifier(config.idp_cert)
        self.sealer = Sealer(read_secret(config.cookie_key))
        suffix = hashlib.sha256(config.entity_id.encode()).hexdigest()[:16]
        self.session_cookie = f"_shibsession_{suffix}"

    def secure(self, request: Request) -> Response:
        session = self.sealer.open(request.cookies.get(self.session_cookie), "sp-session")
        if session:
            rows = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>"
                           for k, v in sorted(session["attributes"].items()))
            body = (f'<p>Logged in as <span id="remote-user">{escape(session["user"])}</span></p>\n'
                    f'<table id="attributes">{rows}</table>')
            return _page("Protected content", body)
        return self._login(request)

    def _login(self, request: Request) -> Response:
        """Start SP-initiated SSO: an AuthnRequest by HTTP-Redirect, the target kept in a sealed cookie."""
        request_id, key = new_id(), os.urandom(8).hex()
        authn_request = (
            '<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" '
            'xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" '
            f'ID="{request_id}" Version="2.0" IssueInstant="{instant(time.time())}" '
            f'Destination="{escape(self.config.idp_sso_url)}" '
            f'AssertionConsumerServiceURL="{escape(self.config.acs_url)}" '
            'ProtocolBinding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST">'
            f"<saml:Issuer>{escape(self.config.entity_id)}</saml:Issuer>"
            '<samlp:NameIDPolicy AllowCreate="1"/></samlp:AuthnRequest>'
        )
        target = request.full_path.rstrip("?")
        response = _redirect(redirect_url(self.config.idp_sso_url, authn_request.encode(), f"cookie:{key}"))
        state = self.sealer.seal({"id": request_id, "target": target}, "sp-state", STATE_LIFETIME)
        _cookie(response, f"_shibstate_{key}", state, max_age=STATE_LIFETIME)
        return response

    def acs(self, request: Request) -> Response:
        relay = request.form.get("RelayState", "")
        key = relay.removeprefix("cookie:")
        state = self.sealer.open(request.cookies.get(f"_shibstate_{key}"), "sp-state") if key else None
        try:
            if state is None:
                raise SPRefusal("unsolicited response: no outstanding request matches its RelayState")
            xml = decode_post(request.form.get("SAMLResponse", ""))
            user, attributes = validate_response(
                xml,
                self.verifier,
                Expected(idp=self.config.idp_entity_id, audience=self.config.entity_id,
                         acs_url=self.config.acs_url, request_id=state["id"]),
            )
        except (SPRefusal, BindingError) as exc:
            return _page("Login refused", f'<p id="reason">{escape(str(exc))}</p>', status=403)
        response = _redirect(state["target"])
        _cookie(response, self.session_cookie,
                self.sealer.seal({"user": user, "attributes": attributes}, "sp-session", SESSION_LIFETIME))
        response.delete_cookie(f"_shibstate_{key}", path="/", secure=True, httponly=True, samesite="None")
        return response


def create_app(config: SPConfig | None = None):
    config = config or SPConfig.load(os.environ[SP_CONFIG_ENV])
    sp = ServiceProvider(config)
    metadata = sp_metadata(config.entity_id, config.acs_url)

    @Request.application
    def app(request: Request) -> Response:
        path = request.path
        if path == PROTECTED_PREFIX or path.startswith(PROTECTED_PREFIX + "/"):
            return sp.secure(request)
        if path == ACS_PATH and request.method == "POST":
            return sp.acs(request)
        if path == "/Shibboleth.sso/Status":
            return Response("ok\n", mimetype="text/plain")
        if path == "/Shibboleth.sso/Metadata":
            return Response(metadata, mimetype="application/samlmetadata+xml")
        if path == "/":
            return _page("authbench lab SP", '<p><a href="/secure/">Log in</a></p>')
        return _page("Not Found", f"<p>{escape(path)}</p>", status=404)

    return app
