"""What a browser-like journey reads: where to go, as whom, how to log in and what counts as logged in.

The SAML kind's settings extend it (a virtual SP); a journey of your own (`authbench run -f`) gets it as
`self.settings`, filled from the same options (--target, the accounts, TLS, --login-form, --expect, …).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..accounts import AccountPicker
from .forms import KEYCLOAK, PRESETS, SHIBBOLETH, SIMPLESAMLPHP, LoginFields
from .success import DEFAULT_RULE, SuccessRule

LOGIN_FORMS = {"shibboleth": SHIBBOLETH, "keycloak": KEYCLOAK, "simplesamlphp": SIMPLESAMLPHP}  # and "auto": all


def login_fields(login_form: str = "auto", username_field: str | None = None,
                 password_field: str | None = None) -> tuple[LoginFields, ...]:
    """The login forms a walk recognises: a preset, every preset (auto), or fields named by the user."""
    if username_field or password_field:
        base = LOGIN_FORMS.get(login_form, SHIBBOLETH)
        return (LoginFields(username_field or base.username, password_field or base.password, base.submit),)
    return PRESETS if login_form == "auto" else (LOGIN_FORMS[login_form],)


@dataclass
class WebSettings:
    target: str  # the URL the journey starts at (an SP's protected page; for a virtual SP the IdP's SSO URL)
    accounts: AccountPicker  # .pick() → the next Account (username, password)
    verify: bool | str = True  # TLS: True (system CAs), a CA bundle path, or False
    timeout: float = 10.0  # seconds per request
    fields: tuple[LoginFields, ...] = PRESETS  # the login forms to recognise (--login-form, --username-field)
    reuse_session: bool = False  # keep the IdP's cookies between a user's journeys (returning users)
    new_connection: bool = False  # close connections after every journey
    rule: SuccessRule = DEFAULT_RULE  # what the page after login must show (--expect, --expect-regex, …)
    pace: float = 0.0  # seconds from one journey's start to the user's next (0: back to back)

    def describe_fields(self) -> list[dict[str, str]]:
        return [{"username": f.username, "password": f.password, "submit": f.submit} for f in self.fields]
