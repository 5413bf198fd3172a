"""The Locust user that walks one web login in a browser of its own: SAML's SP-initiated SSO (kinds/saml) and a real
RP's OpenID Connect login (kinds/oidc/real_rp) are this one loop with another walk.

Each journey's hops go to a trail (failure evidence; which steps were the provider's), the statistics get each URL
without its query (no SAMLRequest, code or state there). With --reuse-session a returning user keeps its account and
the provider's cookies and drops the app's before each journey, and the journey is classified fresh, reused or lost.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from ..accounts import Account
from ..results.failures import Evidence
from ..user import JourneyOutcome, JourneyUser
from .fastbrowser import FastBrowser
from .returning import IDP_STEPS, ReturningUser, journey_account
from .saml import page_url
from .settings import WebSettings
from .trail import Trail, redact_page


class WalkOutcome(Protocol):
    """What a walk ends with (saml.SSOOutcome, rp_walk.RPOutcome): its verdict, and the pages it saw."""

    ok: bool
    reason: str
    detail: str
    password_asked: bool
    page: Any
    pages: Any


def page_evidence(outcome: WalkOutcome, trail: Trail, browser: FastBrowser, account: Account,
                  hidden: Iterable[str] = ()) -> Evidence:
    """What to keep of a failed walk: its trail and last page, without the password, `hidden` or a cookie value."""
    page = outcome.page
    html = redact_page(page.text, [account.password, *hidden], [cookie.value for _host, cookie in browser.cookies]) \
        if page is not None else ""
    return Evidence(outcome.reason, outcome.detail, account.username, trail.lines(outcome.pages), html,
                    page_url(page.url) if page is not None else "")


class WebLoginUser(JourneyUser):
    """One whole login per journey; a kind gives `walk` (and, where its pages hold more secrets, `evidence`)."""

    abstract = True
    provider_steps: frozenset[str] = IDP_STEPS  # the walk's steps that are the IdP's or OpenID Provider's

    def on_start(self) -> None:
        super().on_start()
        settings: WebSettings = self.run_context.settings
        self.trail = Trail()
        self.browser = FastBrowser(verify=settings.verify, timeout=settings.timeout, on_request=self._report)
        self.returning = ReturningUser(idp_steps=self.provider_steps)

    def on_stop(self) -> None:
        self.browser.close_connections()

    def _report(self, name: str, method: str, url: str, status: int, elapsed_ms: float, length: int,
                exception: BaseException | None) -> None:
        self.trail.hops.append((name, method, url, status, exception))
        self.report_request(name, method, page_url(url), status, elapsed_ms, length, exception)

    def app_url(self, settings: Any) -> str | None:
        """The app whose cookies a returning user drops before each journey (None: a virtual SP, which sets none)."""
        return settings.target

    def walk(self, settings: Any, account: Account) -> WalkOutcome:  # pragma: no cover - subclasses implement it
        raise NotImplementedError

    def evidence(self, outcome: WalkOutcome, account: Account) -> Evidence:
        return page_evidence(outcome, self.trail, self.browser, account)

    def journey(self) -> JourneyOutcome:
        settings = self.run_context.settings
        returning = self.returning if settings.reuse_session else None
        account = journey_account(returning, self.browser, settings.accounts, self.app_url(settings))
        self.trail.clear()
        outcome = self.walk(settings, account)
        result = JourneyOutcome(outcome.ok, outcome.reason, outcome.detail, account.username)
        if returning is not None:
            result.session = returning.after(self.trail.hops, outcome.ok, outcome.password_asked)
        if not outcome.ok:
            result.step = self.trail.last_step
            if self.run_context.failures.wants(outcome.reason):
                result.evidence = self.evidence(outcome, account)
        if settings.new_connection:
            self.browser.close_connections()
        return result
