"""SP-initiated SAML 2.0 Web Browser SSO, walked page by page as a browser without JavaScript.

Pages are recognised by what they contain, not by URL, so the same walk works through any IdP
that speaks the HTTP-Redirect/HTTP-POST bindings: the auto-submit form (SAMLResponse), a login form
(a password field), Shibboleth's client-storage pages (shib_idp_ls_* fields), its Stale Request page.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import requests

from .browser import Browser, Page, TooManyRedirects

MAX_PAGES = 12  # a full Shibboleth v5 login is 4 pages; anything longer is a loop
USERNAME_FIELD = "j_username"
PASSWORD_FIELD = "j_password"
PROCEED_BUTTON = "_eventId_proceed"
LOGGED_IN_MARKER = 'id="remote-user"'

# Failure reasons, stable strings for statistics and results.
OK = ""
HTTP_STATUS = "http status"
NO_LOGIN_FORM = "no login form found"
BAD_CREDENTIALS = "bad credentials"
STALE_REQUEST = "stale request"
SP_REFUSED = "sp refused the response"
TIMEOUT = "timeout"
CONNECTION_ERROR = "connection error"


@dataclass
class SSOOutcome:
    ok: bool
    reason: str = OK
    detail: str = ""
    password_asked: bool = False
    pages: list[str] = field(default_factory=list)  # titles of the pages walked

    def __str__(self) -> str:
        return "ok" if self.ok else f"{self.reason}: {self.detail}"


def _is_storage_form(names: set[str]) -> bool:
    return any(name.startswith("shib_idp_ls_") for name in names)


def _failed(page: Page, outcome: SSOOutcome) -> SSOOutcome | None:
    title = page.title
    if "Stale Request" in title:
        outcome.reason, outcome.detail = STALE_REQUEST, f"{page.status} {title} at {page.url}"
        return outcome
    if page.status == 403 and "Login refused" in title:
        outcome.reason, outcome.detail = SP_REFUSED, page.text
        return outcome
    if page.status >= 400:
        outcome.reason, outcome.detail = HTTP_STATUS, f"{page.status} {title or 'no title'} at {page.url}"
        return outcome
    return None


def sso_login(browser: Browser, protected_url: str, username: str, password: str,
              before_credentials: Callable[[Browser], None] | None = None) -> SSOOutcome:
    """Log in at the SP's protected URL; `before_credentials` may reroute the browser (Test 3)."""
    outcome = SSOOutcome(ok=False)
    try:
        page = browser.get(protected_url)
        for _ in range(MAX_PAGES):
            outcome.pages.append(page.title)
            if _failed(page, outcome):
                return outcome
            if LOGGED_IN_MARKER in page.text:
                outcome.ok = True
                return outcome
            forms = page.forms()
            form = next((f for f in forms if "SAMLResponse" in f.fields), None)
            if form is not None:
                page = browser.submit(form)
                continue
            form = next((f for f in forms if PASSWORD_FIELD in f.password_fields), None)
            if form is not None:
                if outcome.password_asked:
                    outcome.reason, outcome.detail = BAD_CREDENTIALS, f"login form shown again at {page.url}"
                    return outcome
                outcome.password_asked = True
                if before_credentials:
                    before_credentials(browser)
                page = browser.submit(form, {USERNAME_FIELD: username, PASSWORD_FIELD: password},
                                      button=PROCEED_BUTTON if PROCEED_BUTTON in form.buttons else None)
                continue
            form = next((f for f in forms if _is_storage_form(f.names())), None)
            if form is not None:
                page = browser.submit(form)  # no localStorage: post the fields as they are
                continue
            outcome.reason, outcome.detail = NO_LOGIN_FORM, f"{page.status} {page.title!r} at {page.url}"
            return outcome
        outcome.reason, outcome.detail = NO_LOGIN_FORM, f"gave up after {MAX_PAGES} pages"
    except requests.Timeout as exc:
        outcome.reason, outcome.detail = TIMEOUT, str(exc)
    except (requests.ConnectionError, TooManyRedirects) as exc:
        outcome.reason, outcome.detail = CONNECTION_ERROR, str(exc)
    return outcome
