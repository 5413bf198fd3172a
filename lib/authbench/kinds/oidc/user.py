"""The OIDC code-flow Locust user: one authorization, login and token exchange per iteration.

With --reuse-session a user keeps its account and its browser's cookies (the provider's: a virtual RP sets none),
so a journey whose authorization request is answered without the password is SSO; each is classified fresh,
reused or lost by journeys.returning, as SAML's are.

Each user has two clients: its browser (cookies; the redirect to the redirect_uri is caught) and the RP's
back channel (token, JWKS, userinfo: no cookies). Discovery and the JWKS are read once per process and kept
in the settings. Failure evidence never holds a secret: the password, the client secret, the code, the PKCE
verifier, state, nonce, tokens and cookie values are replaced in the page kept, and URLs lose their query.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...accounts import Account
from ...journeys.fastbrowser import FastBrowser
from ...journeys.returning import ReturningUser, journey_account
from ...journeys.saml import page_url
from ...journeys.settings import WebSettings
from ...journeys.trail import Trail, redact_page
from ...results.failures import Evidence
from ...user import JourneyOutcome, JourneyUser
from ..preflight import OneJourneyCheck
from . import flow as oidc
from .idtoken import Validator

JSON = "application/json"  # what the RP's back channel asks for (providers negotiate their error bodies)
PROVIDER_STEPS = frozenset((oidc.AUTHORIZE, oidc.LOGIN_FORM, oidc.LOGIN_POST, oidc.CONSENT))  # the browser at the OP


@dataclass
class OIDCSettings(WebSettings):
    """WebSettings' target is the issuer; the RP's registration and what is checked of the tokens."""

    client: oidc.Client = field(default_factory=lambda: oidc.Client("", ""))
    validate_id_token: bool = False
    userinfo: bool = False
    token_exchange: bool = True  # False: the journey ends with the code (--no-token-exchange)
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
               account: Account) -> oidc.Tokens | None:
    """Raises oidc.FlowFailed."""
    try:
        provider = settings.provider(rp)
    except (OSError, ValueError) as exc:  # TimeoutError is an OSError
        raise oidc.FlowFailed(oidc.DISCOVERY_ERROR, f"{type(exc).__name__}: {exc}") from None
    return oidc.run_flow(browser, rp, flow, provider, settings.client, account.username, account.password,
                         settings.fields, settings.validator(provider), settings.userinfo,
                         exchange_code=settings.token_exchange)


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


# A code the provider refused (RFC 6749 5.2 invalid_grant) in a preflight is no secret's fault: it was used once
# only, so the node that redeemed it did not know it.
INVALID_GRANT_FIX = ("the code was unknown where the RP redeemed it: a provider cluster whose nodes do not share "
                     "codes and sessions (unclustered behind a balancer: the RP's token request has no cookie to be "
                     "sticky by) needs clustering, or the code expired (check the provider's clock)")


def likely_fix(failed: oidc.FlowFailed) -> str:
    if failed.reason == oidc.TOKEN_ERROR and failed.detail.startswith("invalid_grant"):
        return INVALID_GRANT_FIX
    return FIXES.get(failed.reason, "check --target and the provider logs")


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
                   f"likely fix: {likely_fix(failed)}")
    finally:
        browser.close_connections()
        rp.close_connections()
    return OneJourneyCheck(settings.target, failure)


class OIDCUser(JourneyUser):
    journey_name = "OIDC code flow"
    request_type = "OIDC"

    make_browsers = staticmethod(browsers)  # the browser and the RP's client; a grant's RP catches more redirects

    def on_start(self) -> None:
        super().on_start()
        settings: OIDCSettings = self.run_context.settings
        self.trail = Trail()
        self.browser, self.rp = self.make_browsers(settings, self._report)
        self.returning = ReturningUser(idp_steps=PROVIDER_STEPS)
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
        returning = self.returning if settings.reuse_session else None
        account = journey_account(returning, self.browser, settings.accounts, None)  # a virtual RP keeps no cookies
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
        if returning is not None:  # fresh, reused (no password asked: SSO) or lost, as for SAML
            result.session = returning.after(self.trail.hops, result.ok, flow.password_asked)
        if settings.new_connection:
            self.browser.close_connections()
            self.rp.close_connections()
        return result
