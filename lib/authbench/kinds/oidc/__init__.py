"""OpenID Connect: the authorization code flow with PKCE, authbench being a virtual relying party.

Target: `oidc+https://ISSUER` (or `--kind oidc --target https://ISSUER`): everything else is read from the
issuer's discovery document. The walk is `flow.py`, the Locust user `user.OIDCUser`; see docs/oidc.md.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ...errors import AuthbenchError
from ..base import Capabilities, CommonOptions, Journey, Kind
from ..common import accounts, check_url, load_key, tls_verify
from .grants import VARIANTS

PREFIX = "oidc+"  # oidc+https://issuer
SECRET_ENV = "AUTHBENCH_CLIENT_SECRET"  # where a confidential client's secret comes from by default
DEFAULT_REDIRECT_URI = "http://127.0.0.1:9/authbench/callback"  # loopback, port 9 (discard): nothing answers
DEFAULT_SCOPE = "openid"
AUTO = "auto"  # client_secret_basic with a secret, none (a public client) without


@dataclass(frozen=True)
class Options:
    """The login form's options (not --expect or --reuse-session: the journey ends with tokens, each one fresh)."""

    login_form: str = "auto"
    username_field: str | None = None
    password_field: str | None = None
    new_connection: bool = False
    client_id: str | None = None
    client_secret_file: str | None = None
    client_auth: str = AUTO
    redirect_uri: str = DEFAULT_REDIRECT_URI
    scope: str = DEFAULT_SCOPE
    validate_id_token: bool = False
    userinfo: bool = False
    grant: str = "code-flow"  # grants.GRANTS: which journey; each also a named variant (grants.VARIANTS)
    post_logout_redirect_uri: str = ""


def add_options(group: Any) -> None:
    from . import grants
    from .flow import CLIENT_AUTH

    group.add_argument("--client-id", help="the RP's client_id, as registered at the provider")
    group.add_argument("--client-secret-file", help=f"file holding the client secret (default ${SECRET_ENV}; "
                       "neither: a public client)")
    group.add_argument("--client-auth", choices=(AUTO, *CLIENT_AUTH), default=AUTO,
                       help="how the RP authenticates at the token endpoint (default: client_secret_basic with a "
                       "secret, none without)")
    group.add_argument("--redirect-uri", default=DEFAULT_REDIRECT_URI,
                       help=f"the RP's registered redirect_uri, caught, never called (default {DEFAULT_REDIRECT_URI})")
    group.add_argument("--scope", default=DEFAULT_SCOPE, help=f"scopes asked for (default {DEFAULT_SCOPE})")
    group.add_argument("--validate-id-token", action="store_true",
                       help="check the ID token: signature (the JWKS, fetched once), iss, aud, exp, nonce")
    group.add_argument("--userinfo", action="store_true", help="call the userinfo endpoint with the access token")
    grants.add_option(group)


def claims(target: str) -> bool:
    return target.startswith(PREFIX)


def issuer_of(target: str) -> str:
    issuer = target[len(PREFIX):] if target.startswith(PREFIX) else target
    check_url(issuer, "--target")
    return issuer


def client_secret(options: Options) -> str:
    """From --client-secret-file, else $AUTHBENCH_CLIENT_SECRET; "" for a public client. Never an option's value."""
    if options.client_secret_file:
        try:
            secret = Path(options.client_secret_file).read_text().strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise AuthbenchError(f"cannot read --client-secret-file {options.client_secret_file!r}: "
                                 f"{getattr(exc, 'strerror', None) or exc}") from None
        if not secret:
            raise AuthbenchError(f"--client-secret-file {options.client_secret_file!r} is empty; put the secret in it")
        return secret
    return os.environ.get(SECRET_ENV, "")


def prepare(common: CommonOptions, options: Options) -> Journey:
    from ...journeys.settings import login_fields
    from . import grants
    from .flow import BASIC, NONE, Client
    from .user import OIDCSettings, OIDCUser, preflight

    issuer = issuer_of(common.target)
    if not options.client_id:
        raise AuthbenchError("an OIDC target needs --client-id: the RP's client_id as registered at the provider")
    check_url(options.redirect_uri, "--redirect-uri")
    secret = client_secret(options)
    auth = options.client_auth if options.client_auth != AUTO else BASIC if secret else NONE
    if auth != NONE and not secret:
        raise AuthbenchError(f"--client-auth {auth} needs the client secret: set ${SECRET_ENV} or give "
                             "--client-secret-file")
    if options.grant != grants.CODE_FLOW or options.post_logout_redirect_uri:
        return grants.prepare(common, options, issuer, secret, auth, DEFAULT_SCOPE)
    if "openid" not in options.scope.split():
        raise AuthbenchError(f"--scope {options.scope!r} lacks openid: an OpenID Connect login asks for it")
    verify = tls_verify(common.ca_bundle, common.insecure)
    picker, account_source = accounts(common.accounts, None)

    client = Client(options.client_id, options.redirect_uri, options.scope, auth, secret)
    settings = OIDCSettings(issuer, picker, verify, common.timeout,
                            login_fields(options.login_form, options.username_field, options.password_field),
                            False, options.new_connection, pace=common.pace, client=client,
                            validate_id_token=options.validate_id_token, userinfo=options.userinfo)
    record = {"target": issuer, "journey": KIND.name, "flow": "authorization code + PKCE S256",
              "client_id": client.client_id, "client_auth": auth, "redirect_uri": client.redirect_uri,
              "scope": client.scope, "validate_id_token": options.validate_id_token, "userinfo": options.userinfo,
              "tls_verify": verify if isinstance(verify, bool) else f"CA bundle {verify}",
              "timeout_s": common.timeout, "accounts": account_source, "login_form": settings.describe_fields(),
              "new_connection": options.new_connection}
    checks = " and ID token valid" if options.validate_id_token else ""
    port = urlsplit(issuer).port or (443 if issuer.startswith("https") else 80)
    return Journey(OIDCUser, settings, record, issuer, load_key(issuer, common.lab_dir, False),
                   lambda: preflight(settings), churn_port=port if options.new_connection else None,
                   summary_line=f"issuer {issuer}: code flow, tokens received{checks}")


KIND = Kind("oidc", "OIDC code flow", "oidc+https://ISSUER (or --kind oidc --target https://ISSUER)", claims,
            Options, prepare, Capabilities(), add_options, variants=VARIANTS)  # --mix code-flow=1,refresh=5
