"""What every kind shares: its accounts, TLS, URL checks, and the option groups several kinds read.

The option groups are defined once and added to whichever parser needs them — `authbench run`'s, or
Locust's under plain `locust -f` — so an option has one name everywhere.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .. import embedded_lab
from ..accounts import ORDERS, Account, AccountPicker, AccountsError, from_csv, from_template
from ..errors import AuthbenchError
from ..journeys.settings import LOGIN_FORMS
from ..journeys.success import SuccessRule
from ..targets_lock import lab_key, url_key
from .base import AccountOptions

PASSWORD_ENV = "AUTHBENCH_PASSWORD"  # where a single account's password comes from by default
DEFAULT_PASSWORD_RULE = "pw-{user}"  # the lab's, for --accounts-template
DEFAULT_TIMEOUT = "10s"
LOGIN_FORM_CHOICES = ("auto", *sorted(LOGIN_FORMS))  # auto: try every preset


def add_account_options(parser: Any) -> Any:
    accounts = parser.add_argument_group("accounts (a lab target brings its own)")
    source = accounts.add_mutually_exclusive_group()
    source.add_argument("--account", help=f"one account for every journey; password from ${PASSWORD_ENV} "
                        "or --password-file")
    source.add_argument("--accounts-csv", help="CSV file of user,password")
    source.add_argument("--accounts-template", help="e.g. user{000..999}, with --password-rule")
    accounts.add_argument("--password-file", help="file holding the single account's password")
    accounts.add_argument("--password-rule", default=DEFAULT_PASSWORD_RULE,
                          help=f"for templates (default {DEFAULT_PASSWORD_RULE}; never stored in results)")
    accounts.add_argument("--order", choices=ORDERS, default="sequential")
    accounts.add_argument("--seed", type=int, help="random order: repeatable with a seed")
    return accounts


def add_tls_options(parser: Any) -> None:
    tls = parser.add_mutually_exclusive_group()
    tls.add_argument("--ca-bundle", help="CA certificates to verify the targets' TLS with (default: system)")
    tls.add_argument("--insecure", action="store_true", help="do not verify TLS certificates")


@dataclass(frozen=True)
class LoginOptions:
    """What the browser-like kinds (SAML, your own journeys) read of add_login_options and --new-connection."""

    login_form: str = "auto"
    username_field: str | None = None
    password_field: str | None = None
    reuse_session: bool = False
    new_connection: bool = False
    expect: str | None = None
    expect_regex: str | None = None
    expect_status: int | None = None


def add_login_options(group: Any) -> None:
    """Browser-like logins through a login form (SAML, your own journeys)."""
    group.add_argument("--login-form", choices=LOGIN_FORM_CHOICES, default="auto",
                       help="which login form to expect (default auto: try them all)")
    group.add_argument("--username-field", help="login form field for the user name (overrides --login-form)")
    group.add_argument("--password-field", help="login form field for the password")
    group.add_argument("--reuse-session", action="store_true",
                       help="keep cookies between a user's journeys: later ones measure SSO without password")
    add_expect_options(group)


def add_expect_options(group: Any) -> None:
    """What counts as logged in beyond the walk's own rule (SAML, your own journeys, compare)."""
    group.add_argument("--expect", metavar="TEXT",
                       help="text the SP's page after login must contain; {user} is the account's user name "
                       "(default: any 2xx page of the SP that is not a login form and not the IdP's)")
    group.add_argument("--expect-regex", metavar="REGEX", help="a regular expression that page must match")
    group.add_argument("--expect-status", type=int, metavar="CODE", help="the HTTP status that page must have")


def add_connection_options(group: Any) -> None:
    group.add_argument("--new-connection", action="store_true",
                       help="close connections after every journey (browser-like churn; TIME_WAIT counted)")


def check_url(url: str, what: str) -> None:
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise AuthbenchError(f"{what} {url!r} is not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AuthbenchError(f"{what} {url!r} is not an http(s) URL")
    check_url_port(url, what)


def check_url_port(url: str, what: str) -> None:
    """urlsplit checks a port only when asked, and lets 0 through."""
    try:
        port = urlsplit(url).port
    except ValueError:
        port = 0
    if port == 0:
        raise AuthbenchError(f"{what} {url!r}: its port is not 1..65535")


def tls_verify(ca_bundle: str | None, insecure: bool, lab_ca: str | None = None) -> bool | str:
    """requests-style `verify`: False, a CA bundle path, or True for the system's CAs."""
    if insecure:
        return False
    verify = ca_bundle or lab_ca or True
    if isinstance(verify, str) and not Path(verify).is_file():
        raise AuthbenchError(f"--ca-bundle {verify!r} is not a readable file")
    return verify


def accounts(options: AccountOptions, lab_defaults: dict | None) -> tuple[AccountPicker, dict]:
    """The accounts to log in with, and a description of them for the record (never a password)."""
    try:
        if options.account:
            found = [Account(options.account, _password(options))]
            source: dict[str, Any] = {"type": "one account", "user": options.account}
        elif options.accounts_csv:
            found = from_csv(options.accounts_csv)
            source = {"type": "csv", "file": options.accounts_csv, "accounts": len(found)}
        else:
            template = options.accounts_template or (lab_defaults or {}).get("template")
            if not template:
                raise AuthbenchError("no accounts: give --account, --accounts-csv or --accounts-template")
            rule = options.password_rule if options.accounts_template or not lab_defaults \
                else lab_defaults["password_rule"]
            found = from_template(template, rule)
            source = {"type": "template", "template": template, "accounts": len(found)}
        picker = AccountPicker(found, options.order, options.seed)
    except AccountsError as exc:
        raise AuthbenchError(str(exc)) from None
    return picker, {**source, "order": options.order}


def _password(options: AccountOptions) -> str:
    if options.password_file:
        try:
            password = Path(options.password_file).read_text().rstrip("\n")
        except (OSError, UnicodeDecodeError) as exc:
            raise AuthbenchError(f"cannot read --password-file {options.password_file!r}: "
                                 f"{getattr(exc, 'strerror', None) or exc}") from None
        if not password:
            raise AuthbenchError(f"--password-file {options.password_file!r} is empty: an empty password logs "
                                 "nobody in; put the password in it")
        return password
    if os.environ.get(PASSWORD_ENV):
        return os.environ[PASSWORD_ENV]
    raise AuthbenchError(f"--account needs a password: set ${PASSWORD_ENV} (not empty) or give --password-file")


def success_rule(expect: str | None, expect_regex: str | None, expect_status: int | None) -> SuccessRule:
    """--expect, --expect-regex and --expect-status as a rule."""
    if expect == "":
        raise AuthbenchError("--expect '' matches every page; give the text the page after login must contain")
    try:
        return SuccessRule(expect or "", expect_regex or "", expect_status)
    except ValueError as exc:
        raise AuthbenchError(str(exc)) from None


def load_key(url: str, lab_dir: str, on_lab: bool) -> str:
    """targets_lock's key: the lab as a whole for a lab target or a URL the running lab serves (its clusters share
    the machine's cores), else the target's origin."""
    if on_lab or (lab_dir and embedded_lab.serves(lab_dir, url)):
        return lab_key(lab_dir)
    return url_key(url)
