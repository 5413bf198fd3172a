"""LDAP simple binds: `locust -f locustfiles/ldap_bind.py --host ldap://127.0.0.1:17001`.

`authbench run --target ldap://…` (or `lab:ldap`) drives the same user in exact threads × runs patterns.
"""

from __future__ import annotations

from authbench.users.journey import for_plain_locust
from authbench.users.ldap import LDAPUser, add_locust_options, context_from_locust_options

__all__ = ["LDAPUser"]

for_plain_locust(add_locust_options, context_from_locust_options)
