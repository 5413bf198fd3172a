"""The SAML SSO Locust user: one complete SP-initiated login per iteration, each step in the statistics.

Settings come from `authbench run` (through the runner) or from Locust's own command line when the
locustfile runs under plain `locust`; the walk itself is `journeys.saml.sso_login`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...accounts import Account, AccountPicker
from ...journeys import saml
from ...journeys.fastbrowser import FastBrowser
from ...journeys.settings import WebSettings, login_fields
from ...journeys.success import DEFAULT_RULE, SuccessRule
from ...journeys.trail import Trail
from ...journeys.virtual_sp import VirtualSP
from ...journeys.web_user import WebLoginUser, page_evidence
from ...results.failures import Evidence
from ..preflight import PREFLIGHT_FILE

VIRTUAL_SP_METADATA_FILE = "authbench-virtual-sp.xml"
PREFLIGHT_PAGE_FILE = "preflight-page.html"  # the page it ended on, redacted


@dataclass
class SAMLSettings(WebSettings):
    virtual_sp: VirtualSP | None = None  # authbench is the SP: the target is the IdP's SSO URL

    @classmethod
    def build(cls, *, target: str, accounts: AccountPicker, verify: bool | str, timeout: float, login_form: str,
              username_field: str | None, password_field: str | None, reuse_session: bool, new_connection: bool,
              virtual_sp: bool, verify_signature: bool, idp_cert: str | None,
              register_metadata_in: Path | None = None, rule: SuccessRule = DEFAULT_RULE,
              pace: float = 0.0) -> SAMLSettings:
        fields = login_fields(login_form, username_field, password_field)
        sp = None
        if virtual_sp:
            if verify_signature and not idp_cert:
                raise ValueError("--verify-signature needs --idp-cert (the IdP's certificate or metadata)")
            try:
                sp = VirtualSP(target, idp_certificate=idp_cert, verify_signature=verify_signature)
            except (OSError, ValueError) as exc:
                raise ValueError(f"--idp-cert {idp_cert!r}: {exc}") from None
            if register_metadata_in is not None:  # the embedded lab trusts every SP whose metadata it holds
                (Path(register_metadata_in) / VIRTUAL_SP_METADATA_FILE).write_text(sp.sp_metadata())
        return cls(target, accounts, verify, timeout, fields, reuse_session, new_connection, rule, pace, sp)


def login_once(settings: SAMLSettings, browser: FastBrowser, account: Account) -> saml.SSOOutcome:
    if settings.virtual_sp is not None:
        return settings.virtual_sp.login(browser, account.username, account.password, fields=settings.fields)
    return saml.sso_login(browser, settings.target, account.username, account.password, fields=settings.fields,
                          rule=settings.rule)


@dataclass
class Preflight:
    """One complete journey before any load, as the operator sees it: the trail and the verdict."""

    account: str
    outcome: saml.SSOOutcome
    trail: list[str]
    evidence: Evidence
    step: str  # the last hop's step
    url: str  # the last hop's URL, without query
    keep_on_failure = True  # its trail and last page are what the one-line error points at

    @property
    def ok(self) -> bool:
        return self.outcome.ok

    def lines(self) -> list[str]:
        verdict = "logged in" if self.ok else f"failed: {self.outcome}"
        return [f"preflight: one login as {self.account}", *(f"  {line}" for line in self.trail),
                f"  verdict: {verdict}"]

    def save(self, folder: Path) -> Path:
        """PREFLIGHT_FILE (the trail and verdict) and, when the walk ended on a page, that page redacted."""
        folder.mkdir(parents=True, exist_ok=True)
        lines = self.lines()
        if self.evidence.page_html:
            (folder / PREFLIGHT_PAGE_FILE).write_text(self.evidence.page_html, encoding="utf-8")
            lines.append(f"  last page: {PREFLIGHT_PAGE_FILE} ({self.evidence.page_url}, redacted)")
        path = folder / PREFLIGHT_FILE
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    def problem(self, saved: Path | None = None) -> str | None:
        """None when the login worked; else one line: the step, the page, the likely fix, where the trail is."""
        if self.ok:
            return None
        step = self.step or "the first request"
        where = f"; trail in {saved}" if saved is not None else ""
        return (f"preflight login as {self.account} failed at step {step!r} ({self.url}): {self.outcome}; "
                f"likely fix: {likely_fix(self.outcome)}{where}")


def likely_fix(outcome: saml.SSOOutcome) -> str:
    """The option or check most likely to mend a failed login, from its reason and page."""
    reason, detail = outcome.reason, outcome.detail
    if reason == saml.CONNECTION_ERROR and "certificate" in detail.lower():
        return "give the CA of the target's certificate with --ca-bundle FILE (or --insecure to skip verification)"
    if reason == saml.NO_LOGIN_FORM and "no redirect to an IdP" in detail:
        return "--target must be a page the SP protects (one that redirects to the IdP)"
    if reason == saml.SP_REFUSED and "after the SAML response" in detail:
        return "the SP did not keep the login: check its logs (clock skew, audience, the IdP's certificate)"
    return FIXES.get(reason, "check --target and the servers' logs")


FIXES = {
    saml.CONNECTION_ERROR: "check --target's host and port, and that the server is up",
    saml.TIMEOUT: "check --target's port, or allow slower answers with --timeout",
    saml.NO_LOGIN_FORM: "name the IdP's login form: --login-form, or --username-field and --password-field",
    saml.BAD_CREDENTIALS: "check the account's password (--accounts-csv, --password-rule, $AUTHBENCH_PASSWORD)",
    saml.SAML_STATUS_NOT_SUCCESS: "the IdP refused to answer the SP: is the SP registered at the IdP, the account "
                                  "allowed to use it?",
    saml.SP_REFUSED: "the SP rejected the SAML response: check its logs (clock skew, audience, IdP metadata)",
    saml.UNEXPECTED_PAGE: "the page after login lacks what --expect, --expect-regex or --expect-status demand: "
                          "compare them with the saved page",
    saml.STALE_REQUEST: "the IdP lost the login conversation: make the balancer sticky or share the IdP's state",
    saml.HTTP_STATUS: "check that --target is the SP's protected URL, and the servers' logs",
}


def preflight(settings: SAMLSettings) -> Preflight:
    """One journey with the first account, its every hop recorded (nothing is sent to Locust)."""
    account = settings.accounts.pick()
    trail = Trail()
    with FastBrowser(verify=settings.verify, timeout=settings.timeout, on_request=trail.record) as browser:
        outcome = login_once(settings, browser, account)
        kept = page_evidence(outcome, trail, browser, account)
    last_url = trail.hops[-1][2] if trail.hops else settings.target
    return Preflight(account.username, outcome, kept.trail, kept, trail.last_step, saml.page_url(last_url))


class SAMLUser(WebLoginUser):
    journey_name = "SSO login"
    request_type = "SSO"

    def app_url(self, settings: SAMLSettings) -> str | None:
        return settings.target if settings.virtual_sp is None else None  # a virtual SP keeps no cookies

    def walk(self, settings: SAMLSettings, account: Account) -> saml.SSOOutcome:
        return login_once(settings, self.browser, account)
