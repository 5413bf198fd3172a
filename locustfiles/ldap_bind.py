"""LDAP simple binds: `locust -f locustfiles/ldap_bind.py --host ldap://127.0.0.1:17001`.

`authbench run --target ldap://…` (or `lab:ldap`) drives the same user in exact threads × runs patterns.
"""

from __future__ import annotations

from locust import events

from authbench.users.ldap import LDAPUser, add_locust_options, context_from_locust_options

__all__ = ["LDAPUser"]


@events.init_command_line_parser.add_listener
def _options(parser) -> None:
    add_locust_options(parser)


@events.init.add_listener
def _context(environment, **_kwargs) -> None:
    if getattr(environment, "authbench", None) is None:  # authbench's runner sets its own
        environment.authbench = context_from_locust_options(environment.parsed_options, environment.host)
