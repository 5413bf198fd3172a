"""SAML 2.0 SP-initiated SSO, browser-like: `locust -f locustfiles/saml_sso.py --host <SP protected URL>`.

`authbench run` drives the same user in exact threads × runs patterns; under plain Locust it runs for
as long as Locust says (users, spawn rate, run time, web UI), with `authbench run`'s SAML options added
under the same names (--ca-bundle, --insecure, --timeout, --accounts-template, --login-form, --expect, …).
"""

from __future__ import annotations

from authbench.kinds.saml.user import SAMLUser
from authbench.plain_locust import under_plain_locust

__all__ = ["SAMLUser"]

under_plain_locust("saml")
