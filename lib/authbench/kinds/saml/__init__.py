"""SAML 2.0 SP-initiated SSO, browser-like: through the SP at the target, or with authbench as a virtual SP.

Targets: an SP's protected URL (https://sp/secure/), `lab:BACKEND` (a cluster of the running lab), or with
`--sp virtual` the IdP's SSO URL. The walk is `journeys.saml.sso_login`; the Locust user is `user.SAMLUser`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ... import embedded_lab
from ...errors import AuthbenchError
from ..base import Capabilities, CommonOptions, Journey, Kind
from ..common import LoginOptions, accounts, check_url, load_key, success_rule, tls_verify


@dataclass(frozen=True)
class Options(LoginOptions):
    sp: str = "target"
    verify_signature: bool = False
    idp_cert: str | None = None


def add_options(group: Any) -> None:
    group.add_argument("--sp", choices=("target", "virtual"), default="target",
                       help="target: go through the SP at --target (default); virtual: authbench is the SP")
    group.add_argument("--verify-signature", action="store_true",
                       help="virtual SP: check the Response's signature in-process")
    group.add_argument("--idp-cert", help="virtual SP: the IdP's signing certificate (PEM) or metadata (XML)")


def claims(target: str) -> bool:
    """The fallback kind: any http(s) URL, and lab:BACKEND."""
    return True


def prepare(common: CommonOptions, options: Options) -> Journey:
    from .user import SAMLSettings, SAMLUser, preflight

    target, lab_ca, lab_defaults, backend = common.target, None, None, None
    if target.startswith(embedded_lab.PREFIX):
        backend = target[len(embedded_lab.PREFIX):]
        config = embedded_lab.running(common.lab_dir)
        embedded_lab.check_backend(config, backend)
        if options.sp == "virtual" and embedded_lab.is_keycloak(backend):
            raise AuthbenchError(f"--sp virtual is for the reference IdP's clusters; lab:{backend} is real Keycloak, "
                                 "which knows only the lab's SP: drop --sp virtual")
        target = config.lb_url(backend) + embedded_lab.SSO_PATH if options.sp == "virtual" \
            else config.sp_url(backend) + embedded_lab.PROTECTED_PATH
        lab_ca = str(config.ca_cert)
        lab_defaults = {**embedded_lab.account_defaults(config), "metadata_dir": config.metadata_dir,
                        "idp_cert": config.cluster_dir(backend)}
    check_url(target, "--target")
    verify = tls_verify(common.ca_bundle, common.insecure, lab_ca)
    rule = success_rule(options.expect, options.expect_regex, options.expect_status)
    picker, account_source = accounts(common.accounts, lab_defaults)
    try:
        settings = SAMLSettings.build(
            target=target, accounts=picker, verify=verify, timeout=common.timeout, login_form=options.login_form,
            username_field=options.username_field, password_field=options.password_field,
            reuse_session=options.reuse_session, new_connection=options.new_connection,
            virtual_sp=options.sp == "virtual", verify_signature=options.verify_signature,
            idp_cert=options.idp_cert or (lab_defaults and str(lab_defaults["idp_cert"] / "signing.crt")),
            register_metadata_in=lab_defaults and lab_defaults["metadata_dir"], rule=rule, pace=common.pace,
        )
    except ValueError as exc:
        raise AuthbenchError(str(exc)) from None
    record = {"target": target, "journey": KIND.name, "sp": options.sp, "verify_signature": options.verify_signature,
              "tls_verify": verify if isinstance(verify, bool) else f"CA bundle {verify}",
              "timeout_s": common.timeout, "accounts": account_source, "login_form": settings.describe_fields(),
              "reuse_session": options.reuse_session, "new_connection": options.new_connection,
              "success_rule": rule.describe()}
    on_lab = backend is not None
    return Journey(SAMLUser, settings, record, target,
                   load_key(target, common.lab_dir, on_lab), lambda: preflight(settings),
                   lab_dir=common.lab_dir if on_lab else "", backend=backend,
                   churn_port=_port(target) if options.new_connection else None)


def _port(url: str) -> int:
    from urllib.parse import urlsplit

    return urlsplit(url).port or (443 if url.startswith("https") else 80)


KIND = Kind("saml", "SAML SSO", "an SP's protected URL, lab:BACKEND; with --sp virtual the IdP's SSO URL",
            claims, Options, prepare, Capabilities(returning_users=True), add_options,
            variants={"login": {"reuse_session": False},  # a fresh login each journey
                      "returning-sso": {"reuse_session": True}})  # a user keeping its IdP session
