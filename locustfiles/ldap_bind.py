"""LDAP binds: `locust -f locustfiles/ldap_bind.py --host ldap://127.0.0.1:17001 --bind-dn 'uid={user},…'`.

`authbench run --target ldap://…` (or `lab:ldap`) drives the same user in exact threads × runs patterns;
the options are `authbench run`'s LDAP ones, under the same names.
"""

from __future__ import annotations

from authbench.kinds.ldap.user import LDAPUser
from authbench.plain_locust import under_plain_locust

__all__ = ["LDAPUser"]

under_plain_locust("ldap")
