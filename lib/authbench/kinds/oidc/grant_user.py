"""The Locust user of `--grant refresh|client-credentials|introspection|logout` (grants.py), and its preflight.

A refresh or introspection user logs in once with the code flow (in its first journey, which that login makes
longer: give a --warmup so measured journeys are the grant's alone), keeps its tokens and uses them every
journey; a failed refresh or an inactive token drops them, so the next journey logs in again, as an RP would.
A client-credentials user has no account and no browser. A logout user logs in and out every journey.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...accounts import Account
from ...journeys.fastbrowser import FastBrowser, TooManyRedirects, UnsupportedURL
from ...journeys.saml import CONNECTION_ERROR, HTTP_STATUS, TIMEOUT, page_url
from ...journeys.trail import Trail, redact_page
from ...results.failures import Evidence
from ...user import JourneyOutcome
from ..preflight import OneJourneyCheck
from . import flow as oidc
from . import grant_flows as grants
from .grant_flows import CLIENT_CREDENTIALS_GRANT as CLIENT_CREDENTIALS
from .grant_flows import INTROSPECTION_GRANT as INTROSPECTION
from .grant_flows import LOGOUT_GRANT as LOGOUT
from .grant_flows import REFRESH_GRANT as REFRESH
from .user import FIXES, JSON, OIDCSettings, OIDCUser, login_once

GRANT_FIXES = {
    grants.REFRESH_ERROR: "let the client use the refresh_token grant, and check the provider's refresh token "
                          "lifetime against the run's length",
    grants.INTROSPECTION_ERROR: "let the client introspect tokens at the provider (a confidential client with "
                                "introspection allowed, and in the token's audience: Keycloak answers active: false "
                                "otherwise; give its client an audience mapper)",
    grants.LOGOUT_ERROR: "register --post-logout-redirect-uri at the provider exactly, or drop it",
}
NO_REFRESH_TOKEN_FIX = ("let the client use the refresh_token grant; some providers issue refresh tokens only "
                        "for --scope 'openid offline_access'")


@dataclass
class GrantSettings(OIDCSettings):
    """OIDCSettings and the grant; discovery also gives the endpoints of these journeys (once per process)."""

    grant: str = REFRESH
    post_logout_redirect_uri: str = ""
    _endpoints: grants.Endpoints | None = field(default=None, repr=False)

    def provider(self, rp: FastBrowser) -> oidc.Provider:
        if self._provider is None:
            self._provider, self._endpoints = grants.discover(rp, self.target)
        return self._provider

    def endpoints(self, rp: FastBrowser) -> grants.Endpoints:
        self.provider(rp)
        assert self._endpoints is not None
        return self._endpoints


@dataclass
class Held:
    """What one user keeps between journeys: its account and tokens, and this journey's flows (for redaction)."""

    account: Account | None = None
    tokens: oidc.Tokens | None = None
    flow: oidc.Flow | None = None
    logout: grants.Logout | None = None

    def secrets(self) -> list[str]:
        found = [*(self.flow.secrets() if self.flow else ()), *(self.tokens.secrets() if self.tokens else ()),
                 *(self.logout.secrets() if self.logout else ())]
        return [value for value in found if value]

    def pages(self) -> list[str]:
        return [*(self.flow.pages if self.flow else ()), *(self.logout.pages if self.logout else ())]


def browsers(settings: GrantSettings, on_request) -> tuple[FastBrowser, FastBrowser]:
    """The user's browser (redirects to the RP's redirect_uri and post-logout URI caught) and the RP's channel."""
    uri = settings.post_logout_redirect_uri
    catch = grants.Logout(uri).caught

    def caught(url: str) -> bool:
        return settings.client.caught(url) or catch(url)

    return (FastBrowser(verify=settings.verify, timeout=settings.timeout, on_request=on_request, catch=caught),
            FastBrowser(verify=settings.verify, timeout=settings.timeout, on_request=on_request, accept=JSON))


def _log_in(settings: GrantSettings, browser: FastBrowser, rp: FastBrowser, held: Held) -> oidc.Tokens:
    held.account = held.account or settings.accounts.pick()
    held.flow = oidc.Flow()
    browser.clear_cookies()
    held.tokens = login_once(settings, browser, rp, held.flow, held.account)
    return held.tokens


def one_journey(settings: GrantSettings, browser: FastBrowser, rp: FastBrowser, held: Held) -> None:
    """The grant's journey for one user, its state in `held`. Raises oidc.FlowFailed."""
    try:
        try:
            provider = settings.provider(rp)
        except (OSError, ValueError) as exc:
            raise oidc.FlowFailed(oidc.DISCOVERY_ERROR, f"{type(exc).__name__}: {exc}") from None
        endpoints = settings.endpoints(rp)
        client, grant = settings.client, settings.grant
        held.flow = held.logout = None
        if grant == CLIENT_CREDENTIALS:
            endpoints.allow("client_credentials", grant)
            held.tokens = grants.client_credentials(rp, provider, client, client.scope)
        elif grant == LOGOUT:
            end_session = endpoints.require("end_session_endpoint", grant)
            held.account = None  # every journey another account, a fresh login
            tokens = _log_in(settings, browser, rp, held)
            held.logout = grants.Logout(settings.post_logout_redirect_uri)
            grants.logout(browser, end_session, client, tokens, held.logout)
        else:
            endpoint = endpoints.require("introspection_endpoint", grant) if grant == INTROSPECTION else ""
            if grant == REFRESH:
                endpoints.allow("refresh_token", grant)
            tokens = held.tokens or _log_in(settings, browser, rp, held)
            try:
                if grant == REFRESH:
                    grants.refresh(rp, provider, client, tokens)
                else:
                    grants.introspect(rp, endpoint, client, tokens)
            except oidc.FlowFailed:
                held.tokens = None  # the next journey logs in again
                raise
    except TimeoutError as exc:
        raise oidc.FlowFailed(TIMEOUT, str(exc) or "timed out") from None
    except OSError as exc:
        raise oidc.FlowFailed(CONNECTION_ERROR, str(exc) or type(exc).__name__) from None
    except (TooManyRedirects, UnsupportedURL) as exc:
        raise oidc.FlowFailed(HTTP_STATUS, str(exc)) from None


def evidence(failure: oidc.FlowFailed, trail: Trail, browser: FastBrowser, held: Held,
             settings: GrantSettings) -> Evidence:
    """What to keep of a failed journey: its trail and last page, every secret it knew taken out."""
    page = failure.page
    html = ""
    account = held.account.username if held.account else settings.client.client_id
    if page is not None:
        hidden = [held.account.password if held.account else "", settings.client.secret, *held.secrets()]
        html = redact_page(page.text, hidden, [cookie.value for _host, cookie in browser.cookies])
    return Evidence(failure.reason, failure.detail, account, trail.lines(held.pages()), html,
                    page_url(page.url) if page is not None else "")


def _fix(failure: oidc.FlowFailed) -> str:
    if failure.reason == oidc.DISCOVERY_ERROR and "--grant" in failure.detail:
        return "turn the endpoint on at the provider (it publishes what it serves), or choose another --grant"
    if failure.reason == oidc.TOKEN_ERROR and "refresh_token" in failure.detail:
        return NO_REFRESH_TOKEN_FIX
    return GRANT_FIXES.get(failure.reason) or FIXES.get(failure.reason, "check --target and the provider logs")


def preflight(settings: GrantSettings) -> OneJourneyCheck:
    """One whole journey (a refresh or introspection user's first: login and grant) before any load."""
    trail, held = Trail(), Held()
    browser, rp = browsers(settings, trail.record)
    try:
        one_journey(settings, browser, rp, held)
        failure = None
    except oidc.FlowFailed as failed:
        who = f"login as {held.account.username}" if held.account else f"client {settings.client.client_id}"
        failure = (f"--grant {settings.grant}: {who} failed at step {trail.last_step or oidc.DISCOVERY!r}: "
                   f"{failed.reason}: {failed.detail}; likely fix: {_fix(failed)}")
    finally:
        browser.close_connections()
        rp.close_connections()
    return OneJourneyCheck(settings.target, failure)


class GrantUser(OIDCUser):
    """OIDCUser's browsers, statistics and warm-up; its own journey (one_journey) and the tokens it holds."""

    abstract = True
    journey_name = "OIDC grant"
    make_browsers = staticmethod(browsers)

    def on_start(self) -> None:
        super().on_start()
        self.held = Held()

    def journey(self) -> JourneyOutcome:
        settings: GrantSettings = self.run_context.settings
        self.trail.clear()
        try:
            one_journey(settings, self.browser, self.rp, self.held)
            result = JourneyOutcome(True, account=self._who(settings))
        except oidc.FlowFailed as failure:
            result = JourneyOutcome(False, failure.reason, failure.detail, self._who(settings),
                                    step=self.trail.last_step or oidc.DISCOVERY)
            if self.run_context.failures.wants(failure.reason):
                result.evidence = evidence(failure, self.trail, self.browser, self.held, settings)
        if settings.new_connection:
            self.browser.close_connections()
            self.rp.close_connections()
        return result

    def _who(self, settings: GrantSettings) -> str:
        return self.held.account.username if self.held.account else settings.client.client_id


class RefreshUser(GrantUser):
    journey_name = "OIDC refresh"


class ClientCredentialsUser(GrantUser):
    journey_name = "OIDC client credentials"


class IntrospectionUser(GrantUser):
    journey_name = "OIDC introspection"


class LogoutUser(GrantUser):
    journey_name = "OIDC logout"


USERS = {REFRESH: RefreshUser, CLIENT_CREDENTIALS: ClientCredentialsUser, INTROSPECTION: IntrospectionUser,
         LOGOUT: LogoutUser}  # a statistics entry of its own per grant
