"""The OpenID Connect authorization code flow as a browser and a relying party walk it, read from discovery.

The browser asks the authorization endpoint (PKCE S256, `state`, `nonce`), walks the provider's login page
with the same form walker as SAML, and any consent page; its redirect to the `redirect_uri` is caught, not
followed (a virtual RP: nothing needs to listen there). The RP then exchanges the code at the token endpoint
over its own connection, and optionally checks the ID token and calls userinfo. Every URL comes from the
discovery document; no provider's paths are known here. A failed flow says why with one of `REASONS`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, quote_plus, urlencode, urlsplit

from ...journeys.fastbrowser import FastBrowser, TooManyRedirects, UnsupportedURL
from ...journeys.forms import Form, LoginFields, Page, find_login_form
from ...journeys.saml import BAD_CREDENTIALS, CONNECTION_ERROR, HTTP_STATUS, NO_LOGIN_FORM, TIMEOUT, page_url

DISCOVERY_PATH = "/.well-known/openid-configuration"
MAX_PAGES = 8  # login and consent are two pages; more is a loop
VERIFIER_BYTES = 48  # 64 base64url characters: RFC 7636 wants 43..128
STATE_BYTES = 16
REQUIRED_ENDPOINTS = ("authorization_endpoint", "token_endpoint")
CONSENT_BUTTONS = ("accept", "allow", "approve", "consent", "_eventId_proceed", "submit.Accept", "yes")
# OAuth error codes a provider's error page may name (RFC 6749 4.1.2.1, 5.2; oidc-provider's own).
ERROR_CODES = ("invalid_redirect_uri", "unauthorized_client", "invalid_client", "invalid_request", "invalid_scope",
               "access_denied", "unsupported_response_type", "server_error", "invalid_grant")

# Failure reasons, beside SAML's own (bad credentials, no login form found, http status, timeout, connection error)
DISCOVERY_ERROR = "discovery error"  # no discovery document, or one lacking an endpoint
PROVIDER_ERROR = "provider error"  # error= on the redirect_uri, or the provider's own error page
STATE_MISMATCH = "state mismatch"  # the redirect's state (or iss) is not this request's
TOKEN_ERROR = "token error"  # the token endpoint refused the code (invalid_grant, invalid_client, …)
ID_TOKEN_INVALID = "id token invalid"  # --validate-id-token: signature, iss, aud, exp or nonce
USERINFO_ERROR = "userinfo error"
REASONS = (DISCOVERY_ERROR, PROVIDER_ERROR, STATE_MISMATCH, TOKEN_ERROR, ID_TOKEN_INVALID, USERINFO_ERROR,
           BAD_CREDENTIALS, NO_LOGIN_FORM, HTTP_STATUS, TIMEOUT, CONNECTION_ERROR)

# Step names: the browser's, then the RP's back channel.
DISCOVERY = "OP discovery"
AUTHORIZE = "OP authorization"
LOGIN_FORM = "OP login form"
LOGIN_POST = "OP login POST"
CONSENT = "OP consent"
TOKEN = "OP token"
JWKS = "OP JWKS"
USERINFO = "OP userinfo"

BASIC, POST, NONE = "client_secret_basic", "client_secret_post", "none"
CLIENT_AUTH = (BASIC, POST, NONE)


class FlowFailed(Exception):
    def __init__(self, reason: str, detail: str, page: Page | None = None) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail, self.page = reason, detail, page


@dataclass(frozen=True)
class Provider:
    """What discovery said: the endpoints, the issuer, the signing algorithms."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str = ""
    userinfo_endpoint: str = ""
    signing_algs: tuple[str, ...] = ("RS256",)

    @classmethod
    def from_document(cls, document: Any, issuer: str) -> Provider:
        if not isinstance(document, dict):
            raise FlowFailed(DISCOVERY_ERROR, "the discovery document is not a JSON object")
        missing = [name for name in REQUIRED_ENDPOINTS if not isinstance(document.get(name), str)]
        if missing:
            raise FlowFailed(DISCOVERY_ERROR, f"the discovery document lacks {', '.join(missing)}")
        if str(document.get("issuer", "")).rstrip("/") != issuer.rstrip("/"):
            raise FlowFailed(DISCOVERY_ERROR, f"its issuer {document.get('issuer')!r} is not the target {issuer!r}")
        algs = document.get("id_token_signing_alg_values_supported") or ["RS256"]
        return cls(document["issuer"], document["authorization_endpoint"], document["token_endpoint"],
                   str(document.get("jwks_uri", "")), str(document.get("userinfo_endpoint", "")),
                   tuple(alg for alg in algs if isinstance(alg, str) and alg != "none"))


@dataclass(frozen=True)
class Client:
    """The relying party authbench plays: registered at the provider with this id, secret and redirect URI."""

    client_id: str
    redirect_uri: str
    scope: str = "openid"
    auth: str = BASIC
    secret: str = field(default="", repr=False)

    def caught(self, url: str) -> bool:
        """Whether a redirect goes to this RP's redirect_uri (then it is caught, not followed)."""
        return url == self.redirect_uri or url.startswith((self.redirect_uri + "?", self.redirect_uri + "#"))

    def token_request(self, code: str, verifier: str) -> tuple[list[tuple[str, str]], str]:
        """The token request's form and extra headers."""
        return self.authenticate([("grant_type", "authorization_code"), ("code", code),
                                  ("redirect_uri", self.redirect_uri), ("code_verifier", verifier)])

    def authenticate(self, form: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], str]:
        """A back-channel request's form and extra headers with the RP's credentials (RFC 6749 2.3.1: basic
        credentials form-encoded first)."""
        if self.auth == BASIC:
            pair = f"{quote_plus(self.client_id)}:{quote_plus(self.secret)}".encode()
            return form, f"Authorization: Basic {base64.b64encode(pair).decode()}\r\n"
        form.append(("client_id", self.client_id))
        if self.auth == POST:
            form.append(("client_secret", self.secret))
        return form, ""


@dataclass
class Tokens:
    access_token: str = field(repr=False)
    id_token: str = field(default="", repr=False)
    claims: dict = field(default_factory=dict)  # the ID token's, when validated
    refresh_token: str = field(default="", repr=False)  # kept for the refresh journey (grant_flows.py)

    def secrets(self) -> list[str]:
        return [self.access_token, self.id_token, self.refresh_token]


@dataclass
class Flow:
    """One authorization request's secrets (never kept): PKCE verifier, state, nonce, the code once given."""

    verifier: str = field(default_factory=lambda: secrets.token_urlsafe(VERIFIER_BYTES), repr=False)
    state: str = field(default_factory=lambda: secrets.token_urlsafe(STATE_BYTES), repr=False)
    nonce: str = field(default_factory=lambda: secrets.token_urlsafe(STATE_BYTES), repr=False)
    code: str = field(default="", repr=False)
    tokens: Tokens | None = None
    password_asked: bool = False
    pages: list[str] = field(default_factory=list)  # titles of the pages walked

    def secrets(self) -> list[str]:
        return [self.verifier, self.state, self.nonce, self.code, *(self.tokens.secrets() if self.tokens else ())]

    def authorization_url(self, provider: Provider, client: Client) -> str:
        challenge = base64.urlsafe_b64encode(hashlib.sha256(self.verifier.encode()).digest()).rstrip(b"=").decode()
        query = urlencode({"response_type": "code", "client_id": client.client_id, "redirect_uri": client.redirect_uri,
                           "scope": client.scope, "state": self.state, "nonce": self.nonce,
                           "code_challenge": challenge, "code_challenge_method": "S256"})
        endpoint = provider.authorization_endpoint
        return endpoint + ("&" if "?" in endpoint else "?") + query


def _where(page: Page) -> str:
    return f"{page.status} {page.title or 'no title'} at {page_url(page.url)}"


def read_json(page: Page, what: str, reason: str) -> dict:
    try:
        document = json.loads(page.text)
    except ValueError:
        raise FlowFailed(reason, f"{what} answered {page.status} without JSON at {page_url(page.url)}") from None
    if not isinstance(document, dict):
        raise FlowFailed(reason, f"{what} answered {page.status} with JSON that is no object")
    return document


def discover(rp: FastBrowser, issuer: str) -> Provider:
    """The provider's discovery document (OpenID Connect Discovery 1.0 section 4)."""
    page = rp.get(issuer.rstrip("/") + DISCOVERY_PATH, name=DISCOVERY)
    if page.status != 200:
        raise FlowFailed(HTTP_STATUS if page.status >= 500 else DISCOVERY_ERROR,
                         f"no discovery document: {_where(page)}", page)
    return Provider.from_document(read_json(page, "discovery", DISCOVERY_ERROR), issuer)


def _error_code(text: str) -> str:
    return next((code for code in ERROR_CODES if code in text), "")


def _consent_button(form: Form) -> str | None:
    return next((name for name in form.buttons if name in CONSENT_BUTTONS), None)


def authorize(browser: FastBrowser, flow: Flow, provider: Provider, client: Client, username: str, password: str,
              fields: tuple[LoginFields, ...]) -> None:
    """Browser side: from the authorization request to the code on the caught redirect (flow.code)."""

    def namer(method: str, url: str, page: Page, previous: str) -> str:
        if page.status < 300 and (forms := page.forms()):
            return LOGIN_FORM if find_login_form(forms, fields) else CONSENT
        return previous

    page = browser.get(flow.authorization_url(provider, client), name=AUTHORIZE, namer=namer)
    for _ in range(MAX_PAGES):
        if client.caught(page.url) and 300 <= page.status < 400:
            _take_code(flow, provider, page.url)
            return
        flow.pages.append(page.title)
        if page.status >= 500:
            raise FlowFailed(HTTP_STATUS, _where(page), page)
        if page.status >= 300:
            code = _error_code(page.text)
            raise FlowFailed(PROVIDER_ERROR, (f"{code}: " if code else "") + _where(page), page)
        forms = page.forms()
        login = find_login_form(forms, fields)
        if login is not None:
            if flow.password_asked:
                raise FlowFailed(BAD_CREDENTIALS, "login form shown again: " + _where(page), page)
            flow.password_asked = True
            form, names = login
            button = names.submit if names.submit in form.buttons else None
            page = browser.submit(form, {names.username: username, names.password: password}, button,
                                  name=LOGIN_POST, namer=namer)
        elif forms:
            form = next((f for f in forms if _consent_button(f)), forms[0])
            page = browser.submit(form, None, _consent_button(form), name=CONSENT, namer=namer)
        else:
            code = _error_code(page.text)
            if code:
                raise FlowFailed(PROVIDER_ERROR, f"{code}: {_where(page)}", page)
            raise FlowFailed(NO_LOGIN_FORM, "no login form: " + _where(page), page)
    raise FlowFailed(NO_LOGIN_FORM, f"gave up after {MAX_PAGES} pages")


def _take_code(flow: Flow, provider: Provider, url: str) -> None:
    parts = urlsplit(url)
    answer = {name: values[0] for name, values in parse_qs(parts.query or parts.fragment).items()}
    if "error" in answer:
        description = answer.get("error_description", "")
        raise FlowFailed(PROVIDER_ERROR, f"error={answer['error']} on the redirect_uri"
                         + (f" ({description[:120]})" if description else ""))
    if answer.get("state") != flow.state:
        raise FlowFailed(STATE_MISMATCH, "the redirect_uri's state is not the request's")
    if "iss" in answer and answer["iss"] != provider.issuer:  # RFC 9207: a mix-up
        raise FlowFailed(STATE_MISMATCH, f"the redirect_uri's iss {answer['iss']!r} is not the issuer")
    if not answer.get("code"):
        raise FlowFailed(PROVIDER_ERROR, "no code on the redirect_uri")
    flow.code = answer["code"]


def exchange(rp: FastBrowser, flow: Flow, provider: Provider, client: Client) -> Tokens:
    """RP side: the code and the PKCE verifier for tokens at the token endpoint."""
    form, headers = client.token_request(flow.code, flow.verifier)
    page = rp.request("POST", provider.token_endpoint, form, name=TOKEN, headers=headers)
    if page.status >= 500:
        raise FlowFailed(HTTP_STATUS, f"the token endpoint answered {page.status}")
    answer = read_json(page, "the token endpoint", TOKEN_ERROR)
    if page.status != 200 or "error" in answer:
        description = str(answer.get("error_description", ""))[:120]
        raise FlowFailed(TOKEN_ERROR, f"{answer.get('error', page.status)}" + (f" ({description})" if description
                                                                                   else ""))
    if not isinstance(answer.get("access_token"), str):
        raise FlowFailed(TOKEN_ERROR, "no access_token in the token response")
    id_token = answer.get("id_token")
    if "openid" in client.scope.split() and not isinstance(id_token, str):
        raise FlowFailed(TOKEN_ERROR, "no id_token in the token response to an openid scope")
    refresh = answer.get("refresh_token")
    return Tokens(answer["access_token"], id_token or "", refresh_token=refresh if isinstance(refresh, str) else "")


def userinfo(rp: FastBrowser, provider: Provider, tokens: Tokens) -> None:
    if not provider.userinfo_endpoint:
        raise FlowFailed(DISCOVERY_ERROR, "--userinfo: the discovery document has no userinfo_endpoint")
    page = rp.request("GET", provider.userinfo_endpoint, name=USERINFO,
                      headers=f"Authorization: Bearer {tokens.access_token}\r\n")
    if page.status >= 500:
        raise FlowFailed(HTTP_STATUS, f"userinfo answered {page.status}")
    answer = read_json(page, "userinfo", USERINFO_ERROR)
    if page.status != 200 or not answer.get("sub"):
        raise FlowFailed(USERINFO_ERROR, f"{page.status} {answer.get('error', 'no sub')}")
    if tokens.claims and answer["sub"] != tokens.claims.get("sub"):
        raise FlowFailed(USERINFO_ERROR, "userinfo's sub is not the ID token's")


def run_flow(browser: FastBrowser, rp: FastBrowser, flow: Flow, provider: Provider, client: Client, username: str,
             password: str, fields: tuple[LoginFields, ...], validator: Any = None, with_userinfo: bool = False
             ) -> Tokens:
    """The whole journey: authorize, exchange, then what was asked of the tokens. Raises FlowFailed."""
    try:
        authorize(browser, flow, provider, client, username, password, fields)
        tokens = flow.tokens = exchange(rp, flow, provider, client)
        if validator is not None:
            tokens.claims = validator.validate(rp, tokens.id_token, flow.nonce)
        if with_userinfo:
            userinfo(rp, provider, tokens)
        return tokens
    except TimeoutError as exc:
        raise FlowFailed(TIMEOUT, str(exc) or "timed out") from None
    except OSError as exc:
        raise FlowFailed(CONNECTION_ERROR, str(exc) or type(exc).__name__) from None
    except (TooManyRedirects, UnsupportedURL) as exc:
        raise FlowFailed(HTTP_STATUS, str(exc)) from None
