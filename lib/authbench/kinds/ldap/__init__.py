"""LDAP binds, as OpenDJ's authrate measures them: a simple bind per journey, or search-then-bind.

Targets: ldap://host:port, ldaps://host:port, `lab:ldap`, `lab:ldaps`. The client (`client.py`) waits on its
socket through gevent, so a worker's users overlap their binds; the Locust user is `user.LDAPUser`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ... import embedded_lab
from ...errors import AuthbenchError
from ..base import Capabilities, CommonOptions, Journey, Kind
from ..common import accounts, check_url_port, load_key
from ..preflight import OneJourneyCheck

SCHEMES = ("ldap://", "ldaps://")
LAB_TARGETS = ("lab:ldap", "lab:ldaps")
SCOPES = ("base", "one", "sub")


@dataclass(frozen=True)
class Options:
    bind_dn: str | None = None
    search_base: str | None = None
    search_filter: str = "(uid={user})"
    search_scope: str = "sub"
    search_as: str | None = None
    search_password_file: str | None = None
    start_tls: bool = False
    new_connection: bool = False


def add_options(group: Any) -> None:
    group.add_argument("--bind-dn", help="DN template with {user} (lab default uid={user},ou=people,…)")
    group.add_argument("--search-base", help="search-then-bind: find the DN under this base first")
    group.add_argument("--search-filter", default="(uid={user})", help="with {user} (default (uid={user}))")
    group.add_argument("--search-scope", choices=SCOPES, default="sub")
    group.add_argument("--search-as", metavar="DN", help="bind as DN for the searches (default anonymous)")
    group.add_argument("--search-password-file", help="the --search-as password")
    group.add_argument("--start-tls", action="store_true", help="StartTLS on an ldap:// target")


def claims(target: str) -> bool:
    return target.startswith(SCHEMES) or target in LAB_TARGETS


def prepare(common: CommonOptions, options: Options) -> Journey:
    from .client import SCOPES as SCOPE_CODES
    from .client import Endpoint
    from .user import USER_FIELD, LDAPSearch, LDAPSettings, LDAPUser, preflight

    url, lab_defaults, ca = common.target, None, None
    on_lab = url in LAB_TARGETS
    if on_lab:
        config = embedded_lab.running(common.lab_dir)
        url = config.ldaps_url() if common.target == "lab:ldaps" else config.ldap_url()
        ca = str(config.ca_cert)
        lab_defaults = {**embedded_lab.account_defaults(config), "bind_dn": embedded_lab.people_dn_template()}
    if not urlsplit(url).hostname:
        raise AuthbenchError(f"--target {common.target!r} is not an ldap(s)://host:port URL")
    check_url_port(url, "--target")
    if options.start_tls and url.startswith("ldaps"):
        raise AuthbenchError("--start-tls is for ldap:// targets; ldaps:// is TLS already")
    ca_file = common.ca_bundle or ca
    if ca_file and not Path(ca_file).is_file():
        raise AuthbenchError(f"--ca-bundle {ca_file!r} is not a readable file")
    endpoint = Endpoint(url, start_tls=options.start_tls, verify=not common.insecure, ca_file=ca_file,
                        timeout=common.timeout)
    bind_dn = options.bind_dn or (lab_defaults or {}).get("bind_dn")
    if not options.search_base and (not bind_dn or USER_FIELD not in bind_dn):
        raise AuthbenchError("LDAP target: give --bind-dn with {user} (e.g. uid={user},ou=people,dc=example,dc=org) "
                             "or --search-base")
    picker, account_source = accounts(common.accounts, lab_defaults)
    search = None
    if options.search_base:
        search = LDAPSearch(options.search_base, SCOPE_CODES[options.search_scope], options.search_filter,
                            _search_identity(options))
    settings = LDAPSettings(endpoint, picker, bind_dn or "", search, options.new_connection, pace=common.pace)
    record = {"target": url, "journey": "ldap-bind", "ldap": settings.describe(), "timeout_s": common.timeout,
              "accounts": account_source}
    described = settings.describe()["mode"]
    return Journey(LDAPUser, settings, record, url, load_key(url, common.lab_dir, on_lab),
                   lambda: _check(preflight, settings, url), lab_dir=common.lab_dir if on_lab else "",
                   churn_port=endpoint.port if options.new_connection else None,
                   summary_line=f"target {url}: test {described} ok")


def _check(preflight: Any, settings: Any, url: str) -> OneJourneyCheck:
    return OneJourneyCheck(url, preflight(settings))


def _search_identity(options: Options) -> tuple[str, str] | None:
    if bool(options.search_as) != bool(options.search_password_file):
        raise AuthbenchError("--search-as and --search-password-file go together")
    if not options.search_as:
        return None
    try:
        password = Path(options.search_password_file).read_text().rstrip("\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise AuthbenchError(f"cannot read --search-password-file: {getattr(exc, 'strerror', None) or exc}") from None
    if not password:
        raise AuthbenchError(f"--search-password-file {options.search_password_file!r} is empty")
    return options.search_as, password


KIND = Kind("ldap", "LDAP binds", "ldap://host:port, ldaps://host:port, lab:ldap, lab:ldaps", claims, Options,
            prepare, Capabilities(), add_options,
            variants={"bind": {"new_connection": False},  # binds on the user's kept connection
                      "bind-new-connection": {"new_connection": True}})  # a connection per bind
