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
from typing import Protocol, TypeVar

from .fastbrowser import TooManyRedirects, UnsupportedURL
from .forms import PRESETS, Form, LoginFields, Page, find_login_form
from .success import DEFAULT_RULE, SuccessRule

MAX_PAGES = 12  # a full Shibboleth v5 login with consent is 6 pages; anything longer is a loop
PROCEED_BUTTON = "_eventId_proceed"  # Shibboleth's "go on" event, on storage and consent pages
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
UNEXPECTED_PAGE = "page not as expected"  # logged in by the walk's rule, but --expect/--expect-status not met
TIMEOUT = "timeout"
CONNECTION_ERROR = "connection error"
REASONS = (HTTP_STATUS, NO_LOGIN_FORM, BAD_CREDENTIALS, STALE_REQUEST, SAML_STATUS_NOT_SUCCESS, SP_REFUSED,
           UNEXPECTED_PAGE, TIMEOUT, CONNECTION_ERROR)

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
_RESPONSE, _LOGIN, _CONSENT, _READ, _WRITE, _OTHER = (
    "response", "login", "consent", "storage read", "storage write", "other")
_NAME_OF_KIND = {_RESPONSE: IDP_RESPONSE, _LOGIN: LOGIN_FORM, _CONSENT: CONSENT, _READ: STORAGE_READ,
                 _WRITE: STORAGE_WRITE}
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


class Verdict(Protocol):
    """What a walk ends with: SSOOutcome here, RPOutcome for a real RP's walk."""

    ok: bool
    reason: str
    detail: str


Judged = TypeVar("Judged", bound=Verdict)


@dataclass
class SSOOutcome:
    ok: bool
    reason: str = OK
    detail: str = ""  # the status, title and URL (without query) of the page that ended the walk
    page: Page | None = None  # the page the walk ended on (for failure evidence; never written as is)
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


def page_url(url: str) -> str:
    """A URL as results may show it: no query, no fragment, no `;jsessionid=`-style path parameters."""
    for mark in ("?", "#", ";"):
        cut = url.find(mark)
        if cut >= 0:
            url = url[:cut]
    return url


def origin(url: str) -> str:
    """scheme://host[:port] of an absolute URL."""
    return "/".join(url.split("/", 3)[:3])


def _where(page: Page) -> str:
    return f"{page.status} {page.title or 'no title'} at {page_url(page.url)}"


def _is_stale(page: Page) -> bool:
    return any(marker in page.text for marker in STALE_MARKERS)


class _Walk:
    """One walk's settings and what it has seen: the page classification, the IdP's and the SP's origins.

    No SP marker decides success: after the SAMLResponse is posted, the SP's answer is judged by `after_response`.
    """

    def __init__(self, username: str, candidates: tuple[LoginFields, ...], rule: SuccessRule, start_url: str,
                 had_session: bool) -> None:
        self.username, self.candidates, self.rule = username, candidates, rule
        self.had_session = had_session
        at_idp = "SAMLRequest=" in start_url  # the virtual SP starts at the IdP
        self.idp_origins: set[str] = {origin(start_url)} if at_idp else set()
        self.sp_origins: set[str] = set() if at_idp else {origin(start_url)}
        self.posted_response = False

    def classify(self, page: Page) -> tuple[str, Form | None, LoginFields | None]:
        if page.kind is not None:
            return page.kind  # type: ignore[return-value]
        kind: tuple[str, Form | None, LoginFields | None] = (_OTHER, None, None)
        if page.status < 300 and (forms := page.forms()):
            kind = _classify_forms(forms, self.candidates)
            if kind[0] != _OTHER:
                self.idp_origins.add(origin(page.url))
        page.kind = kind
        return kind

    def name_hop(self, method: str, url: str, page: Page, previous: str) -> str:
        """A redirect hop's step name: by its AuthnRequest, else by the page it brought."""
        if "SAMLRequest=" in url:
            self.idp_origins.add(origin(url))
            return IDP_SSO
        if page.status >= 300:
            return previous
        kind = self.classify(page)[0]
        if kind == _OTHER and self.posted_response:
            return SP_AFTER_LOGIN
        return _NAME_OF_KIND.get(kind, previous)

    def after_response(self, page: Page) -> tuple[str, str] | None:
        """How the SP answered the posted SAMLResponse: None when logged in, else (reason, detail)."""
        if not self.rule.status_ok(page.status):
            if _is_stale(page):
                return STALE_REQUEST, _where(page)
            if 400 <= page.status < 500:
                return SP_REFUSED, _where(page)
            if page.status >= 500 or self.rule.status is None:
                return HTTP_STATUS, _where(page)
            return UNEXPECTED_PAGE, f"--expect-status {self.rule.status}: {_where(page)}"
        kind = self.classify(page)[0]
        if kind == _LOGIN:
            return SP_REFUSED, "the login form again after the SAML response: " + _where(page)
        if kind != _OTHER or origin(page.url) in self.idp_origins - self.sp_origins:
            return SP_REFUSED, "an IdP page after the SAML response: " + _where(page)
        return self.unmet(page)

    def returning(self, page: Page) -> bool:
        """A browser that came with a session, shown the SP's page without any IdP: still logged in."""
        return self.had_session and not self.idp_origins and self.rule.status_ok(page.status)

    def unmet(self, page: Page) -> tuple[str, str] | None:
        why = self.rule.unmet(page.text, self.username)
        return None if why is None else (UNEXPECTED_PAGE, f"{why}: {_where(page)}")


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
              rule: SuccessRule = DEFAULT_RULE,
              start_step: str = SP_PAGE) -> SSOOutcome:
    """Log in at the SP's protected URL: through the IdP, until the SP shows a page after the SAML response.

    `fields`: the login form's field names, or candidates to try in order (default: the presets).
    `before_credentials(client)` runs just before the password is posted (Test 3 reroutes there).
    `edit_response(fields)` returns values to post instead of the IdP's (tests tamper with them).
    `stop_at_response`: end at the auto-submit form instead of posting it (`outcome.response_form`).
    `rule`: what else the final page must show (`--expect`); `outcome.page` is the page the walk ended on.
    """
    candidates = (fields,) if isinstance(fields, LoginFields) else tuple(fields)
    walk = _Walk(username, candidates, rule, protected_url, had_session=bool(client.cookie_names()))
    namer = walk.name_hop
    outcome = SSOOutcome(ok=False)
    try:
        page = client.get(protected_url, name=start_step, namer=namer)
        for _ in range(MAX_PAGES):
            outcome.pages.append(page.title)
            outcome.page = page
            if walk.posted_response:
                return judged(outcome, walk.after_response(page))
            if page.status >= 400:
                return fail(outcome, STALE_REQUEST if _is_stale(page) else HTTP_STATUS, _where(page))
            kind, form, login = walk.classify(page)
            if kind == _RESPONSE:
                assert form is not None
                status = saml_status(form.fields["SAMLResponse"])
                if status is not None and status != SAML_SUCCESS:
                    return fail(outcome, SAML_STATUS_NOT_SUCCESS, f"{status} from {_where(page)}")
                if stop_at_response:
                    outcome.ok, outcome.response_form = True, form
                    return outcome
                values = edit_response(dict(form.fields)) if edit_response else None
                walk.posted_response = True
                walk.sp_origins.add(origin(form.action))
                page = client.submit(form, values, name=ACS, namer=namer)
            elif kind == _LOGIN:
                assert form is not None and login is not None
                if outcome.password_asked:
                    return fail(outcome, BAD_CREDENTIALS, "login form shown again: " + _where(page))
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
                return fail(outcome, STALE_REQUEST, _where(page))
            elif walk.returning(page):
                return judged(outcome, walk.unmet(page))
            else:
                return fail(outcome, NO_LOGIN_FORM, ("no redirect to an IdP and " if not walk.idp_origins else "")
                            + "no login form: " + _where(page))
        return fail(outcome, NO_LOGIN_FORM, f"gave up after {MAX_PAGES} pages")
    except TimeoutError as exc:
        return fail(outcome, TIMEOUT, str(exc) or "timed out")
    except OSError as exc:
        return fail(outcome, CONNECTION_ERROR, str(exc) or type(exc).__name__)
    except (TooManyRedirects, UnsupportedURL) as exc:
        return fail(outcome, HTTP_STATUS, str(exc))


def judged(outcome: Judged, failure: tuple[str, str] | None) -> Judged:
    """The outcome ok, or failed for (reason, detail); an RP's walk (kinds/oidc/rp_walk.py) judges the same way."""
    if failure is None:
        outcome.ok = True
        return outcome
    return fail(outcome, *failure)


def fail(outcome: Judged, reason: str, detail: str) -> Judged:
    outcome.ok, outcome.reason, outcome.detail = False, reason, detail
    return outcome
