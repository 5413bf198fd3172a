"""The OIDC kind's other journeys, request by request: refresh, client credentials, introspection, logout.

Every endpoint comes from the discovery document (`Endpoints`); a grant whose endpoint the provider does not
publish fails with `discovery error` (the preflight's one line). The back-channel requests carry the RP's
credentials as the code exchange does (`Client.authenticate`). Tokens, refresh tokens and the client secret
are never put in a URL or a failure's detail; the logout request's `id_token_hint` is a query parameter
(OpenID Connect RP-Initiated Logout 1.0) and URLs reach results only without their query.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from html import unescape
from urllib.parse import parse_qs, urlencode, urlsplit

from ...journeys.fastbrowser import FastBrowser
from ...journeys.forms import Form, Page
from ...journeys.saml import HTTP_STATUS, page_url
from . import flow
from .flow import DISCOVERY_ERROR, STATE_MISMATCH, TOKEN_ERROR, Client, FlowFailed, Provider, Tokens, read_json

# The journeys (`--grant`), each also a named variant of the kind (grants.VARIANTS)
CODE_FLOW, REFRESH_GRANT, CLIENT_CREDENTIALS_GRANT, INTROSPECTION_GRANT, LOGOUT_GRANT = (
    "code-flow", "refresh", "client-credentials", "introspection", "logout")
GRANTS = (CODE_FLOW, REFRESH_GRANT, CLIENT_CREDENTIALS_GRANT, INTROSPECTION_GRANT, LOGOUT_GRANT)

# Failure reasons of these journeys (beside the code flow's)
REFRESH_ERROR = "refresh error"  # the token endpoint refused the refresh token (invalid_grant: expired, revoked …)
INTROSPECTION_ERROR = "introspection error"  # refused, or the token is not active
LOGOUT_ERROR = "logout error"  # the end-session endpoint refused, or ended elsewhere than its confirmation
REASONS = (REFRESH_ERROR, INTROSPECTION_ERROR, LOGOUT_ERROR)

# Step names
REFRESH = "OP token (refresh)"
CLIENT_CREDENTIALS = "OP token (client credentials)"
INTROSPECT = "OP introspection"
END_SESSION = "OP end session"
LOGOUT_CONFIRM = "OP logout confirm"

MAX_LOGOUT_PAGES = 4  # a confirmation page, maybe a second one: more is a loop
LOGOUT_BUTTONS = ("logout", "confirmLogout", "yes", "confirm", "ok", "_eventId_proceed", "accept")
DETAIL_CHARS = 120  # of an error_description
# <button form="ID" name="N" value="V">: a submit button outside its form (HTML5's form attribute)
_OUTSIDE_BUTTON = re.compile(r"<button\b[^>]*>", re.I)
_ATTRIBUTE = re.compile(r"""\b(form|name|value|type)\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I)


@dataclass(frozen=True)
class Endpoints:
    """What the other journeys need of discovery, beside `flow.Provider`'s authorization and token endpoints."""

    introspection_endpoint: str = ""
    end_session_endpoint: str = ""
    grant_types: tuple[str, ...] = ()  # grant_types_supported, when published

    @classmethod
    def from_document(cls, document: dict) -> Endpoints:
        grants = document.get("grant_types_supported")
        return cls(str(document.get("introspection_endpoint") or ""), str(document.get("end_session_endpoint") or ""),
                   tuple(g for g in grants if isinstance(g, str)) if isinstance(grants, list) else ())

    def allow(self, grant_type: str, grant: str) -> None:
        """A provider that lists its grant types (grant_types_supported) and not this one cannot serve it."""
        if self.grant_types and grant_type not in self.grant_types:
            raise FlowFailed(DISCOVERY_ERROR, f"the discovery document's grant_types_supported lacks {grant_type}, "
                             f"which --grant {grant} needs")

    def require(self, name: str, grant: str) -> str:
        url = getattr(self, name)
        if not url:
            raise FlowFailed(DISCOVERY_ERROR, f"the discovery document lacks {name}, which --grant {grant} needs")
        return url


def discover(rp: FastBrowser, issuer: str) -> tuple[Provider, Endpoints]:
    """The discovery document read once: the code flow's Provider and these journeys' Endpoints."""
    page = rp.get(issuer.rstrip("/") + "/.well-known/openid-configuration", name=flow.DISCOVERY)
    if page.status != 200:
        raise FlowFailed(HTTP_STATUS if page.status >= 500 else DISCOVERY_ERROR,
                         f"no discovery document: {page.status} at {page_url(page.url)}", page)
    document = read_json(page, "discovery", DISCOVERY_ERROR)
    return Provider.from_document(document, issuer), Endpoints.from_document(document)


def _refused(page: Page, what: str, reason: str) -> FlowFailed:
    if page.status >= 500:
        return FlowFailed(HTTP_STATUS, f"{what} answered {page.status}")
    answer = read_json(page, what, reason)
    description = str(answer.get("error_description", ""))[:DETAIL_CHARS]
    return FlowFailed(reason, f"{answer.get('error', page.status)}" + (f" ({description})" if description else ""))


def _token_answer(page: Page, reason: str) -> dict:
    if page.status != 200:
        raise _refused(page, "the token endpoint", reason)
    answer = read_json(page, "the token endpoint", reason)
    if "error" in answer:
        raise _refused(page, "the token endpoint", reason)
    if not isinstance(answer.get("access_token"), str):
        raise FlowFailed(reason, "no access_token in the token response")
    return answer


def refresh(rp: FastBrowser, provider: Provider, client: Client, tokens: Tokens) -> None:
    """RFC 6749 section 6: new tokens for the refresh token; a rotated refresh token replaces the old one."""
    if not tokens.refresh_token:
        raise FlowFailed(TOKEN_ERROR, "no refresh_token in the code flow's token response")
    form, headers = client.authenticate([("grant_type", "refresh_token"), ("refresh_token", tokens.refresh_token)])
    answer = _token_answer(rp.request("POST", provider.token_endpoint, form, name=REFRESH, headers=headers),
                           REFRESH_ERROR)
    tokens.access_token = answer["access_token"]
    if isinstance(answer.get("id_token"), str):
        tokens.id_token = answer["id_token"]
    if isinstance(answer.get("refresh_token"), str):
        tokens.refresh_token = answer["refresh_token"]


def client_credentials(rp: FastBrowser, provider: Provider, client: Client, scope: str = "") -> Tokens:
    """RFC 6749 section 4.4: the RP's own access token, no user."""
    form, headers = client.authenticate([("grant_type", "client_credentials"), *([("scope", scope)] if scope else [])])
    answer = _token_answer(rp.request("POST", provider.token_endpoint, form, name=CLIENT_CREDENTIALS,
                                      headers=headers), TOKEN_ERROR)
    return Tokens(answer["access_token"])


def introspect(rp: FastBrowser, endpoint: str, client: Client, tokens: Tokens) -> None:
    """RFC 7662: the access token the user holds, asked about with the RP's credentials; it must be active."""
    form, headers = client.authenticate([("token", tokens.access_token), ("token_type_hint", "access_token")])
    page = rp.request("POST", endpoint, form, name=INTROSPECT, headers=headers)
    if page.status != 200:
        raise _refused(page, "the introspection endpoint", INTROSPECTION_ERROR)
    answer = read_json(page, "the introspection endpoint", INTROSPECTION_ERROR)
    if answer.get("active") is not True:
        raise FlowFailed(INTROSPECTION_ERROR, "the token is not active")


@dataclass
class Logout:
    """One RP-initiated logout's request: where the provider is to send the browser back, and its state."""

    post_logout_redirect_uri: str = ""
    state: str = field(default_factory=lambda: secrets.token_urlsafe(flow.STATE_BYTES), repr=False)
    pages: list[str] = field(default_factory=list)  # titles of the pages walked

    def secrets(self) -> list[str]:
        return [self.state]

    def caught(self, url: str) -> bool:
        uri = self.post_logout_redirect_uri
        return bool(uri) and (url == uri or url.startswith((uri + "?", uri + "#")))

    def url(self, endpoint: str, client: Client, tokens: Tokens) -> str:
        query = {"client_id": client.client_id, **({"id_token_hint": tokens.id_token} if tokens.id_token else {})}
        if self.post_logout_redirect_uri:
            query |= {"post_logout_redirect_uri": self.post_logout_redirect_uri, "state": self.state}
        return endpoint + ("&" if "?" in endpoint else "?") + urlencode(query)


def _outside_buttons(page: Page, form: Form) -> dict[str, str]:
    """Submit buttons placed outside `form` that name it (`<button form="ID">`), as oidc-provider's logout page has."""
    if not form.id:
        return {}
    found = {}
    for tag in _OUTSIDE_BUTTON.findall(page.text):
        attrs = {m[1].lower(): unescape(m[2] or m[3]) for m in _ATTRIBUTE.finditer(tag)}
        if attrs.get("form") == form.id and attrs.get("name") and attrs.get("type", "submit").lower() == "submit":
            found.setdefault(attrs["name"], attrs.get("value", ""))
    return found


def _confirm(browser: FastBrowser, page: Page) -> Page:
    """Post the logout confirmation the page asks for, with the button that says yes when there is one."""
    forms = page.forms()
    for form in forms:
        form.buttons = {**_outside_buttons(page, form), **form.buttons}
    form = next((f for f in forms if any(b in f.buttons for b in LOGOUT_BUTTONS)), forms[0])
    button = next((b for b in LOGOUT_BUTTONS if b in form.buttons), None)
    return browser.submit(form, None, button, name=LOGOUT_CONFIRM)


def _error_code(text: str) -> str:
    return next((code for code in flow.ERROR_CODES if code in text), "")


def logout(browser: FastBrowser, endpoint: str, client: Client, tokens: Tokens, request: Logout) -> None:
    """OpenID Connect RP-Initiated Logout 1.0 in the browser that logged in: the end-session request, a
    confirmation page posted when the provider shows one, then either the redirect to the
    post_logout_redirect_uri (caught; its state must be the request's) or, without one, the provider's own
    page saying so (a 2xx page without a form)."""
    page = browser.get(request.url(endpoint, client, tokens), name=END_SESSION)
    for _ in range(MAX_LOGOUT_PAGES):
        if request.caught(page.url) and 300 <= page.status < 400:
            parts = urlsplit(page.url)
            answer = {name: values[0] for name, values in parse_qs(parts.query).items()}
            if answer.get("state") != request.state:
                raise FlowFailed(STATE_MISMATCH, "the post_logout_redirect_uri's state is not the request's")
            return
        request.pages.append(page.title)
        if page.status >= 500:
            raise FlowFailed(HTTP_STATUS, f"{page.status} {page.title or 'no title'} at {page_url(page.url)}", page)
        if page.status >= 300:
            code = _error_code(page.text)
            raise FlowFailed(LOGOUT_ERROR, (f"{code}: " if code else "") + f"{page.status} {page.title or 'no title'} "
                             f"at {page_url(page.url)}", page)
        if not page.forms():
            if request.post_logout_redirect_uri:
                raise FlowFailed(LOGOUT_ERROR, "no redirect to --post-logout-redirect-uri: "
                                 f"{page.status} {page.title or 'no title'} at {page_url(page.url)}", page)
            return  # the provider's own page: signed out
        page = _confirm(browser, page)
    raise FlowFailed(LOGOUT_ERROR, f"gave up after {MAX_LOGOUT_PAGES} pages")

