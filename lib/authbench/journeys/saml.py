"""SP-initiated SAML 2.0 Web Browser SSO, walked page by page as a browser without JavaScript.

Pages are recognised by what they contain, not by URL, so the same walk works through any IdP that
speaks the HTTP-Redirect/HTTP-POST bindings: the auto-submit form (SAMLResponse), a login form (see
`LoginFields`), Shibboleth's client-storage and consent pages, the Stale Request page.

The walk runs over any client with `get`/`submit` returning `Page`s (the `SSOClient` protocol):
the fast `FastBrowser` for load, the requests-based `Browser` for comparison. Every request is a
named step (`STEP_NAMES`, never a query string); a failed walk says why with one of `REASONS`.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from .fastbrowser import TooManyRedirects, UnsupportedURL
from .forms import PRESETS, Form, LoginFields, Page, find_login_form

MAX_PAGES = 12  # a full Shibboleth v5 login with consent is 6 pages; anything longer is a loop
PROCEED_BUTTON = "_eventId_proceed"  # Shibboleth's "go on" event, on storage and consent pages
LOGGED_IN_MARKER = 'id="remote-user"'  # how the lab SP (and the fixtures' SPs) show the user
STALE_MARKERS = ("Stale Request", "State information lost", "Page has expired")  # Shibboleth, SSP, Keycloak
SAML_SUCCESS = "urn:oasis:names:tc:SAML:2.0:status:Success"

# Failure reasons: stable strings for statistics and results.
OK = ""
HTTP_STATUS = "http status"
NO_LOGIN_FORM = "no login form found"
BAD_CREDENTIALS = "bad credentials"
STALE_REQUEST = "stale request"
SAML_STATUS_NOT_SUCCESS = "saml status not success"
SP_REFUSED = "sp refused the response"
TIMEOUT = "timeout"
CONNECTION_ERROR = "connection error"
REASONS = (HTTP_STATUS, NO_LOGIN_FORM, BAD_CREDENTIALS, STALE_REQUEST, SAML_STATUS_NOT_SUCCESS, SP_REFUSED, TIMEOUT,
           CONNECTION_ERROR)

# Step names, one per role a request plays (GET and POST of a page share its name).
SP_PAGE = "SP protected page"
IDP_SSO = "IdP SSO (AuthnRequest)"
STORAGE_READ = "IdP client storage read"
STORAGE_WRITE = "IdP client storage write"
LOGIN_FORM = "IdP login form"
LOGIN_POST = "IdP login POST"
CONSENT = "IdP consent"
IDP_RESPONSE = "IdP SSO (response)"  # a page carrying only the SAML Response, reached by a redirect
ACS = "SP ACS (SAMLResponse)"
SP_AFTER_LOGIN = "SP protected page (after login)"
STEP_NAMES = (SP_PAGE, IDP_SSO, STORAGE_READ, STORAGE_WRITE, LOGIN_FORM, LOGIN_POST, CONSENT, IDP_RESPONSE, ACS,
              SP_AFTER_LOGIN)

# What a page is to the walk.
_RESPONSE, _LOGIN, _CONSENT, _READ, _WRITE, _LOGGED_IN, _OTHER = (
    "response", "login", "consent", "storage read", "storage write", "logged in", "other")
_NAME_OF_KIND = {_RESPONSE: IDP_RESPONSE, _LOGIN: LOGIN_FORM, _CONSENT: CONSENT, _READ: STORAGE_READ,
                 _WRITE: STORAGE_WRITE, _LOGGED_IN: SP_AFTER_LOGIN}
_STATUS_CODE = re.compile(rb"StatusCode\b[^>]*?\bValue\s*=\s*[\"']([^\"']+)[\"']")  # closed: not cut short
STATUS_PREFIX = 4096  # base64 characters (3 KB of XML) searched for the Status before the whole Response


class SSOClient(Protocol):
    """A browser the walk (and the cluster checks) can drive: FastBrowser and Browser both are one.

    `name` names a request's first hop, `namer(method, url, page, previous)` the redirects after it.
    """

    route: Callable[[str], str] | None

    def get(self, url: str, *, name: str | None = None, namer: Callable | None = None) -> Page: ...

    def submit(self, form: Form, values: dict[str, str] | None = None, button: str | None = None, *,
               name: str | None = None, namer: Callable | None = None) -> Page: ...

    def clear_cookies(self) -> None: ...

    def forget_cookies(self, where: Callable[[str, str, str], bool]) -> None: ...

    def cookie_names(self) -> list[str]: ...

    def close_connections(self) -> None: ...


@dataclass
class SSOOutcome:
    ok: bool
    reason: str = OK
    detail: str = ""  # the status, title and URL (without query) of the page that ended the walk
    password_asked: bool = False
    pages: list[str] = field(default_factory=list)  # titles of the pages walked
    response_form: Form | None = None  # the auto-submit form, when the walk stopped before posting it

    def __str__(self) -> str:
        return "ok" if self.ok else f"{self.reason}: {self.detail}"


def saml_status(saml_response: str) -> str | None:
    """The top-level StatusCode of a base64 SAML Response (the first in the document), None if unreadable.

    The Status comes early (after the Issuer and a Response's Signature), so the first STATUS_PREFIX
    characters are decoded first: a load generator need not decode kilobytes of assertion per login.
    """
    attempts = (saml_response[:STATUS_PREFIX], saml_response) if len(saml_response) > STATUS_PREFIX \
        else (saml_response,)
    for text in attempts:
        try:
            xml = base64.b64decode(text)
        except (binascii.Error, ValueError):
            continue  # a prefix cut inside line-wrapped base64: the whole text next
        match = _STATUS_CODE.search(xml)
        if match:
            return match.group(1).decode("ascii", "replace")
    return None


def _where(page: Page) -> str:
    cut = page.url.find("?")
    return f"{page.status} {page.title or 'no title'} at {page.url if cut < 0 else page.url[:cut]}"


def _is_stale(page: Page) -> bool:
    return any(marker in page.text for marker in STALE_MARKERS)


def shows_user(page: Page, username: str) -> bool:
    """The lab SP's protected page: the remote-user element, with the user's name in it."""
    return LOGGED_IN_MARKER in page.text and username in page.text


class _Walk:
    """One walk's settings, and the page classification its decisions and step names share."""

    def __init__(self, username: str, candidates: tuple[LoginFields, ...],
                 logged_in: Callable[[Page, str], bool]) -> None:
        self.username, self.candidates, self.logged_in = username, candidates, logged_in

    def classify(self, page: Page) -> tuple[str, Form | None, LoginFields | None]:
        if page.kind is not None:
            return page.kind  # type: ignore[return-value]
        kind: tuple[str, Form | None, LoginFields | None] = (_OTHER, None, None)
        if page.status < 300 and self.logged_in(page, self.username):
            kind = (_LOGGED_IN, None, None)
        elif page.status < 300 and (forms := page.forms()):
            kind = _classify_forms(forms, self.candidates)
        page.kind = kind
        return kind

    def name_hop(self, method: str, url: str, page: Page, previous: str) -> str:
        """A redirect hop's step name: by its AuthnRequest, else by the page it brought."""
        if "SAMLRequest=" in url:
            return IDP_SSO
        if page.status >= 300:
            return previous
        return _NAME_OF_KIND.get(self.classify(page)[0], previous)


def _classify_forms(forms: list[Form], candidates: tuple[LoginFields, ...]
                    ) -> tuple[str, Form | None, LoginFields | None]:
    for form in forms:
        if "SAMLResponse" in form.fields:
            return _RESPONSE, form, None
    login = find_login_form(forms, candidates)
    if login is not None:
        return _LOGIN, login[0], login[1]
    for form in forms:
        names = form.names()
        if any(name.startswith("_shib_idp_consent") for name in names):
            return _CONSENT, form, None
        if any(name.startswith("shib_idp_ls_") for name in names):
            # The read page asks for stored values (and whether storage works); the write page only reports.
            reads = "shib_idp_ls_supported" in names or any(n.startswith("shib_idp_ls_value.") for n in names)
            return (_READ if reads else _WRITE), form, None
    return _OTHER, None, None


def sso_login(client: SSOClient, protected_url: str, username: str, password: str, *,
              fields: LoginFields | Iterable[LoginFields] = PRESETS,
              before_credentials: Callable[[SSOClient], None] | None = None,
              edit_response: Callable[[dict[str, str]], dict[str, str]] | None = None,
              stop_at_response: bool = False,
              logged_in: Callable[[Page, str], bool] = shows_user,
              start_step: str = SP_PAGE) -> SSOOutcome:
    """Log in at the SP's protected URL, as far as a page that shows the user.

    `fields`: the login form's field names, or candidates to try in order (default: the presets).
    `before_credentials(client)` runs just before the password is posted (Test 3 reroutes there).
    `edit_response(fields)` returns values to post instead of the IdP's (tests tamper with them).
    `stop_at_response`: end at the auto-submit form instead of posting it (`outcome.response_form`).
    """
    candidates = (fields,) if isinstance(fields, LoginFields) else tuple(fields)
    walk = _Walk(username, candidates, logged_in)
    namer = walk.name_hop
    outcome = SSOOutcome(ok=False)
    posted_response = False
    try:
        page = client.get(protected_url, name=start_step, namer=namer)
        for _ in range(MAX_PAGES):
            outcome.pages.append(page.title)
            if page.status >= 400:
                if _is_stale(page):
                    return _fail(outcome, STALE_REQUEST, _where(page))
                refused = posted_response and page.status < 500
                return _fail(outcome, SP_REFUSED if refused else HTTP_STATUS, _where(page))
            kind, form, login = walk.classify(page)
            if kind == _LOGGED_IN:
                outcome.ok = True
                return outcome
            if posted_response:
                return _fail(outcome, SP_REFUSED, "no user shown after the SAML response: " + _where(page))
            if kind == _RESPONSE:
                assert form is not None
                status = saml_status(form.fields["SAMLResponse"])
                if status is not None and status != SAML_SUCCESS:
                    return _fail(outcome, SAML_STATUS_NOT_SUCCESS, f"{status} from {_where(page)}")
                if stop_at_response:
                    outcome.ok, outcome.response_form = True, form
                    return outcome
                values = edit_response(dict(form.fields)) if edit_response else None
                page = client.submit(form, values, name=ACS, namer=namer)
                posted_response = True
            elif kind == _LOGIN:
                assert form is not None and login is not None
                if outcome.password_asked:
                    return _fail(outcome, BAD_CREDENTIALS, "login form shown again: " + _where(page))
                outcome.password_asked = True
                if before_credentials:
                    before_credentials(client)
                button = login.submit if login.submit in form.buttons else None
                page = client.submit(form, {login.username: username, login.password: password}, button,
                                     name=LOGIN_POST, namer=namer)
            elif kind in (_READ, _WRITE, _CONSENT):
                assert form is not None
                # No localStorage, no JavaScript: post the fields as the server wrote them.
                button = PROCEED_BUTTON if PROCEED_BUTTON in form.buttons and PROCEED_BUTTON not in form.fields \
                    else None
                page = client.submit(form, None, button, name=_NAME_OF_KIND[kind], namer=namer)
            elif _is_stale(page):
                return _fail(outcome, STALE_REQUEST, _where(page))
            else:
                return _fail(outcome, NO_LOGIN_FORM, _where(page))
        return _fail(outcome, NO_LOGIN_FORM, f"gave up after {MAX_PAGES} pages")
    except TimeoutError as exc:
        return _fail(outcome, TIMEOUT, str(exc) or "timed out")
    except OSError as exc:
        return _fail(outcome, CONNECTION_ERROR, str(exc) or type(exc).__name__)
    except (TooManyRedirects, UnsupportedURL) as exc:
        return _fail(outcome, HTTP_STATUS, str(exc))


def _fail(outcome: SSOOutcome, reason: str, detail: str) -> SSOOutcome:
    outcome.ok, outcome.reason, outcome.detail = False, reason, detail
    return outcome
