"""The SAML SSO Locust user: one complete SP-initiated login per iteration, each step in the statistics.

Settings come from `authbench run` (through the runner) or from Locust's own command line when the
locustfile runs under plain `locust`; the walk itself is `journeys.saml.sso_login`.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from ..accounts import Account, AccountPicker, AccountsError, from_csv, from_template
from ..journeys import saml
from ..journeys.fastbrowser import FastBrowser
from ..journeys.forms import KEYCLOAK, PRESETS, SHIBBOLETH, SIMPLESAMLPHP, LoginFields
from ..journeys.virtual_sp import VirtualSP
from .journey import JourneyOutcome, JourneyUser, RunContext

LOGIN_FORMS = {"shibboleth": SHIBBOLETH, "keycloak": KEYCLOAK, "simplesamlphp": SIMPLESAMLPHP}
VIRTUAL_SP_METADATA_FILE = "authbench-virtual-sp.xml"
# Failures that mean the run cannot measure anything: refused before any warm-up.
PREFLIGHT_FATAL = {saml.CONNECTION_ERROR: "is unreachable", saml.TIMEOUT: "did not answer in time",
                   saml.NO_LOGIN_FORM: "never showed a login form", saml.HTTP_STATUS: "answered with an error",
                   saml.BAD_CREDENTIALS: "refused the account"}


@dataclass
class SAMLSettings:
    target: str  # SP protected URL, or the IdP SSO URL for a virtual SP
    accounts: AccountPicker
    verify: bool | str
    timeout: float
    fields: tuple[LoginFields, ...]
    reuse_session: bool = False
    new_connection: bool = False
    virtual_sp: VirtualSP | None = None

    @classmethod
    def build(cls, *, target: str, accounts: AccountPicker, verify: bool | str, timeout: float, login_form: str,
              username_field: str | None, password_field: str | None, reuse_session: bool, new_connection: bool,
              virtual_sp: bool, verify_signature: bool, idp_cert: str | None,
              register_metadata_in: Path | None = None) -> SAMLSettings:
        if username_field or password_field:
            base = LOGIN_FORMS.get(login_form, SHIBBOLETH)
            fields: tuple[LoginFields, ...] = (LoginFields(username_field or base.username,
                                                           password_field or base.password, base.submit),)
        else:
            fields = PRESETS if login_form == "auto" else (LOGIN_FORMS[login_form],)
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
        return cls(target, accounts, verify, timeout, fields, reuse_session, new_connection, sp)

    def describe_fields(self) -> list[dict[str, str]]:
        return [{"username": f.username, "password": f.password, "submit": f.submit} for f in self.fields]


def login_once(settings: SAMLSettings, browser: FastBrowser, account: Account) -> saml.SSOOutcome:
    if settings.virtual_sp is not None:
        return settings.virtual_sp.login(browser, account.username, account.password, fields=settings.fields)
    return saml.sso_login(browser, settings.target, account.username, account.password, fields=settings.fields)


def preflight(settings: SAMLSettings) -> str | None:
    """One journey before any load: why the run cannot start, or None."""
    account = settings.accounts.pick()
    with FastBrowser(verify=settings.verify, timeout=settings.timeout) as browser:
        outcome = login_once(settings, browser, account)
    if outcome.ok or outcome.reason not in PREFLIGHT_FATAL:
        return None
    who = f"account {account.username!r}: " if outcome.reason == saml.BAD_CREDENTIALS else ""
    return f"target {settings.target} {PREFLIGHT_FATAL[outcome.reason]} ({who}{outcome.detail})"


class SAMLUser(JourneyUser):
    journey_name = "SSO login"
    request_type = "SSO"

    def on_start(self) -> None:
        super().on_start()
        settings: SAMLSettings = self.run_context.settings
        self.browser = FastBrowser(verify=settings.verify, timeout=settings.timeout, on_request=self._report)

    def on_stop(self) -> None:
        self.browser.close_connections()

    def _report(self, name: str, method: str, url: str, status: int, elapsed_ms: float, length: int,
                exception: BaseException | None) -> None:
        self.environment.events.request.fire(request_type=method, name=name, response_time=elapsed_ms,
                                             response_length=length, exception=exception, context={}, url=url)

    def journey(self) -> JourneyOutcome:
        settings: SAMLSettings = self.run_context.settings
        if not settings.reuse_session:
            self.browser.clear_cookies()  # every journey a full authentication, as in 2012
        account = settings.accounts.pick()
        outcome = login_once(settings, self.browser, account)
        if settings.new_connection:
            self.browser.close_connections()
        return JourneyOutcome(outcome.ok, outcome.reason, outcome.detail, account.username)


# -- plain `locust -f locustfiles/saml_sso.py` ------------------------------------------------------


def add_locust_options(parser: argparse.ArgumentParser) -> None:
    """authbench's journey options on Locust's command line (and in its web UI)."""
    group = parser.add_argument_group("authbench SAML SSO")
    group.add_argument("--ca-bundle", default="", help="CA certificates for the target's TLS")
    group.add_argument("--insecure-tls", action="store_true", default=False, help="do not verify TLS")
    group.add_argument("--accounts-template", default="user{000..999}", help="e.g. user{000..999}")
    group.add_argument("--password-rule", default="pw-{user}", help="password of a template account")
    group.add_argument("--accounts-csv", default="", help="CSV of user,password (instead of the template)")
    group.add_argument("--login-form", default="auto", choices=sorted(LOGIN_FORMS) + ["auto"])
    group.add_argument("--reuse-session", action="store_true", default=False)
    group.add_argument("--new-connection", action="store_true", default=False)
    group.add_argument("--journey-timeout", type=float, default=10.0, help="seconds per request")


def context_from_locust_options(options: argparse.Namespace, host: str | None) -> RunContext:
    if not host:
        raise SystemExit("authbench: give the SP's protected URL as Locust's --host")
    try:
        accounts = from_csv(options.accounts_csv) if options.accounts_csv else from_template(
            options.accounts_template, options.password_rule)
    except AccountsError as exc:
        raise SystemExit(f"authbench: {exc}") from None
    verify: bool | str = False if options.insecure_tls else (options.ca_bundle or True)
    settings = SAMLSettings(host, AccountPicker(accounts), verify, options.journey_timeout,
                            PRESETS if options.login_form == "auto" else (LOGIN_FORMS[options.login_form],),
                            options.reuse_session, options.new_connection)
    return RunContext(settings=settings)
