"""A real relying party's protected URL, walked as a browser: the app does the OpenID Connect, authbench the user.

The app redirects the browser to the provider's authorization endpoint, whose login (and consent) pages are
walked with the shared form walker; the provider sends the browser back to the app's redirect URI, which is
followed this time: the app redeems the code itself (with its own secret) and sends the browser on to the
protected page. Nothing of the provider or the app is known beforehand: the authorization request is told by
its protocol parameters (RFC 6749 4.1.1: `client_id` with `response_type`, or PAR's `request_uri`), the app's
redirect URI by the answer it carries (4.1.2: `state` with `code` or `error`, on a redirect or in a form_post
form). Success is a 2xx page of the app after its redirect URI (and `--expect`'s demands); a failed walk says
why with one of `REASONS`, an app's own refusal as `RP_REFUSED`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

from ...journeys import saml
from ...journeys.fastbrowser import FastBrowser, TooManyRedirects, UnsupportedURL
from ...journeys.forms import Form, LoginFields, Page, find_login_form
from ...journeys.saml import fail, judged, origin, page_url
from ...journeys.success import DEFAULT_RULE, SuccessRule
from .flow import AUTHORIZE, CONSENT, CONSENT_BUTTONS, LOGIN_FORM, LOGIN_POST, PROVIDER_ERROR, _error_code

MAX_PAGES = 8  # login and consent are two pages; more is a loop

RP_REFUSED = "rp refused the code"  # the app's redirect URI answered an error, or a page instead of going on
REASONS = (RP_REFUSED, PROVIDER_ERROR, saml.BAD_CREDENTIALS, saml.NO_LOGIN_FORM, saml.UNEXPECTED_PAGE,
           saml.HTTP_STATUS, saml.TIMEOUT, saml.CONNECTION_ERROR)

# Step names beside the provider's (flow.AUTHORIZE, LOGIN_FORM, LOGIN_POST, CONSENT).
RP_PAGE = "RP protected page"
RP_CALLBACK = "RP redirect URI (code)"
RP_AFTER_LOGIN = "RP protected page (after login)"
PROVIDER_STEPS = frozenset((AUTHORIZE, LOGIN_FORM, LOGIN_POST, CONSENT))  # the browser at the provider
STEP_NAMES = (RP_PAGE, AUTHORIZE, LOGIN_FORM, LOGIN_POST, CONSENT, RP_CALLBACK, RP_AFTER_LOGIN)


@dataclass
class RPOutcome:
    ok: bool = False
    reason: str = ""
    detail: str = ""  # status, title and URL (without query) of the page that ended the walk
    page: Page | None = None  # the page the walk ended on (failure evidence; never written as is)
    password_asked: bool = False
    pages: list[str] = field(default_factory=list)  # titles of the pages walked

    def __str__(self) -> str:
        return "ok" if self.ok else f"{self.reason}: {self.detail}"


def _query(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query)


def is_authorization_request(url: str) -> bool:
    query = _query(url)
    return "client_id" in query and ("response_type" in query or "request_uri" in query)


def _is_answer(names: Iterable[str]) -> bool:
    names = set(names)
    return "state" in names and ("code" in names or "error" in names)


def _where(page: Page) -> str:
    return f"{page.status} {page.title or 'no title'} at {page_url(page.url)}"


class _Walk:
    """What one walk has seen: the provider's origin, the app's redirect URI and its answer."""

    def __init__(self, had_session: bool) -> None:
        self.had_session = had_session
        self.provider = ""  # the authorization endpoint's origin, once the app sent the browser there
        self.callback = ""  # the app's redirect URI (without query), once the provider sent the browser back
        self.error = ""  # the provider's error= on it (an OAuth error code: no secret)
        self.again = False  # the app sent the browser to the provider again after its redirect URI
        self.fields: tuple[LoginFields, ...] = ()

    def name_hop(self, method: str, url: str, page: Page, previous: str) -> str:
        if is_authorization_request(url):
            self.again = self.again or bool(self.callback)
            self.provider = origin(url)
            return AUTHORIZE
        if self.provider and not self.callback and _is_answer(_query(url)):
            self.took_answer(url, _query(url))
            return RP_CALLBACK
        if self.callback:
            return RP_AFTER_LOGIN
        if page.status < 300 and (forms := page.forms()):
            return LOGIN_FORM if find_login_form(forms, self.fields) else CONSENT
        return previous

    def took_answer(self, url: str, answer: dict[str, list[str]]) -> None:
        self.callback = page_url(url)
        self.error = (answer.get("error") or [""])[0][:60]

    def judge(self, page: Page, username: str, rule: SuccessRule) -> tuple[str, str] | None:
        """How the app answered once it had the provider's answer: None when the protected page was reached."""
        if self.error:
            return PROVIDER_ERROR, f"error={self.error} on the app's redirect URI; the app answered {_where(page)}"
        if self.again:
            return RP_REFUSED, f"the app sent the browser back to the provider after its redirect URI: {_where(page)}"
        if page_url(page.url) == self.callback and not 300 <= page.status < 400:
            return RP_REFUSED, f"its redirect URI answered {_where(page)}, not a redirect to the protected page"
        if not rule.status_ok(page.status):
            if 400 <= page.status < 600:
                return RP_REFUSED, f"after its redirect URI: {_where(page)}"
            return saml.UNEXPECTED_PAGE, f"--expect-status {rule.status}: {_where(page)}"
        at_provider = origin(page.url) == self.provider != origin(self.callback)
        if at_provider or find_login_form(page.forms(), self.fields) is not None:
            return RP_REFUSED, f"a login page after its redirect URI: {_where(page)}"
        why = rule.unmet(page.text, username)
        return None if why is None else (saml.UNEXPECTED_PAGE, f"{why}: {_where(page)}")


def _answer_form(forms: list[Form]) -> Form | None:
    """The provider's form_post answer (OAuth 2.0 Form Post Response Mode): posted to the app, as a browser would."""
    return next((form for form in forms if _is_answer(form.fields)), None)


def _consent_button(form: Form) -> str | None:
    return next((name for name in form.buttons if name in CONSENT_BUTTONS), None)


def rp_login(browser: FastBrowser, protected_url: str, username: str, password: str, *,
             fields: tuple[LoginFields, ...], rule: SuccessRule = DEFAULT_RULE) -> RPOutcome:
    """Log in at the app's protected URL: through the provider and the app's redirect URI, to the protected page."""
    walk = _Walk(had_session=bool(browser.cookie_names()))
    walk.fields = fields
    outcome = RPOutcome()
    try:
        page = browser.get(protected_url, name=RP_PAGE, namer=walk.name_hop)
        for _ in range(MAX_PAGES):
            outcome.pages.append(page.title)
            outcome.page = page
            if walk.callback:
                return judged(outcome, walk.judge(page, username, rule))
            if page.status >= 500:
                return fail(outcome, saml.HTTP_STATUS, _where(page))
            if page.status >= 400:
                code = _error_code(page.text) if walk.provider else ""
                return fail(outcome, PROVIDER_ERROR if code else saml.HTTP_STATUS,
                            (f"{code}: " if code else "") + _where(page))
            forms = page.forms()
            login = find_login_form(forms, fields)
            answer = _answer_form(forms) if walk.provider else None
            if answer is not None:
                walk.took_answer(answer.action, {name: [value] for name, value in answer.fields.items()})
                page = browser.submit(answer, None, name=RP_CALLBACK, namer=walk.name_hop)
            elif login is not None:
                if outcome.password_asked:
                    return fail(outcome, saml.BAD_CREDENTIALS, "login form shown again: " + _where(page))
                outcome.password_asked = True
                form, names = login
                button = names.submit if names.submit in form.buttons else None
                page = browser.submit(form, {names.username: username, names.password: password}, button,
                                      name=LOGIN_POST, namer=walk.name_hop)
            elif forms and walk.provider:
                form = next((f for f in forms if _consent_button(f)), forms[0])
                page = browser.submit(form, None, _consent_button(form), name=CONSENT, namer=walk.name_hop)
            elif not walk.provider and walk.had_session and rule.status_ok(page.status):
                return judged(outcome, _unmet(rule, page, username))  # the app still knew the browser
            else:
                code = _error_code(page.text) if walk.provider else ""
                if code:
                    return fail(outcome, PROVIDER_ERROR, f"{code}: {_where(page)}")
                return fail(outcome, saml.NO_LOGIN_FORM, ("" if walk.provider else "no redirect to a provider and ")
                        + "no login form: " + _where(page))
        return fail(outcome, saml.NO_LOGIN_FORM, f"gave up after {MAX_PAGES} pages")
    except TimeoutError as exc:
        return fail(outcome, saml.TIMEOUT, str(exc) or "timed out")
    except OSError as exc:
        return fail(outcome, saml.CONNECTION_ERROR, str(exc) or type(exc).__name__)
    except (TooManyRedirects, UnsupportedURL) as exc:
        if walk.again:
            return fail(outcome, RP_REFUSED, f"the app sent the browser back to the provider after its redirect "
                        f"URI, again and again ({exc})")
        return fail(outcome, saml.HTTP_STATUS, str(exc))


def _unmet(rule: SuccessRule, page: Page, username: str) -> tuple[str, str] | None:
    why = rule.unmet(page.text, username)
    return None if why is None else (saml.UNEXPECTED_PAGE, f"{why}: {_where(page)}")
