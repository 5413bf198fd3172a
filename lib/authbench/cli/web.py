"""`authbench web`: Locust's web UI with authbench's page for plans, live figures and the last campaign."""

from __future__ import annotations

import argparse
import os
import shlex
import socket
from pathlib import Path

from ..errors import AuthbenchError
from .console import say
from .options import add_lab_dir_option

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8089


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from ..web import AUTH_ENV

    web = subparsers.add_parser("web", help="web UI: start plans, watch the Grinder table fill, last campaign")
    web.add_argument("--web-host", default=DEFAULT_HOST,
                     help=f"address to listen on (default {DEFAULT_HOST}; any other needs a login)")
    web.add_argument("--web-port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    web.add_argument("--results", default="results",
                     help="results folder: runs started here are written to it, its newest campaign is shown")
    web.add_argument("--web-login", action="store_true",
                     help=f"require a login (always on when an account is configured: ${AUTH_ENV} or --web-auth-file)")
    web.add_argument("--web-auth-file", help="file whose first line is USER:PASSWORD for the login")
    web.add_argument("--web-allowed-host", action="append", default=[], metavar="NAME",
                     help="a host name the UI may be reached by (IP addresses and localhost always are; other "
                     "names are refused, against DNS rebinding)")
    add_lab_dir_option(web)
    web.add_argument("-f", "--locustfile", metavar="FILE",
                     help="your own journey (a class extending authbench.JourneyUser) for the runs started here")
    web.add_argument("--user-class", metavar="NAME", help="which class of --locustfile (when it has several)")
    web.add_argument("--run-options", default="",
                     help="further `authbench run` options for runs started here, e.g. "
                     "'--ca-bundle ca.pem --accounts-csv accounts.csv' (never a password)")
    web.add_argument("--files-dir", action="append", default=[], metavar="DIR",
                     help="a folder whose files the form may name (CA bundles), by bare name; without it the form "
                     "names no file (repeatable)")
    web.add_argument("--allow-target", action="append", default=[], metavar="HOST",
                     help="a host the form may load besides the lab and loopback (repeatable, or a comma list)")
    web.add_argument("--allow-fault-commands", action="store_true",
                     help="let the form's fault plan hold run=COMMAND items: anyone who can start a plan here "
                     "(on loopback: any local user) then runs any program as this process's user "
                     "(default: refused; lab stop/start items are always allowed)")
    web.set_defaults(handler=_web)


def build(args: argparse.Namespace, environ: dict[str, str]):
    """Check the options and make the environment, Locust's web UI (not yet serving: no port taken) and our routes."""
    from ..web import auth, server
    from . import web_policy
    from .web_form import form_plan, form_preparer

    if not 0 < args.web_port < 65536:
        raise AuthbenchError(f"--web-port {args.web_port} is not a port number")
    credentials = auth.load_credentials(args.web_auth_file, environ)
    auth.check_exposure(args.web_host, credentials, args.web_login)
    if args.locustfile:  # a missing file or a class that is no journey: said now, not at the first start
        from ..kinds.custom.loader import load_user_class

        load_user_class(args.locustfile, args.user_class)
    own_journey = f"-f {shlex.quote(args.locustfile)} " if args.locustfile else ""
    if args.user_class:
        own_journey += f"--user-class {shlex.quote(args.user_class)} "
    # lab:NAME targets of the form, and the journey of -f for every run started here
    run_options = f"--lab-dir {shlex.quote(args.lab_dir)} {own_journey}{args.run_options}"
    prepare = form_preparer(run_options, args.allow_fault_commands,  # a bad --run-options fails now
                            web_policy.policy(args.files_dir, args.allow_target))
    results = Path(args.results)
    try:
        results.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise AuthbenchError(f"cannot create --results {args.results!r}: {exc.strerror}") from None
    environment, web_ui, launcher = server.create(args.web_host, args.web_port, credentials, results, prepare,
                                                  tuple(args.web_allowed_host), args.lab_dir,
                                                  lambda form: form_plan(form, run_options))
    return environment, web_ui, launcher, credentials


def _web(args: argparse.Namespace) -> int:
    environment, web_ui, launcher, credentials = build(args, dict(os.environ))
    _check_port(args.web_host, args.web_port)
    web_ui.start()
    login = f" (login as {credentials.username})" if credentials else ""
    say(f"authbench web UI on http://{args.web_host}:{args.web_port}/authbench/{login}; "
        f"Locust's own tabs at /; results in {args.results}; Ctrl-C to stop")
    hosts = "".join(f", {host}" for host in args.allow_target)
    files = ", ".join(args.files_dir) or "none (no --files-dir)"
    say(f"targets: the lab, loopback{hosts}; files the form may name: {files}")
    if args.allow_fault_commands:
        say("--allow-fault-commands: a fault plan started here may run any program as this process's user")
    try:
        web_ui.greenlet.join()
    finally:
        launcher.stop()
        environment.runner.quit()
    return 0


def _check_port(host: str, port: int) -> None:
    """A port in use or an address not of this machine: one line now, not a traceback from Locust's server."""
    try:
        info = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        with socket.socket(info[0], socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(info[4])
    except OSError as exc:
        raise AuthbenchError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
