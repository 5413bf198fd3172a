"""`authbench authrate`: OpenDJ authrate's options with authrate's meaning, on authbench's gevent client.

authrate's own parser (not argparse's usage errors): any mistake in the arguments, templates or
generators is one line on stderr and exit 89, as authrate does. Extensions are long options only:
`--ca-file`, `--seed`, `--search-as`/`--search-password-file`, `--timeout`, `--workers`.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

EXIT_ARGUMENTS = 89  # authrate: an error occurred while parsing the command-line arguments
PROG = "authbench authrate"
PASSWORD_ENV = "AUTHBENCH_AUTHRATE_BIND_PASSWORD"  # how --workers hand -w's password to their processes
SCOPES = ("base", "one", "sub", "subordinates")
DEREF = ("never", "always", "search", "find")
DEFAULT_INTERVAL_S = 5.0
DEFAULT_TIMEOUT_MS = 30000


class ArgumentsError(Exception):
    """Bad arguments: reported on one line, exit 89."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        raise ArgumentsError(message)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Registered for `authbench --help`; the arguments themselves go to authrate's parser."""
    parser = subparsers.add_parser("authrate", help="LDAP bind rate, OpenDJ authrate's options (-H for them)",
                                   add_help=False, prefix_chars="\0")
    parser.add_argument("argv", nargs="*")
    parser.set_defaults(handler=lambda args: main(args.argv))


def build_parser() -> _Parser:
    p = _Parser(prog=PROG, add_help=False, description="Measure bind throughput and response time.")
    p.add_argument("-H", "--help", action="store_true", help="show this help")
    conn = p.add_argument_group("LDAP connection")
    conn.add_argument("-h", "--hostname", default="localhost", help="server (on loopback only)")
    conn.add_argument("-p", "--port", type=int, help="default 389, or 636 with -Z")
    tls = conn.add_mutually_exclusive_group()
    tls.add_argument("-Z", "--useSsl", action="store_true", help="LDAPS")
    tls.add_argument("-q", "--useStartTls", action="store_true", help="StartTLS")
    conn.add_argument("-X", "--trustAll", action="store_true", help="do not verify the server's certificate")
    conn.add_argument("--ca-file", help="CA certificates to verify the server with (default: the system's)")
    conn.add_argument("-D", "--bindDn", help="bind DN template")
    pw = conn.add_mutually_exclusive_group()
    pw.add_argument("-w", "--bindPassword", help="bind password")
    pw.add_argument("-w:env", "--bindPassword:env", dest="password_env", metavar="VAR")
    pw.add_argument("-w:file", "--bindPassword:file", dest="password_file", metavar="FILE")
    conn.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_MS, help="ms per connect or operation")
    cmd = p.add_argument_group("command")
    cmd.add_argument("-b", "--baseDn", help="base DN template (search then bind)")
    cmd.add_argument("-s", "--searchScope", choices=SCOPES, default="sub")
    cmd.add_argument("-a", "--dereferencePolicy", choices=DEREF, default="never")
    cmd.add_argument("-g", "--argument", action="append", default=[], help="generator or static string")
    cmd.add_argument("-c", "--numConnections", type=int, default=1)
    cmd.add_argument("-f", "--keepConnectionsOpen", action="store_true")
    cmd.add_argument("-I", "--invalidPassword", type=float, default=0.0, help="percent of wrong passwords")
    cmd.add_argument("-M", "--targetThroughput", type=float, default=0.0)
    cmd.add_argument("-B", "--warmUpDuration", type=float, default=0.0)
    cmd.add_argument("-d", "--maxDuration", type=float, default=0.0)
    cmd.add_argument("-m", "--maxIterations", type=int, default=0)
    cmd.add_argument("-i", "--statInterval", type=float, default=DEFAULT_INTERVAL_S)
    cmd.add_argument("-S", "--scriptFriendly", action="store_true")
    cmd.add_argument("-e", "--percentile", type=float, action="append", default=[])
    cmd.add_argument("--seed", type=int, help="seed of the generators and of -I: a run's DNs repeat")
    cmd.add_argument("--search-as", metavar="DN", help="bind as DN for the searches (a service account)")
    cmd.add_argument("--search-password-file", metavar="FILE", help="its password")
    cmd.add_argument("--workers", type=int, default=1, help="processes sharing -c, -m and -M")
    cmd.add_argument("--worker-slot", help=argparse.SUPPRESS)  # I/N: this process is worker I of N
    p.add_argument("filter", nargs="?", help="filter template (search then bind)")
    p.add_argument("attributes", nargs="*", help="ignored: a search-then-bind asks for no attributes")
    return p


def _read(path: str, what: str) -> str:
    try:
        return Path(path).read_text().rstrip("\n")
    except OSError as exc:
        raise ArgumentsError(f"cannot read {what} {path!r}: {exc.strerror}") from None


def _password(args: argparse.Namespace) -> str:
    if args.password_env:
        if args.password_env not in os.environ:
            raise ArgumentsError(f"-w:env {args.password_env}: the environment variable is not set")
        return os.environ[args.password_env]
    if args.password_file:
        return _read(args.password_file, "-w:file")
    if args.bindPassword is None:
        raise ArgumentsError("no password: give -w PASSWORD, -w:env VARIABLE or -w:file FILE")
    return args.bindPassword


def _check_loopback(host: str) -> None:
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)}
    except OSError as exc:
        raise ArgumentsError(f"-h {host!r}: cannot resolve it ({exc})") from None
    if not all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses):
        raise ArgumentsError(f"-h {host!r}: authbench only loads servers on loopback (127.0.0.0/8, ::1)")


def _check_numbers(args: argparse.Namespace) -> None:
    rules = [(args.numConnections >= 1, "-c must be at least 1"),
             (0 <= args.invalidPassword <= 100, "-I must be between 0 and 100"),
             (args.targetThroughput >= 0, "-M must be 0 or more"),
             (args.warmUpDuration >= 0, "-B must be 0 or more"),
             (args.maxDuration >= 0, "-d must be 0 or more"),
             (args.maxIterations >= 0, "-m must be 0 or more"),
             (args.statInterval > 0, "-i must be more than 0"),
             (all(0 < e < 100 for e in args.percentile), "-e must be between 0 and 100"),
             (args.timeout > 0, "--timeout must be more than 0"),
             (1 <= args.workers <= args.numConnections, "--workers must be between 1 and -c"),
             (args.port is None or 0 < args.port < 65536, "-p must be a port number"),
             (not args.filter or args.baseDn is not None, "a filter needs -b, the base DN of the search"),
             (args.baseDn is None or args.filter, "-b needs a filter template after the options"),
             (bool(args.search_as) == bool(args.search_password_file),
              "--search-as and --search-password-file go together"),
             (args.bindDn is not None, "no bind DN: give -D with a DN template"),
             (not args.filter or args.filter.count("(") == args.filter.count(")"),
              f"filter {args.filter!r}: unbalanced parentheses")]
    for ok, message in rules:
        if not ok:
            raise ArgumentsError(message)


def prepare(argv: Sequence[str]):
    """Arguments to (plan, limits, endpoint, options); ArgumentsError on any mistake."""
    from ..authrate.loop import BindPlan, Limits, Search
    from ..authrate.templates import Arguments, TemplateError, parse_template
    from ..kinds.ldap.client import DEREF as DEREF_CODES
    from ..kinds.ldap.client import SCOPES as SCOPE_CODES
    from ..kinds.ldap.client import Endpoint

    args = build_parser().parse_args(list(argv))
    if args.help:
        return args, None
    _check_numbers(args)
    _check_loopback(args.hostname)
    password = _password(args)
    if args.ca_file and not Path(args.ca_file).is_file():
        raise ArgumentsError(f"--ca-file {args.ca_file!r} is not a readable file")
    try:
        arguments = Arguments(args.argument, args.seed)
        n = len(arguments)
        search = None
        if args.filter:
            identity = (args.search_as, _read(args.search_password_file, "--search-password-file")) \
                if args.search_as else None
            search = Search(parse_template(args.baseDn, "-b", n), SCOPE_CODES[args.searchScope],
                            DEREF_CODES[args.dereferencePolicy], parse_template(args.filter, "filter", n), identity)
        bind_dn = parse_template(args.bindDn, "-D", n + (1 if search else 0))
    except TemplateError as exc:
        raise ArgumentsError(str(exc)) from None
    host = f"[{args.hostname}]" if ":" in args.hostname else args.hostname
    port = args.port or (636 if args.useSsl else 389)
    endpoint = Endpoint(f"{'ldaps' if args.useSsl else 'ldap'}://{host}:{port}", start_tls=args.useStartTls,
                        verify=not args.trustAll, ca_file=args.ca_file, timeout=args.timeout / 1000)
    plan = BindPlan(bind_dn, password, arguments, args.invalidPassword, search)
    limits = Limits(args.numConnections, args.keepConnectionsOpen, args.targetThroughput, args.warmUpDuration,
                    args.maxDuration, args.maxIterations, args.statInterval)
    return args, (plan, limits, endpoint)


def main(argv: Sequence[str]) -> int:
    from ..authrate.ratetable import DEFAULT_PERCENTILES

    try:
        args, prepared = prepare(argv)
    except ArgumentsError as exc:
        print(f"{PROG}: error: {' '.join(str(exc).split())} (exit {EXIT_ARGUMENTS}; -H for help)", file=sys.stderr)
        return EXIT_ARGUMENTS
    if prepared is None:
        build_parser().print_help()
        return 0
    from ..authrate import run as authrate_run
    from ..authrate import workers
    from ..authrate.loop import Table

    plan, limits, endpoint = prepared
    if args.bindPassword is not None and not args.worker_slot:
        print(f"{PROG}: warning: -w puts the password on the command line, where `ps` shows it; prefer "
              "-w:env VARIABLE or -w:file FILE", file=sys.stderr, flush=True)
    if args.worker_slot:
        slot, count = (int(part) for part in args.worker_slot.split("/"))
        return workers.worker(plan, limits, endpoint, slot, count)
    percentiles = tuple(args.percentile) or DEFAULT_PERCENTILES
    if args.workers == 1:
        return authrate_run.run(plan, limits, endpoint, csv=args.scriptFriendly, percentiles=percentiles)
    table = Table(authrate_run.say, args.scriptFriendly, percentiles, None if limits.keep_open else endpoint.port)
    child_argv, child_env = worker_argv(argv, args.bindPassword)
    outcome = workers.run_workers(child_argv, limits, endpoint, table, args.workers, child_env)
    return authrate_run.finish(outcome, limits, args.scriptFriendly)


def worker_argv(argv: Sequence[str], password: str | None) -> tuple[list[str], dict[str, str]]:
    """The workers' arguments and extra environment: the parent's without --workers, and a -w password moved
    into the environment (PASSWORD_ENV), so no worker's command line shows it to `ps`."""
    out, skip = [], False
    for item in argv:
        if skip:
            skip = False
            continue
        dropped, value_follows = _dropped_for_workers(item)
        if dropped:
            skip = value_follows
        else:
            out.append(item)
    if password is None:
        return out, {}
    return [*out, "-w:env", PASSWORD_ENV], {PASSWORD_ENV: password}


def _dropped_for_workers(item: str) -> tuple[bool, bool]:
    """(`item` is --workers or a literal password option, its value is the next item)."""
    if item.startswith("--"):
        name, equals, _ = item.partition("=")
        literal_password = len(name) >= len("--bindP") and "--bindPassword".startswith(name)  # argparse abbreviates
        dropped = name == "--workers" or literal_password
        return dropped, dropped and not equals
    if item.startswith("-w") and not item.startswith("-w:"):  # -w VALUE or -wVALUE, not -w:env / -w:file
        return True, item == "-w"
    return False, False
