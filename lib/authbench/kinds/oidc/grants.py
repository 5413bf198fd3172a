"""`--grant`: which OIDC journey a run makes, beside the code flow. Each name is also one of the kind's named
variants (`VARIANTS`, an option override each), so a traffic mix can say `code-flow=1,refresh=5`.

- `code-flow` (default): the authorization code flow with PKCE, one whole login per journey (flow.py);
- `refresh`: each user logs in once with the code flow, keeps its tokens and refreshes them every journey;
- `client-credentials`: no user, no browser: the RP's own token at the token endpoint (a confidential client);
- `introspection`: each user logs in once, then its access token is introspected with the RP's credentials;
- `logout`: a code-flow login, then RP-initiated logout at the end-session endpoint.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from ...errors import AuthbenchError
from ..base import CommonOptions, Journey
from ..common import accounts, check_url, load_key, tls_verify
from .grant_flows import CLIENT_CREDENTIALS_GRANT as CLIENT_CREDENTIALS
from .grant_flows import CODE_FLOW, GRANTS
from .grant_flows import INTROSPECTION_GRANT as INTROSPECTION
from .grant_flows import LOGOUT_GRANT as LOGOUT
from .grant_flows import REFRESH_GRANT as REFRESH

VARIANTS: dict[str, dict[str, Any]] = {grant: {"grant": grant} for grant in GRANTS}  # name → option overrides
LOGS_IN = (REFRESH, INTROSPECTION, LOGOUT)  # grants whose users log in with the code flow first
CONFIDENTIAL = (CLIENT_CREDENTIALS, INTROSPECTION)  # grants that need the client secret
DESCRIPTIONS = {
    REFRESH: "refresh-token grant (each user logs in once with the code flow)",
    CLIENT_CREDENTIALS: "client-credentials grant (no user)",
    INTROSPECTION: "token introspection (each user logs in once with the code flow)",
    LOGOUT: "code flow, then RP-initiated logout",
}
SUCCESS = {
    REFRESH: "tokens refreshed",
    CLIENT_CREDENTIALS: "an access token for the client",
    INTROSPECTION: "the access token introspected active",
    LOGOUT: "logged in and out",
}


def add_option(group: Any) -> None:
    group.add_argument("--grant", choices=GRANTS, default=CODE_FLOW,
                       help="the journey: code-flow (default, a whole login), refresh (log in once, then refresh), "
                       "client-credentials (no user), introspection (log in once, then introspect the access token), "
                       "logout (log in, then RP-initiated logout)")
    group.add_argument("--post-logout-redirect-uri", default="",
                       help="--grant logout: the RP's registered post-logout redirect URI, caught, never called "
                       "(default none: the provider's own signed-out page is success)")


def prepare(common: CommonOptions, options: Any, issuer: str, secret: str, auth: str, default_scope: str) -> Journey:
    """The journey of a grant other than the code flow, from the kind's checked options (`__init__.prepare`)."""
    from ...accounts import Account, AccountPicker
    from ...journeys.settings import login_fields
    from .flow import NONE, Client
    from .grant_user import USERS, GrantSettings, preflight

    grant = options.grant
    if grant in CONFIDENTIAL and auth == NONE:
        raise AuthbenchError(f"--grant {grant} needs a confidential client: give its secret ($AUTHBENCH_CLIENT_SECRET "
                             "or --client-secret-file), not --client-auth none")
    if getattr(options, "reuse_session", False):  # returning users are the code flow's
        raise AuthbenchError(f"--reuse-session is for --grant code-flow, not {grant}")
    if options.post_logout_redirect_uri:
        if grant != LOGOUT:
            raise AuthbenchError("--post-logout-redirect-uri is for --grant logout")
        check_url(options.post_logout_redirect_uri, "--post-logout-redirect-uri")
    scope = options.scope
    if grant == CLIENT_CREDENTIALS:
        scope = "" if scope == default_scope else scope  # openid means nothing without a user: none by default
        picker = AccountPicker([Account(options.client_id, "")])  # no user: samples name the client
        account_source: dict[str, Any] = {"type": "none: the client's own token"}
    else:
        if "openid" not in scope.split():
            raise AuthbenchError(f"--scope {scope!r} lacks openid: an OpenID Connect login asks for it")
        try:
            picker, account_source = accounts(common.accounts, None)
        except AuthbenchError as exc:
            raise AuthbenchError(f"{exc} (--grant {grant} logs users in with the code flow)") from None
    verify = tls_verify(common.ca_bundle, common.insecure)
    client = Client(options.client_id, options.redirect_uri, scope, auth, secret)
    settings = GrantSettings(issuer, picker, verify, common.timeout,
                             login_fields(options.login_form, options.username_field, options.password_field),
                             False, options.new_connection, pace=common.pace, client=client,
                             validate_id_token=options.validate_id_token, userinfo=options.userinfo, grant=grant,
                             post_logout_redirect_uri=options.post_logout_redirect_uri)
    record = {"target": issuer, "journey": "oidc", "grant": grant, "flow": DESCRIPTIONS[grant],
              "client_id": client.client_id, "client_auth": auth, "scope": scope,
              "tls_verify": verify if isinstance(verify, bool) else f"CA bundle {verify}",
              "timeout_s": common.timeout, "accounts": account_source, "new_connection": options.new_connection}
    if grant in LOGS_IN:
        record |= {"redirect_uri": client.redirect_uri, "login_form": settings.describe_fields(),
                   "validate_id_token": options.validate_id_token, "userinfo": options.userinfo}
    if grant == LOGOUT:
        record["post_logout_redirect_uri"] = options.post_logout_redirect_uri or "none"
    port = urlsplit(issuer).port or (443 if issuer.startswith("https") else 80)
    return Journey(USERS[grant], settings, record, issuer, load_key(issuer, common.lab_dir, False),
                   lambda: preflight(settings), churn_port=port if options.new_connection else None,
                   summary_line=f"issuer {issuer}: {SUCCESS[grant]}")
