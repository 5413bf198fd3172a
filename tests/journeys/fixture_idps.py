"""IdPs that cannot run here, served from their page fixtures: each product's flow, cookies and checks.

One WSGI app serves, under /<flavour>/, a fake SP (protected page, ACS) and the IdP's sequence of
pages from tests/journeys/fixtures/<flavour>/. The IdPs check what a browser without JavaScript must
send (hidden fields, the pressed button, checked boxes only, cookies back, the form's own action) and
answer like the product does otherwise: a stale page, the login form again with an error.
"""

from __future__ import annotations

import base64
import html
import os
import threading
from pathlib import Path
from string import Template
from urllib.parse import quote

from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

FIXTURES = Path(__file__).parent / "fixtures"
FLAVOURS = ("shibboleth-v4", "shibboleth-v5", "simplesamlphp-1.19", "keycloak")
PASSWORDS = {"alice": "alice-pw", "blocked": "blocked-pw"}  # "blocked" gets a SAML error status
RELAY_STATE = 'ss:mem:a&b<c>"d'  # must survive HTML escaping in the response form
SUCCESS = "urn:oasis:names:tc:SAML:2.0:status:Success"
DENIED = "urn:oasis:names:tc:SAML:2.0:status:Responder"
SSO_PATHS = {
    "shibboleth-v4": "/idp/profile/SAML2/Redirect/SSO",
    "shibboleth-v5": "/idp/profile/SAML2/Redirect/SSO",
    "simplesamlphp-1.19": "/simplesaml/saml2/idp/SSOService.php",
    "keycloak": "/realms/demo/protocol/saml",
}
CONSENTED = {"shibboleth-v4": ["mail", "eduPersonPrincipalName", "displayName"], "shibboleth-v5": ["uid", "mail"]}


def render(flavour: str, name: str, raw: dict[str, str] | None = None, **values: str) -> str:
    """A fixture page with its $placeholders filled: values HTML-escaped, `raw` ones as they are."""
    text = (FIXTURES / flavour / f"{name}.html").read_text()
    filled = {key: html.escape(value) for key, value in values.items()}
    return Template(text).substitute({**filled, **(raw or {})})


def _token() -> str:
    return os.urandom(8).hex()


def _html(body: str, status: int = 200) -> Response:
    return Response(body, status=status, mimetype="text/html")


def _redirect(location: str, status: int = 302) -> Response:
    return Response(status=status, headers={"Location": location})


def _error(message: str) -> str:
    return f'<p class="form-error">{html.escape(message)}</p>'


class FixtureSite:
    def __init__(self) -> None:
        self.base = ""  # http://127.0.0.1:port, set once the server listens
        self.issued: dict[str, str] = {}  # SAMLResponse → user, until the SP consumes it
        self.sp_sessions: dict[str, str] = {}
        self.state: dict[str, dict] = {}  # every IdP's conversations, by their own keys
        self.idp_sessions: dict[str, str] = {}  # IdP SSO session cookie value → user
        self.seen: set[tuple[str, str]] = set()  # (folder, page) of every fixture served

    def render(self, flavour: str, name: str, raw: dict[str, str] | None = None, **values: str) -> str:
        self.seen.add((flavour, name))
        return render(flavour, name, raw, **values)

    # -- the fake SP --------------------------------------------------------------------------------
    def sp(self, flavour: str, request: Request, rest: str) -> Response:
        cookie = f"_spsession_{FLAVOURS.index(flavour)}"
        if rest == "/secure/":
            user = self.sp_sessions.get(request.cookies.get(cookie, ""))
            if user:
                return _html(self.render("sp", "protected", user=user, idp=flavour))
            sso = f"{self.base}/{flavour}{SSO_PATHS[flavour]}"
            authn = base64.b64encode(f'<AuthnRequest ID="_{_token()}"/>'.encode()).decode()
            return _redirect(f"{sso}?SAMLRequest={quote(authn, safe='')}&RelayState={quote(RELAY_STATE, safe='')}")
        if rest == "/acs" and request.method == "POST":
            user = self.issued.pop(request.form.get("SAMLResponse", ""), None)
            if user is None or request.form.get("RelayState") != RELAY_STATE:
                return _html("<title>Login refused</title><p>unknown response or relay state</p>", 403)
            token = _token()
            self.sp_sessions[token] = user
            response = _redirect(f"/{flavour}/sp/secure/")
            response.set_cookie(cookie, token, path=f"/{flavour}/sp", httponly=True)
            return response
        return _html("<title>Not Found</title>", 404)

    def respond(self, flavour: str, user: str, page: str = "response") -> Response:
        status = DENIED if user == "blocked" else SUCCESS
        xml = (f'<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" ID="_{_token()}">'
               f'<samlp:Status><samlp:StatusCode Value="{status}"/></samlp:Status></samlp:Response>')
        value = base64.b64encode(xml.encode()).decode()
        self.issued[value] = user
        return _html(self.render(flavour, page, acs=f"{self.base}/{flavour}/sp/acs", saml_response=value,
                            relay_state=RELAY_STATE))

    # -- Shibboleth IdP v4 / v5 ----------------------------------------------------------------------
    def shibboleth(self, flavour: str, request: Request) -> Response:
        session_cookie = "__Host-shib_idp_session" if flavour == "shibboleth-v5" else "shib_idp_session"
        session_path = "/" if flavour == "shibboleth-v5" else f"/{flavour}/idp"
        sso = f"/{flavour}{SSO_PATHS[flavour]}"
        execution = request.args.get("execution")
        jsessionid = request.cookies.get("JSESSIONID", "")
        if execution is None:
            previous = self.state.get(jsessionid)
            jsessionid = jsessionid or _token().upper()
            state = {"e": previous["e"] + 1 if previous else 1, "s": 1, "view": "read", "csrf": _token(), "user": ""}
            self.state[jsessionid] = state
            response = _redirect(f"{sso}?execution=e{state['e']}s1")
            response.set_cookie("JSESSIONID", jsessionid, path=f"/{flavour}/idp", secure=True, httponly=True)
            return response
        state = self.state.get(jsessionid)
        if state is None or execution != f"e{state['e']}s{state['s']}":
            return _html(self.render(flavour, "stale"))
        action = f"{sso}?execution={execution}"
        if request.method == "GET":
            view = state["view"]
            if view == "login":
                return _html(self.render(flavour, "login", {"error": state.get("error", "")}, action=action,
                                    csrf=state["csrf"], sp="https://sp.example.org/shibboleth",
                                    username=state.get("username", "")))
            page = {"read": "storage-read", "consent": "consent", "write": "storage-write"}[view]
            return _html(self.render(flavour, page, action=action, csrf=state["csrf"], username=state["user"],
                                sp="https://sp.example.org/shibboleth"))
        form = request.form
        if form.get("csrf_token") != state["csrf"] or "_eventId_proceed" not in form:
            return _html("<title>Invalid Request</title>", 400)
        new_cookie = None
        if state["view"] == "read":
            if form.get("shib_idp_ls_success.shib_idp_session_ss") != "false" or form.get("shib_idp_ls_supported"):
                return _html("<title>Invalid Request</title><p>storage fields changed</p>", 400)
            state["user"] = self.idp_sessions.get(request.cookies.get(session_cookie, ""), "")
            next_view = "consent" if state["user"] else "login"
        elif state["view"] == "login":
            user, password = form.get("j_username", ""), form.get("j_password", "")
            if "donotcache" in form or PASSWORDS.get(user) != password:
                state.update(error=_error("The password you entered was incorrect."), username=user)
                next_view = "login"
            else:
                if user == "blocked":
                    del self.state[jsessionid]
                    return self.respond(flavour, user)
                state["user"], new_cookie = user, _token()
                self.idp_sessions[new_cookie] = user
                next_view = "consent"
        elif state["view"] == "consent":
            rejected = "_eventId_AttributeReleaseRejected" in form
            if rejected or form.getlist("_shib_idp_consentIds") != CONSENTED[flavour] \
                    or form.get("_shib_idp_consentOptions") != "_shib_idp_rememberConsent":
                return _html("<title>Invalid Request</title><p>consent form not as shown</p>", 400)
            next_view = "write"
        else:
            del self.state[jsessionid]
            return self.respond(flavour, state["user"])
        state.update(s=state["s"] + 1, view=next_view, csrf=_token())
        response = _redirect(f"{sso}?execution=e{state['e']}s{state['s']}")
        if new_cookie:
            response.set_cookie(session_cookie, new_cookie, path=session_path, secure=True, httponly=True)
        return response

    # -- SimpleSAMLphp 1.19 ---------------------------------------------------------------------------
    def simplesamlphp(self, flavour: str, request: Request, rest: str) -> Response:
        base = f"/{flavour}/simplesaml"
        session = request.cookies.get("SimpleSAMLSessionID", "")
        if rest == "/saml2/idp/SSOService.php" and "SAMLRequest" in request.args:
            session = session or _token()
            auth_state = f"_{_token()}:{self.base}{base}/saml2/idp/SSOService.php?spentityid=sp&cookieTime=1"
            self.state[auth_state] = {"session": session}
            response = _redirect(f"{base}/module.php/core/loginuserpass.php?AuthState={quote(auth_state, safe='')}")
            response.set_cookie("SimpleSAMLSessionID", session, path=f"{base}/", httponly=True)
            return response
        if rest == "/saml2/idp/SSOService.php":  # back from the login, with the session
            user = self.idp_sessions.get(session)
            return self.respond(flavour, user) if user else _html(self.render(flavour, "nostate"), 500)
        if rest != "/module.php/core/loginuserpass.php":
            return _html("<title>Not Found</title>", 404)
        auth_state = request.values.get("AuthState", "")
        state = self.state.get(auth_state)
        if state is None or state["session"] != session:
            return _html(self.render(flavour, "nostate"), 500)
        error, user = "", request.form.get("username", "")
        if request.method == "POST":
            if "remember_username" not in request.form and PASSWORDS.get(user) == request.form.get("password"):
                if user == "blocked":
                    return self.respond(flavour, user)
                self.idp_sessions[session] = user
                del self.state[auth_state]
                return _redirect(auth_state.split(":", 1)[1].replace(self.base, ""), 303)
            error = _error("Incorrect username or password.")
        return _html(self.render(flavour, "login", {"error": error}, username=user, auth_state=auth_state))

    # -- Keycloak ------------------------------------------------------------------------------------
    def keycloak(self, flavour: str, request: Request, rest: str) -> Response:
        realm = f"/{flavour}/realms/demo"
        session = request.cookies.get("AUTH_SESSION_ID", "")
        if rest == "/protocol/saml":
            session = session or _token()
            self.state[session] = {"tab": _token()[:11], "execution": "f1b2c3d4-0000-4000-8000-000000000001"}
            response = self._keycloak_login(flavour, session, "", "")
            response.set_cookie("AUTH_SESSION_ID", session, path=f"{realm}/", httponly=True)
            response.set_cookie("KC_RESTART", _token(), path=f"{realm}/", httponly=True)
            return response
        state = self.state.get(session)
        args = request.args
        if rest != "/login-actions/authenticate" or state is None or args.get("session_code") != state["code"] \
                or args.get("execution") != state["execution"] or args.get("tab_id") != state["tab"]:
            return _html(self.render(flavour, "expired"))
        form = request.form
        user = form.get("username", "")
        if form.get("login") != "Sign In" or form.get("credentialId") != "" or "rememberMe" in form \
                or PASSWORDS.get(user) != form.get("password"):
            return self._keycloak_login(flavour, session, user, _error("Invalid username or password."))
        del self.state[session]
        return self.respond(flavour, user)

    def _keycloak_login(self, flavour: str, session: str, username: str, error: str) -> Response:
        state = self.state[session]
        state["code"] = _token()  # a new code for every form shown: an older form is expired
        action = (f"{self.base}/{flavour}/realms/demo/login-actions/authenticate?session_code={state['code']}"
                  f"&execution={state['execution']}&client_id=sp&tab_id={state['tab']}")
        return _html(self.render(flavour, "login", {"error": error}, action=action, username=username))

    # -- dispatch ------------------------------------------------------------------------------------
    @Request.application
    def __call__(self, request: Request) -> Response:
        flavour, _, rest = request.path.lstrip("/").partition("/")
        rest = "/" + rest
        if flavour not in FLAVOURS:
            return _html("<title>Not Found</title>", 404)
        if rest.startswith("/sp/"):
            return self.sp(flavour, request, rest[3:])
        if flavour.startswith("shibboleth") and rest == SSO_PATHS[flavour]:
            return self.shibboleth(flavour, request)
        if flavour == "keycloak" and rest.startswith("/realms/demo/"):
            return self.keycloak(flavour, request, rest[len("/realms/demo"):])
        if flavour == "simplesamlphp-1.19" and rest.startswith("/simplesaml/"):
            return self.simplesamlphp(flavour, request, rest[len("/simplesaml"):])
        return _html("<title>Not Found</title>", 404)


class FixtureServer:
    """The site on 127.0.0.1 (random port, plain http: loopback is a secure origin to the cookie jar)."""

    def __init__(self) -> None:
        self.site = FixtureSite()
        self._server = make_server("127.0.0.1", 0, self.site, threaded=True)
        self.site.base = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def protected_url(self, flavour: str) -> str:
        return f"{self.site.base}/{flavour}/sp/secure/"

    def __enter__(self) -> FixtureServer:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
