"""authbench: load tests for authentication systems — SAML SSO through IdP clusters, LDAP binds, database
logins, OTP checks, and journeys you write yourself.

Your own journey is a class in a Python file, run with `authbench run -f FILE --target …`::

    from authbench import JourneyOutcome, JourneyUser, sso_login

    class SSOThenPage(JourneyUser):
        def journey(self) -> JourneyOutcome:
            ...

The names below are the public API (docs/custom-journeys.md); everything else is internal. They are
imported on first use, so `import authbench` stays light (Locust, which patches the standard library
with gevent, loads only when a journey's building blocks are asked for).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name → module that defines it
_PUBLIC = {
    "JourneyUser": "authbench.user",  # the base of every journey: one journey per iteration, timed, recorded
    "JourneyOutcome": "authbench.user",  # what journey() returns: ok, or a reason (its failure category)
    "RunContext": "authbench.user",  # self.run_context: the settings, the run's events, the failure budget
    "WebSettings": "authbench.journeys.settings",  # self.settings of your own journey
    "FastBrowser": "authbench.journeys.fastbrowser",  # the browser-like HTTP client (cookies, redirects, TLS)
    "Page": "authbench.journeys.forms",  # what the browser returns: url, status, text, forms, title
    "Form": "authbench.journeys.forms",  # a parsed HTML form, submitted with FastBrowser.submit
    "parse_forms": "authbench.journeys.forms",  # the form walker: every form of a page
    "LoginFields": "authbench.journeys.forms",  # which fields a login form has
    "sso_login": "authbench.journeys.saml",  # the SAML SSO walk from an SP's protected URL, through any IdP
    "SSOOutcome": "authbench.journeys.saml",  # what the walk returns: ok, reason, detail, the last page
    "Account": "authbench.accounts",  # username and password
    "AccountPicker": "authbench.accounts",  # settings.accounts.pick(): the next account, in the run's order
    "Evidence": "authbench.results.failures",  # what is kept of a failed journey (results/<id>/failures/)
    "Trail": "authbench.journeys.trail",  # a journey's hops, for failure evidence
    "redact_page": "authbench.journeys.trail",  # a page fit to keep: passwords and SAML fields removed
}
__all__ = ["Account", "AccountPicker", "Evidence", "FastBrowser", "Form", "JourneyOutcome", "JourneyUser",
           "LoginFields", "Page", "RunContext", "SSOOutcome", "Trail", "WebSettings", "__version__", "parse_forms",
           "redact_page", "sso_login"]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'authbench' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from .accounts import Account, AccountPicker
    from .journeys.fastbrowser import FastBrowser
    from .journeys.forms import Form, LoginFields, Page, parse_forms
    from .journeys.saml import SSOOutcome, sso_login
    from .journeys.settings import WebSettings
    from .journeys.trail import Trail, redact_page
    from .results.failures import Evidence
    from .user import JourneyOutcome, JourneyUser, RunContext
