"""`authbench run --target ldap://…` (or `lab:ldap`, `lab:ldaps`): LDAP binds in the same Grinder-style patterns.

`run.py` hands LDAP targets here; patterns, warm-up, repetitions and results are the SAML run's, only
the user class differs. Options of its own: the DN template or the search, StartTLS.
"""

from __future__ import annotations

import argparse
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlsplit

from . import EXIT_FAILURE, CliError, fault_options, openmodel, say
from .guards import claim_lock_and_check
from .options import accounts_from_args, check_url_port, lab_account_defaults, running_lab
from .prepared import PreparedRun, load_key, one_journey_preflight

LDAP_SCHEMES = ("ldap://", "ldaps://")
LAB_TARGETS = ("lab:ldap", "lab:ldaps")
SCOPES = ("base", "one", "sub")


def wants(target: str) -> bool:
    return target.startswith(LDAP_SCHEMES) or target in LAB_TARGETS


def add_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("LDAP (targets ldap://host:port, ldaps://host:port, lab:ldap, lab:ldaps)")
    group.add_argument("--bind-dn", help="DN template with {user} (lab default uid={user},ou=people,…)")
    group.add_argument("--search-base", help="search-then-bind: find the DN under this base first")
    group.add_argument("--search-filter", default="(uid={user})", help="with {user} (default (uid={user}))")
    group.add_argument("--search-scope", choices=SCOPES, default="sub")
    group.add_argument("--search-as", metavar="DN", help="bind as DN for the searches (default anonymous)")
    group.add_argument("--search-password-file", help="the --search-as password")
    group.add_argument("--start-tls", action="store_true", help="StartTLS on an ldap:// target")


def _lab(name: str, lab_dir: str) -> tuple[str, str, dict]:
    from authbench_lab.config import LDAP_PEOPLE

    config = running_lab(lab_dir)
    url = config.ldaps_url() if name == "lab:ldaps" else config.ldap_url()
    return url, str(config.ca_cert), {**lab_account_defaults(config), "bind_dn": f"uid={{user}},{LDAP_PEOPLE}"}


def _settings(args: argparse.Namespace, timeout: float):
    from ..ldap.client import SCOPES as SCOPE_CODES
    from ..ldap.client import Endpoint
    from ..users.ldap import USER_FIELD, LDAPSearch, LDAPSettings

    url, lab_defaults, ca = args.target, None, None
    if url in LAB_TARGETS:
        url, ca, lab_defaults = _lab(url, args.lab_dir)
    parts = urlsplit(url)
    if not parts.hostname:
        raise CliError(f"--target {args.target!r} is not an ldap(s)://host:port URL")
    check_url_port(url, "--target")
    if args.start_tls and url.startswith("ldaps"):
        raise CliError("--start-tls is for ldap:// targets; ldaps:// is TLS already")
    ca_file = args.ca_bundle or ca
    if ca_file and not Path(ca_file).is_file():
        raise CliError(f"--ca-bundle {ca_file!r} is not a readable file")
    endpoint = Endpoint(url, start_tls=args.start_tls, verify=not args.insecure, ca_file=ca_file, timeout=timeout)
    bind_dn = args.bind_dn or (lab_defaults or {}).get("bind_dn")
    if not args.search_base and (not bind_dn or USER_FIELD not in bind_dn):
        raise CliError("LDAP target: give --bind-dn with {user} (e.g. uid={user},ou=people,dc=example,dc=org) "
                       "or --search-base")
    picker, account_source = accounts_from_args(args, lab_defaults)
    search = None
    if args.search_base:
        if bool(args.search_as) != bool(args.search_password_file):
            raise CliError("--search-as and --search-password-file go together")
        identity = None
        if args.search_as:
            try:
                identity = (args.search_as, Path(args.search_password_file).read_text().rstrip("\n"))
            except (OSError, UnicodeDecodeError) as exc:
                raise CliError(f"cannot read --search-password-file: {getattr(exc, 'strerror', None) or exc}") from None
            if not identity[1]:
                raise CliError(f"--search-password-file {args.search_password_file!r} is empty")
        search = LDAPSearch(args.search_base, SCOPE_CODES[args.search_scope], args.search_filter, identity)
    return LDAPSettings(endpoint, picker, bind_dn or "", search, args.new_connection), account_source


def prepare(args: argparse.Namespace, plan, timeout: float, cell_limit: float) -> PreparedRun:
    from ..users.ldap import LDAPUser, preflight

    settings, account_source = _settings(args, timeout)
    url = settings.endpoint.url
    config = {"target": url, "journey": "ldap-bind", "ldap": settings.describe(), "timeout_s": timeout,
              "accounts": account_source}
    faults, lab_run_dir = fault_options.apply(args, settings, config)
    return PreparedRun(plan, settings, config, url, cell_limit, args.keep_failures, load_key(args, url), LDAPUser,
                       one_journey_preflight(preflight, url), faults, lab_run_dir)


def run(args: argparse.Namespace, plan, timeout: float, cell_limit: float) -> int:
    """The LDAP half of `authbench run`, after the plan is parsed."""
    from .. import headless
    from ..sockets import ports_running_low, time_wait_count

    prepared = prepare(args, plan, timeout, cell_limit)
    settings = prepared.settings
    port = settings.endpoint.port
    with ExitStack() as held:
        run_dir = claim_lock_and_check(args, prepared, held)
        say(f"target {prepared.target}: test {settings.describe()['mode']} ok; "
            f"plan {openmodel.plan_text(args, plan)}, warm-up {plan.warmup:g} s, {plan.repeat} repetition(s)")
        listen, listened = held.enter_context(prepared.cell_listeners(run_dir, say))

        def extras() -> dict:
            return {**({"time_wait_after": time_wait_count(port)} if args.new_connection else {}), **listened()}

        report = prepared.execute(run_dir, say=say, cell_extras=extras, resume=args.resume, listen=listen)
    headless.print_report(report, say)
    if args.new_connection:
        waiting = time_wait_count(port)
        say(f"sockets in TIME_WAIT towards port {port} after the run: {waiting}")
        warning = ports_running_low(waiting)
        if warning:
            say(warning)
    return 0 if report.complete else EXIT_FAILURE
