"""The OIDC code-flow Locust user: one authorization, login and token exchange per iteration.

Each user has two clients: its browser (cookies; the redirect to the redirect_uri is caught) and the RP's
back channel (token, JWKS, userinfo: no cookies). Discovery and the JWKS are read once per process and kept
in the settings. Failure evidence never holds a secret: the password, the client secret, the code, the PKCE
verifier, state, nonce, tokens and cookie values are replaced in the page kept, and URLs lose their query.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...accounts import Account
from ...journeys.fastbrowser import FastBrowser
from ...journeys.saml import page_url
from ...journeys.settings import WebSettings
from ...journeys.trail import Trail, redact_page
from ...results.failures import Evidence
from ...user import JourneyOutcome, JourneyUser
from ..preflight import OneJourneyCheck
from . import flow as oidc
from .idtoken import Validator

JSON = "application/json"  # what the RP's back channel asks for (providers negotiate their error bodies)


@dataclass
class OIDCSettings(WebSettings):
    """WebSettings' target is the issuer; the RP's registration and what is checked of the tokens."""

    client: oidc.Client = field(default_factory=lambda: oidc.Client("", ""))
    validate_id_token: bool = False
    userinfo: bool = False
    _provider: oidc.Provider | None = field(default=None, repr=False)  # discovery, once per process
    _validator: Validator | None = field(default=None, repr=False)

    def provider(self, rp: FastBrowser) -> oidc.Provider:
        if self._provider is None:
            self._provider = oidc.discover(rp, self.target)
        return self._provider

    def validator(self, provider: oidc.Provider) -> Validator | None:
        if not self.validate_id_token:
            return None
        if self._validator is None:
            self._validator = Validator(provider, self.client.client_id)
        return self._validator


def login_once(settings: OIDCSettings, browser: FastBrowser, rp: FastBrowser, flow: oidc.Flow,
               account: Account) -> oidc.Tokens:
    """Raises oidc.FlowFailed."""
    try:
        provider = settings.provider(rp)
    except (OSError, ValueError) as exc:  # TimeoutError is an OSError
        raise oidc.FlowFailed(oidc.DISCOVERY_ERROR, f"{type(exc).__name__}: {exc}") from None
    return oidc.run_flow(browser, rp, flow, provider, settings.client, account.username, account.password,
                         settings.fields, settings.validator(provider), settings.userinfo)


def warm(settings: OIDCSettings) -> None:
    """Discovery and the JWKS before this process's first journey is timed (a worker has not run the preflight),
    outside the statistics; a failure here is left for the journeys to report with its reason."""
    if settings._provider is not None and (not settings.validate_id_token or settings._validator is not None):
        return
    with FastBrowser(verify=settings.verify, timeout=settings.timeout, accept=JSON) as rp:
        try:
            validator = settings.validator(settings.provider(rp))
            if validator is not None and validator.keys is None:
                validator.keys = validator.fetch(rp)
        except (oidc.FlowFailed, OSError, ValueError):
            pass


def browsers(settings: OIDCSettings, on_request) -> tuple[FastBrowser, FastBrowser]:
    """The user's browser (the redirect to the RP caught) and the RP's back channel."""
    return (FastBrowser(verify=settings.verify, timeout=settings.timeout, on_request=on_request,
                        catch=settings.client.caught),
            FastBrowser(verify=settings.verify, timeout=settings.timeout, on_request=on_request, accept=JSON))


def evidence(failure: oidc.FlowFailed, trail: Trail, browser: FastBrowser, flow: oidc.Flow, settings: OIDCSettings,
             account: Account) -> Evidence:
    """What to keep of a failed journey: its trail and last page, every secret of the flow taken out."""
    page = failure.page
    html = ""
    if page is not None:
        hidden = [account.password, settings.client.secret, *flow.secrets()]
        html = redact_page(page.text, hidden, [cookie.value for _host, cookie in browser.cookies])
    return Evidence(failure.reason, failure.detail, account.username, trail.lines(flow.pages), html,
                    page_url(page.url) if page is not None else "")


FIXES = {
    oidc.DISCOVERY_ERROR: "--target must be oidc+https://ISSUER, the issuer whose /.well-known/openid-configuration "
                          "names the endpoints (a real RP's protected URL: add --rp target)",
    oidc.PROVIDER_ERROR: "register the RP at the provider: --client-id, and --redirect-uri exactly as registered",
    oidc.STATE_MISMATCH: "the provider answered another request: check the balancer and the provider's logs",
    oidc.TOKEN_ERROR: "check the client secret ($AUTHBENCH_CLIENT_SECRET or --client-secret-file) and --client-auth "
                      "against the provider's registration",
    oidc.ID_TOKEN_INVALID: "check the provider's clock, keys and issuer; or drop --validate-id-token",
    oidc.USERINFO_ERROR: "check the scope the RP is granted (--scope), or drop --userinfo",
    oidc.BAD_CREDENTIALS: "check the account's password (--accounts-csv, --password-rule, $AUTHBENCH_PASSWORD)",
    oidc.NO_LOGIN_FORM: "name the provider's login form: --login-form, or --username-field and --password-field",
    oidc.HTTP_STATUS: "the provider failed: check its logs",
    oidc.CONNECTION_ERROR: "check --target's host and port, and that the provider is up",
    oidc.TIMEOUT: "check --target's port, or allow slower answers with --timeout",
}


def preflight(settings: OIDCSettings) -> OneJourneyCheck:
    """One whole journey with the first account before any load: ok, or one line with the step and a fix."""
    account = settings.accounts.pick()
    trail = Trail()
    flow = oidc.Flow()
    browser, rp = browsers(settings, trail.record)
    try:
        login_once(settings, browser, rp, flow, account)
        failure = None
    except oidc.FlowFailed as failed:
        step = trail.last_step or oidc.DISCOVERY
        failure = (f"login as {account.username} failed at step {step!r}: {failed.reason}: {failed.detail}; "
                   f"likely fix: {FIXES.get(failed.reason, 'check --target and the provider logs')}")
    finally:
        browser.close_connections()
        rp.close_connections()
    return OneJourneyCheck(settings.target, failure)


class OIDCUser(JourneyUser):
    journey_name = "OIDC code flow"
    request_type = "OIDC"

    def on_start(self) -> None:
        super().on_start()
        settings: OIDCSettings = self.run_context.settings
        self.trail = Trail()
        self.browser, self.rp = browsers(settings, self._report)
        warm(settings)

    def on_stop(self) -> None:
        self.browser.close_connections()
        self.rp.close_connections()

    def _report(self, name: str, method: str, url: str, status: int, elapsed_ms: float, length: int,
                exception: BaseException | None) -> None:
        url = page_url(url)  # no code, state or token in a query reaches the statistics
        self.trail.hops.append((name, method, url, status, exception))
        self.report_request(name, method, url, status, elapsed_ms, length, exception)

    def journey(self) -> JourneyOutcome:
        settings: OIDCSettings = self.run_context.settings
        self.browser.clear_cookies()  # every journey a full authentication
        account = settings.accounts.pick()
        self.trail.clear()
        flow = oidc.Flow()
        try:
            login_once(settings, self.browser, self.rp, flow, account)
            result = JourneyOutcome(True, account=account.username)
        except oidc.FlowFailed as failure:
            result = JourneyOutcome(False, failure.reason, failure.detail, account.username,
                                    step=self.trail.last_step or oidc.DISCOVERY)
            if self.run_context.failures.wants(failure.reason):
                result.evidence = evidence(failure, self.trail, self.browser, flow, settings, account)
        if settings.new_connection:
            self.browser.close_connections()
            self.rp.close_connections()
        return result
