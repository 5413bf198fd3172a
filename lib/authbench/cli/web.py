"""`authbench web`: Locust's web UI with authbench's page for plans, live figures and the last campaign."""

from __future__ import annotations

import argparse
import os
import shlex
import socket
from pathlib import Path

from . import CliError, say
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
    web.add_argument("--run-options", default="",
                     help="further `authbench run` options for runs started here, e.g. "
                     "'--ca-bundle ca.pem --accounts-csv accounts.csv' (never a password)")
    web.set_defaults(handler=_web)


def build(args: argparse.Namespace, environ: dict[str, str]):
    """Check the options and make the environment, Locust's web UI (not yet serving: no port taken) and our routes."""
    from .. import metrics
    from ..runner import create_environment
    from ..users.saml import SAMLUser
    from ..web import app, auth
    from .web_form import form_preparer

    if not 0 < args.web_port < 65536:
        raise CliError(f"--web-port {args.web_port} is not a port number")
    credentials = auth.load_credentials(args.web_auth_file, environ)
    auth.check_exposure(args.web_host, credentials, args.web_login)
    run_options = f"--lab-dir {shlex.quote(args.lab_dir)} {args.run_options}"  # lab:NAME targets of the form
    prepare = form_preparer(run_options)  # a bad --run-options fails now
    results = Path(args.results)
    try:
        results.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"cannot create --results {args.results!r}: {exc.strerror}") from None
    environment = create_environment(SAMLUser, settings=None)
    # The UI first: made before the runner, Locust does not yet read its template arguments (app.install).
    web_ui = environment.create_web_ui(args.web_host, args.web_port, web_login=credentials is not None,
                                       delayed_start=True)
    environment.create_local_runner()
    if credentials is not None:
        auth.install(web_ui, credentials)
    launcher = app.install(environment, results, prepare, tuple(args.web_allowed_host), args.lab_dir)
    metrics.attach_metrics(environment)  # /metrics of the runs started here
    return environment, web_ui, launcher, credentials


def _web(args: argparse.Namespace) -> int:
    environment, web_ui, launcher, credentials = build(args, dict(os.environ))
    _check_port(args.web_host, args.web_port)
    web_ui.start()
    login = f" (login as {credentials.username})" if credentials else ""
    say(f"authbench web UI on http://{args.web_host}:{args.web_port}/authbench/{login}; "
        f"Locust's own tabs at /; results in {args.results}; Ctrl-C to stop")
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
        raise CliError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
