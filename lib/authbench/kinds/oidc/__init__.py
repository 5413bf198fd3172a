"""OpenID Connect: the authorization code flow with PKCE, authbench being a virtual relying party.

Target: `oidc+https://ISSUER` (or `--kind oidc --target https://ISSUER`): everything else is read from the
issuer's discovery document. `oidc+lab:keycloak-DESIGN` (or `--kind oidc --target lab:keycloak-DESIGN`) is the lab's
Keycloak realm, with its CA, accounts and registered RP (the secret read from the lab's 0600 file). The walk is
`flow.py`, the Locust user `user.OIDCUser`; see docs/oidc.md.
With `--rp target` the target is a real RP's protected URL instead, walked like an SP (`real_rp.py`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ... import embedded_lab
from ...errors import AuthbenchError
from ..base import Capabilities, CommonOptions, Journey, Kind
from ..common import accounts, check_url, load_key, tls_verify
from .grants import CLIENT_CREDENTIALS, CODE_FLOW, VARIANTS

PREFIX = "oidc+"  # oidc+https://issuer
SECRET_ENV = "AUTHBENCH_CLIENT_SECRET"  # where a confidential client's secret comes from by default
DEFAULT_REDIRECT_URI = "http://127.0.0.1:9/authbench/callback"  # loopback, port 9 (discard): nothing answers
DEFAULT_SCOPE = "openid"
AUTO = "auto"  # client_secret_basic with a secret, none (a public client) without
VIRTUAL, TARGET = "virtual", "target"  # --rp: authbench is the RP, or the app at --target is


@dataclass(frozen=True)
class Options:
    """The login form's options, --reuse-session (returning users), the RP's registration; --expect for a real RP
    (--rp target), whose journey ends with the app's page, not tokens."""

    login_form: str = "auto"
    username_field: str | None = None
    password_field: str | None = None
    reuse_session: bool = False
    new_connection: bool = False
    client_id: str | None = None
    client_secret_file: str | None = None
    client_secret: str = field(default="", repr=False)  # typed into the web UI's form: held in memory, no option
    client_auth: str = AUTO
    redirect_uri: str = DEFAULT_REDIRECT_URI
    scope: str = DEFAULT_SCOPE
    validate_id_token: bool = False
    userinfo: bool = False
    no_token_exchange: bool = False
    grant: str = "code-flow"  # grants.GRANTS: which journey; each also a named variant (grants.VARIANTS)
    post_logout_redirect_uri: str = ""
    rp: str = VIRTUAL
    expect: str | None = None
    expect_regex: str | None = None
    expect_status: int | None = None


def add_options(group: Any) -> None:
    from . import grants

    group.add_argument("--rp", choices=(VIRTUAL, TARGET), default=VIRTUAL,
                       help="virtual: authbench is the RP, --target the issuer (default); target: --target is a real "
                       "RP's protected URL, walked like an SP's (the app redeems the code)")
    add_client_options(group)
    grants.add_option(group)
    group.add_argument("--validate-id-token", action="store_true",
                       help="check the ID token: signature (the JWKS, fetched once), iss, aud, exp, nonce")
    group.add_argument("--userinfo", action="store_true", help="call the userinfo endpoint with the access token")
    group.add_argument("--no-token-exchange", action="store_true",
                       help="end each journey with the code on the redirect (no token request): the provider's login "
                       "work alone")


def add_client_options(group: Any) -> None:
    """The RP authbench plays, as registered at the provider (run's options, and check-cluster's for an OP)."""
    from .flow import CLIENT_AUTH

    group.add_argument("--client-id", help="the RP's client_id, as registered at the provider (a lab: target's "
                       "default: the lab's confidential RP)")
    group.add_argument("--client-secret-file", help=f"file holding the client secret (default ${SECRET_ENV}; "
                       "neither: a public client)")
    group.add_argument("--client-auth", choices=(AUTO, *CLIENT_AUTH), default=AUTO,
                       help="how the RP authenticates at the token endpoint (default: client_secret_basic with a "
                       "secret, none without)")
    group.add_argument("--redirect-uri", default=DEFAULT_REDIRECT_URI,
                       help=f"the RP's registered redirect_uri, caught, never called (default {DEFAULT_REDIRECT_URI})")
    group.add_argument("--scope", default=DEFAULT_SCOPE, help=f"scopes asked for (default {DEFAULT_SCOPE})")


def claims(target: str) -> bool:
    return target.startswith(PREFIX)


def issuer_of(target: str) -> str:
    issuer = target[len(PREFIX):] if target.startswith(PREFIX) else target
    check_url(issuer, "--target")
    return issuer


def client_secret(options: Options, lab_clients: dict | None = None) -> str:
    """The web form's, else from --client-secret-file, else the lab's file for one of its RPs ("" for its public
    one), else $AUTHBENCH_CLIENT_SECRET; "" for a public client. Never an option's value."""
    if options.client_secret:
        return options.client_secret
    if options.client_secret_file:
        return _read_secret(options.client_secret_file, "--client-secret-file")
    if lab_clients and options.client_id in lab_clients:
        path = lab_clients[options.client_id]
        return _read_secret(str(path), f"the lab's secret of {options.client_id}") if path else ""
    return os.environ.get(SECRET_ENV, "")


def _read_secret(path: str, what: str) -> str:
    try:
        secret = Path(path).read_text().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise AuthbenchError(f"cannot read {what} {path!r}: {getattr(exc, 'strerror', None) or exc}") from None
    if not secret:
        raise AuthbenchError(f"{what} {path!r} is empty; put the secret in it")
    return secret


@dataclass(frozen=True)
class Where:
    """What the target resolves to: the issuer, and for a lab cluster its CA, accounts, RPs and backend."""

    issuer: str
    lab_ca: str | None = None
    lab_accounts: dict | None = None
    lab_clients: dict | None = None
    backend: str | None = None


def resolve(target: str, lab_dir: str) -> Where:
    """`oidc+https://ISSUER`, `https://ISSUER` (with --kind oidc), or `[oidc+]lab:CLUSTER` (the lab's Keycloak)."""
    name = target[len(PREFIX):] if target.startswith(PREFIX) else target
    if not name.startswith(embedded_lab.PREFIX):
        return Where(issuer_of(target))
    backend = name[len(embedded_lab.PREFIX):]
    config = embedded_lab.running(lab_dir)
    op = embedded_lab.oidc_provider(config, backend)
    return Where(op["issuer"], op["ca"], embedded_lab.account_defaults(config), op["clients"], backend)


def client_of(options: Options, where: Where):
    """The RP authbench plays (flow.Client): --client-id (a lab's default RP without it), its secret, its auth."""
    from .flow import BASIC, NONE, Client

    if where.lab_clients and not options.client_id:  # the lab's confidential RP
        options = replace(options, client_id=next(iter(where.lab_clients)))
    if not options.client_id:
        raise AuthbenchError("an OIDC target needs --client-id: the RP's client_id as registered at the provider")
    check_url(options.redirect_uri, "--redirect-uri")
    if options.grant != CLIENT_CREDENTIALS and "openid" not in options.scope.split():
        raise AuthbenchError(f"--scope {options.scope!r} lacks openid: an OpenID Connect login asks for it")
    secret = client_secret(options, where.lab_clients)
    auth = options.client_auth if options.client_auth != AUTO else BASIC if secret else NONE
    if auth != NONE and not secret:
        raise AuthbenchError(f"--client-auth {auth} needs the client secret: set ${SECRET_ENV} or give "
                             "--client-secret-file")
    return Client(options.client_id, options.redirect_uri, options.scope, auth, secret)


def prepare(common: CommonOptions, options: Options) -> Journey:
    from ...journeys.settings import login_fields
    from .user import OIDCSettings, OIDCUser, preflight

    if options.rp == TARGET:
        from .real_rp import prepare as through_real_rp

        return through_real_rp(common, options, common.target.removeprefix(PREFIX))
    refused = next((flag for flag, given in (("--expect", options.expect), ("--expect-regex", options.expect_regex),
                    ("--expect-status", options.expect_status is not None)) if given), None)
    if refused:
        raise AuthbenchError(f"{refused} is for a real RP: a virtual RP's journey ends with tokens, not a page of "
                             "an app; give --rp target with the app's protected URL as --target, or drop it")
    where = resolve(common.target, common.lab_dir)
    issuer = where.issuer
    client = client_of(options, where)
    if options.grant != CODE_FLOW or options.post_logout_redirect_uri:
        from . import grants

        if options.no_token_exchange:
            raise AuthbenchError(f"--no-token-exchange is for --grant code-flow, not {options.grant}")
        return grants.prepare(common, options, where, client, DEFAULT_SCOPE)
    auth = client.auth
    verify = tls_verify(common.ca_bundle, common.insecure, where.lab_ca)
    picker, account_source = accounts(common.accounts, where.lab_accounts)

    if options.no_token_exchange and (options.validate_id_token or options.userinfo):
        raise AuthbenchError("--no-token-exchange ends the journey with the code: no tokens for --validate-id-token "
                             "or --userinfo")
    settings = OIDCSettings(issuer, picker, verify, common.timeout,
                            login_fields(options.login_form, options.username_field, options.password_field),
                            options.reuse_session, options.new_connection, pace=common.pace, client=client,
                            validate_id_token=options.validate_id_token, userinfo=options.userinfo,
                            token_exchange=not options.no_token_exchange)
    record = {"target": issuer, "journey": KIND.name, "flow": "authorization code + PKCE S256",
              "client_id": client.client_id, "client_auth": auth, "redirect_uri": client.redirect_uri,
              "scope": client.scope, "validate_id_token": options.validate_id_token, "userinfo": options.userinfo,
              "reuse_session": options.reuse_session, "token_exchange": not options.no_token_exchange,
              "tls_verify": verify if isinstance(verify, bool) else f"CA bundle {verify}",
              "timeout_s": common.timeout, "accounts": account_source, "login_form": settings.describe_fields(),
              "new_connection": options.new_connection}
    checks = " and ID token valid" if options.validate_id_token else ""
    ends = "code received (no token request)" if options.no_token_exchange else f"tokens received{checks}"
    port = urlsplit(issuer).port or (443 if issuer.startswith("https") else 80)
    on_lab = where.backend is not None
    return Journey(OIDCUser, settings, record, issuer, load_key(issuer, common.lab_dir, on_lab),
                   lambda: preflight(settings), lab_dir=common.lab_dir if on_lab else "", backend=where.backend,
                   churn_port=port if options.new_connection else None,
                   summary_line=f"issuer {issuer}: code flow, {ends}")


# --mix code-flow=1,refresh=5; returning users: the provider's session (virtual RP) or a real RP's (--rp target)
KIND = Kind("oidc", "OIDC code flow", "oidc+https://ISSUER or oidc+lab:keycloak-DESIGN (or --kind oidc --target "
            "https://ISSUER); with --rp target a real RP's protected URL", claims, Options, prepare,
            Capabilities(returning_users=True), add_options, variants=VARIANTS)
