"""`--rp target`: a real relying party's protected URL as the target, its own OpenID Connect under load too.

The app holds its registration and secret; authbench is only the browser (`rp_walk.rp_login`), so none of the
virtual RP's options apply. With --reuse-session a user keeps its account and the provider's cookies and drops
the app's before each journey (`journeys.returning`), so each journey is classified fresh, reused or lost as
SAML's are. Failure evidence never holds a secret: the password, cookie values and every value the trail's
URLs carried in a query (the code, state, nonce) are taken out of the page kept, and URLs lose their query.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from ...accounts import Account
from ...errors import AuthbenchError
from ...journeys import saml
from ...journeys.fastbrowser import FastBrowser
from ...journeys.saml import page_url
from ...journeys.settings import WebSettings, login_fields
from ...journeys.trail import Trail
from ...journeys.web_user import WebLoginUser, page_evidence
from ...results.failures import Evidence
from ..base import CommonOptions, Journey
from ..common import accounts, check_url, load_key, success_rule, tls_verify
from ..preflight import OneJourneyCheck
from . import rp_walk

# The virtual RP's options: the real RP holds its own registration, so these are refused with --rp target.
VIRTUAL_RP_OPTIONS = ("client_id", "client_secret_file", "client_secret", "client_auth", "redirect_uri", "scope",
                      "validate_id_token", "userinfo", "grant", "post_logout_redirect_uri")
DEFAULT_RULE_TEXT = ("a 2xx page of the app after its redirect URI took the provider's answer, not a login form and "
                     "not the provider's page")


def check_options(options: Any) -> None:
    """One line for a virtual RP's option given with --rp target."""
    defaults = {f.name: f.default for f in fields(options)}
    given = [name for name in VIRTUAL_RP_OPTIONS if getattr(options, name) != defaults[name]]
    if given:
        flag = "--" + given[0].replace("_", "-")
        raise AuthbenchError(f"{flag} is the virtual RP's: with --rp target the app at --target holds its own "
                             "registration (client id, secret, redirect URI, scope) and redeems the code itself; "
                             f"drop {flag}")


def prepare(common: CommonOptions, options: Any, target: str) -> Journey:
    check_options(options)
    check_url(target, "--target")
    verify = tls_verify(common.ca_bundle, common.insecure)
    rule = success_rule(options.expect, options.expect_regex, options.expect_status)
    picker, account_source = accounts(common.accounts, None)
    settings = WebSettings(target, picker, verify, common.timeout,
                           login_fields(options.login_form, options.username_field, options.password_field),
                           options.reuse_session, options.new_connection, rule, common.pace)
    record = {"target": target, "journey": "oidc", "rp": "target: a real RP's protected URL",
              "flow": "authorization code, redeemed by the RP",
              "tls_verify": verify if isinstance(verify, bool) else f"CA bundle {verify}",
              "timeout_s": common.timeout, "accounts": account_source, "login_form": settings.describe_fields(),
              "reuse_session": options.reuse_session, "new_connection": options.new_connection,
              "success_rule": {**rule.describe(), "default": DEFAULT_RULE_TEXT}}
    parts = urlsplit(target)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return Journey(RPUser, settings, record, target, load_key(target, common.lab_dir, False),
                   lambda: preflight(settings), churn_port=port if options.new_connection else None,
                   summary_line=f"RP {target}: the provider's login, the RP's redirect URI, the protected page")


def query_values(hops: list) -> list[str]:
    """Every value a hop's URL carried in its query (the code, state, nonce, …): kept pages must not show them."""
    return [value for _step, _method, url, _status, _exc in hops for _name, value in parse_qsl(urlsplit(url).query)]


def evidence(outcome: rp_walk.RPOutcome, trail: Trail, browser: FastBrowser, account: Account) -> Evidence:
    """A failed journey's trail and last page, also without a code, state or nonce its URLs carried."""
    return page_evidence(outcome, trail, browser, account, [v for v in query_values(trail.hops) if len(v) >= 8])


FIXES = {
    rp_walk.RP_REFUSED: "the app could not redeem the code or keep the login: check its logs (its client secret and "
                     "registration at the provider, its clock, its view of the provider's metadata)",
    rp_walk.PROVIDER_ERROR: "the provider refused the app's request: check the app's registration there (client id, "
                         "redirect URI, scopes)",
    saml.BAD_CREDENTIALS: "check the account's password (--accounts-csv, --password-rule, $AUTHBENCH_PASSWORD)",
    saml.NO_LOGIN_FORM: "name the provider's login form: --login-form, or --username-field and --password-field",
    saml.UNEXPECTED_PAGE: "the page after login lacks what --expect, --expect-regex or --expect-status demand",
    saml.HTTP_STATUS: "check that --target is the app's protected URL, and the servers' logs",
    saml.CONNECTION_ERROR: "check --target's host and port, and that the app and the provider are up",
    saml.TIMEOUT: "check --target's port, or allow slower answers with --timeout",
}


def likely_fix(outcome: rp_walk.RPOutcome) -> str:
    if outcome.reason == saml.NO_LOGIN_FORM and "no redirect to a provider" in outcome.detail:
        return "--target must be a page the RP protects (one that redirects to the provider)"
    return FIXES.get(outcome.reason, "check --target and the servers' logs")


def preflight(settings: WebSettings) -> OneJourneyCheck:
    """One whole login with the first account before any load: ok, or one line with the step, the page and a fix."""
    account = settings.accounts.pick()
    trail = Trail()
    with FastBrowser(verify=settings.verify, timeout=settings.timeout, on_request=trail.record) as browser:
        outcome = rp_walk.rp_login(browser, settings.target, account.username, account.password,
                                fields=settings.fields, rule=settings.rule)
    failure = None
    if not outcome.ok:
        step = trail.last_step or rp_walk.RP_PAGE
        url = page_url(trail.hops[-1][2]) if trail.hops else settings.target
        failure = (f"login as {account.username} failed at step {step!r} ({url}): {outcome}; "
                   f"likely fix: {likely_fix(outcome)}")
    return OneJourneyCheck(settings.target, failure)


class RPUser(WebLoginUser):
    journey_name = "OIDC login through the RP"
    request_type = "OIDC"
    provider_steps = rp_walk.PROVIDER_STEPS

    def walk(self, settings: WebSettings, account: Account) -> rp_walk.RPOutcome:
        return rp_walk.rp_login(self.browser, settings.target, account.username, account.password,
                             fields=settings.fields, rule=settings.rule)

    def evidence(self, outcome: rp_walk.RPOutcome, account: Account) -> Evidence:
        return evidence(outcome, self.trail, self.browser, account)
