"""SAML 2.0 SP-initiated SSO, browser-like: `locust -f locustfiles/saml_sso.py --host <SP protected URL>`.

`authbench run` drives the same user in exact threads × runs patterns; under plain Locust it runs for
as long as Locust says (users, spawn rate, run time, web UI), with authbench's options added.
"""

from __future__ import annotations

from authbench.users.journey import for_plain_locust
from authbench.users.saml import SAMLUser, add_locust_options, context_from_locust_options

__all__ = ["SAMLUser"]

for_plain_locust(add_locust_options, context_from_locust_options)
