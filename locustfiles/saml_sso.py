"""SAML 2.0 SP-initiated SSO, browser-like: `locust -f locustfiles/saml_sso.py --host <SP protected URL>`.

`authbench run` drives the same user in exact threads × runs patterns; under plain Locust it runs for
as long as Locust says (users, spawn rate, run time, web UI), with authbench's options added.
"""

from __future__ import annotations

from locust import events

from authbench.users.saml import SAMLUser, add_locust_options, context_from_locust_options

__all__ = ["SAMLUser"]


@events.init_command_line_parser.add_listener
def _options(parser) -> None:
    add_locust_options(parser)


@events.init.add_listener
def _context(environment, **_kwargs) -> None:
    if getattr(environment, "authbench", None) is None:  # authbench's runner sets its own
        environment.authbench = context_from_locust_options(environment.parsed_options, environment.host)
