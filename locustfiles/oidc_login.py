"""OpenID Connect logins, authbench a virtual RP: `locust -f locustfiles/oidc_login.py --host https://ISSUER
--client-id ID` (the client secret from $AUTHBENCH_CLIENT_SECRET or --client-secret-file).

`authbench run --target oidc+https://ISSUER` drives the same user in exact threads × runs patterns; under plain
Locust it runs for as long as Locust says (users, spawn rate, run time, web UI), with `authbench run`'s OIDC
options added under the same names (--client-id, --client-auth, --scope, --validate-id-token, --grant, …).
`--grant refresh|client-credentials|introspection|logout` runs that journey's user instead of the code flow's.
"""

from __future__ import annotations

from authbench.kinds.oidc.user import OIDCUser
from authbench.plain_locust import under_plain_locust

__all__ = ["OIDCUser"]

under_plain_locust("oidc")
