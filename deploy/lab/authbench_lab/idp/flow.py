"""The login conversation, as Shibboleth IdP's web flow runs it, one view per flow snapshot.

GET …/SSO?SAMLRequest=… starts a conversation under the browser's JSESSIONID and redirects to
`?execution=e<N>s1`. Each view (client-storage read → login form → client-storage write) is
shown by a GET of its execution key and left by a POST to the same key, which redirects to the next
key; the last POST answers with the auto-submit form carrying the SAML Response. An execution key
that is not the conversation's current one is a Stale Request. Where the conversation lives decides
whether another node can continue it (the 2012 report's Test 3).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import asdict

from werkzeug.wrappers import Request, Response

from ..config import DEFAULT_IDP_COOKIE_PATH
from ..saml.bindings import BindingError, decode_redirect, encode_post
from ..saml.signing import Signer
from ..saml.xml import NS
from . import pages
from .directory import Directory
from .response import Authentication, build_response
from .sessions import SealedSessions, StoredSessions
from .stores import Store

SSO_PATH = "/idp/profile/SAML2/Redirect/SSO"
CONVERSATION_COOKIE = "JSESSIONID"
CONVERSATION_TTL = 1800  # seconds, Tomcat's default servlet-session timeout
BAD_CREDENTIALS = "The username or password you entered was incorrect."
_EXECUTION = re.compile(r"^e(\d{1,9})s(\d{1,9})$")


class SPRegistry:
    """Trusted SPs from metadata files; re-read when the directory changes (SPs added at run time)."""

    def __init__(self, metadata_dir: str, loader) -> None:
        self._dir, self._loader = metadata_dir, loader
        self._stamp: float | None = None
        self._acs: dict[str, list[str]] = {}

    def acs_urls(self, entity_id: str) -> list[str] | None:
        stamp = os.stat(self._dir).st_mtime
        if stamp != self._stamp or entity_id not in self._acs:
            self._acs, self._stamp = self._loader(self._dir), stamp
        return self._acs.get(entity_id)


def _set_cookie(response: Response, name: str, value: str, path: str) -> None:
    response.set_cookie(name, value, path=path, secure=True, httponly=True, samesite="None")


def _html(body: str, status: int = 200) -> Response:
    response = Response(body, status=status, mimetype="text/html")
    response.headers["Cache-Control"] = "no-store"
    return response


def _redirect(location: str) -> Response:
    response = Response(status=302)
    response.headers["Location"] = location
    response.headers["Cache-Control"] = "no-store"
    return response


def _action(state: dict) -> str:
    return f"{SSO_PATH}?execution=e{state['e']}s{state['s']}"


class LoginFlow:
    def __init__(
        self,
        *,
        entity_id: str,
        scope: str,
        client_storage: bool,
        conversations: Store,
        sessions: StoredSessions | SealedSessions,
        directory: Directory,
        signer: Signer,
        registry: SPRegistry,
        cookie_path: str = DEFAULT_IDP_COOKIE_PATH,  # the lab's --idp-cookie-path
    ) -> None:
        self.entity_id = entity_id
        self.scope = scope
        self.client_storage = client_storage
        self.conversations = conversations
        self.sessions = sessions
        self.directory = directory
        self.signer = signer
        self.registry = registry
        self.cookie_path = cookie_path

    # -- entry points ----------------------------------------------------------------------------
    def start(self, request: Request) -> Response:
        try:
            authn = self._parse_authn_request(request)
        except ValueError as exc:
            return _html(pages.error("Unsupported Request", str(exc)), 400)
        jsessionid = request.cookies.get(CONVERSATION_COOKIE)
        previous = self.conversations.get(jsessionid) if jsessionid else None
        state = {"e": previous["e"] + 1 if previous else 1, "s": 1, "error": None, "username": "", "auth": None,
                 **authn}
        if not jsessionid:
            jsessionid = os.urandom(16).hex().upper()
        if self.client_storage:
            next_view = "read"
        else:
            state["auth"] = self._existing_sso(request)
            next_view = "response" if state["auth"] else "login"
        response = self._go(state, jsessionid, next_view, new_snapshot=False)
        _set_cookie(response, CONVERSATION_COOKIE, jsessionid, self.cookie_path)
        return response

    def resume(self, request: Request, execution: str) -> Response:
        jsessionid = request.cookies.get(CONVERSATION_COOKIE)
        match = _EXECUTION.match(execution)
        state = self.conversations.get(jsessionid) if jsessionid and match else None
        if state is None or (state["e"], state["s"]) != (int(match[1]), int(match[2])):
            return _html(pages.stale_request(), 400)
        if request.method == "GET":
            return self._render(state)
        if request.form.get("csrf_token") != state["csrf"]:
            return _html(pages.error("Invalid Request", "The form's CSRF token did not match; start again."), 400)
        return self._leave_view(request, state, jsessionid)

    # -- steps -------------------------------------------------------------------------------------
    def _parse_authn_request(self, request: Request) -> dict:
        encoded = request.args.get("SAMLRequest")
        if not encoded:
            raise ValueError("No SAML request in this URL.")
        try:
            message = decode_redirect(encoded)
        except BindingError as exc:
            raise ValueError(str(exc)) from exc
        if message.tag != f"{{{NS['samlp']}}}AuthnRequest" or not message.get("ID"):
            raise ValueError("The message is not a SAML 2.0 AuthnRequest.")
        issuer = message.findtext("saml:Issuer", namespaces=NS) or ""
        acs_urls = self.registry.acs_urls(issuer.strip())
        if not acs_urls:
            raise ValueError(f"The service {issuer.strip()!r} is not known to this identity provider.")
        acs = message.get("AssertionConsumerServiceURL") or acs_urls[0]
        if acs not in acs_urls:
            raise ValueError("The assertion consumer service URL is not in the service's metadata.")
        return {"sp": issuer.strip(), "acs": acs, "req": message.get("ID"), "relay": request.args.get("RelayState")}

    def _existing_sso(self, request: Request) -> dict | None:
        """The authentication of a still-valid SSO session, with attributes resolved afresh."""
        session = self.sessions.load(request.cookies.get(self.sessions.cookie))
        if not session:
            return None
        entry = self.directory.lookup(session["user"])
        if entry is None:
            return None
        return {**session, "attributes": entry[1]}

    def _leave_view(self, request: Request, state: dict, jsessionid: str) -> Response:
        view = state["view"]
        new_session_cookie = None
        if view == "read":
            state["auth"] = self._existing_sso(request)
            next_view = "write" if state["auth"] and self.client_storage else ("response" if state["auth"] else "login")
        elif view == "login":
            username = request.form.get("j_username", "").strip()
            attributes = self.directory.authenticate(username, request.form.get("j_password", ""))
            if attributes is None:
                state.update(error=BAD_CREDENTIALS, username=username)
                return self._go(state, jsessionid, "login")
            auth = Authentication(user=username, attributes={}, authn_instant=time.time(),
                                  session_index=os.urandom(16).hex())
            new_session_cookie = self.sessions.save(asdict(auth))
            state["auth"] = {**asdict(auth), "attributes": attributes}
            next_view = "write" if self.client_storage else "response"
        else:  # write
            next_view = "response"
        response = self._go(state, jsessionid, next_view)
        if new_session_cookie:
            _set_cookie(response, self.sessions.cookie, new_session_cookie, self.cookie_path)
        return response

    def _go(self, state: dict, jsessionid: str, view: str, new_snapshot: bool = True) -> Response:
        """Move the conversation to `view`: redirect to its new execution key, or finish with the response."""
        if view == "response":
            if "view" in state:  # the conversation was stored: the flow ends here
                self.conversations.delete(jsessionid)
            return self._respond(state)
        if new_snapshot:
            state["s"] += 1
        if view != "login":
            state["error"] = None
        state.update(view=view, csrf="_" + os.urandom(16).hex())
        self.conversations.put(jsessionid, state, CONVERSATION_TTL)
        return _redirect(_action(state))

    def _render(self, state: dict) -> Response:
        action, csrf = _action(state), state["csrf"]
        if state["view"] == "read":
            return _html(pages.read_storage(action, csrf))
        if state["view"] == "write":
            return _html(pages.write_storage(action, csrf))
        return _html(pages.login(action, csrf, state["sp"], state["username"], state["error"]))

    def _respond(self, state: dict) -> Response:
        auth = Authentication(**state["auth"])
        xml = build_response(self.signer, issuer=self.entity_id, audience=state["sp"], acs_url=state["acs"],
                             in_response_to=state["req"], authentication=auth, scope=self.scope)
        return _html(pages.post_response(state["acs"], encode_post(xml), state["relay"]))
