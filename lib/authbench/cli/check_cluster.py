"""`authbench check-cluster`: the 2012 report's functional checks (Tests 1–3) against any IdP cluster.

Through the SP: `--target` is the SP's protected URL, `--lb` the balancer's base URL as the SP's
redirects name it, and `--node` each node's own base URL. A check that fails is a finding, not an
error of the command: the exit status is 0 whenever the checks ran, 2 when they could not.
"""

from __future__ import annotations

import argparse
import json
import socket
from urllib.parse import urlsplit

from . import CliError, say
from .options import (
    PASSWORD_ENV,
    accounts_from_args,
    add_account_options,
    add_lab_dir_option,
    add_tls_options,
    check_url,
    tls_verify,
)

CONNECT_TIMEOUT_S = 5.0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("check-cluster", help="Tests 1-3 of the 2012 report against an IdP cluster")
    parser.add_argument("--target", required=True,
                        help="the SP's protected URL, or lab:BACKEND for a cluster of the running lab")
    parser.add_argument("--lb", help="the balancer's base URL (as the SP's redirects name it)")
    parser.add_argument("--node", action="append", default=[], metavar="URL",
                        help="a node's base URL, bypassing the balancer (repeat; two for Tests 2 and 3)")
    add_tls_options(parser)
    add_lab_dir_option(parser)
    add_account_options(parser)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.set_defaults(handler=_check_cluster)


def _reachable(url: str, what: str) -> None:
    check_url(url, what)
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise CliError(f"{what} {url} is unreachable ({exc.strerror or exc}); check the URL") from None


def _check_cluster(args: argparse.Namespace) -> int:
    from ..cluster_checks import Account, Cluster, check_each_node, format_table, run_checks
    from .options import lab_account_defaults, lab_backend, lab_cluster, running_lab

    lab_defaults = None
    if args.target.startswith("lab:"):
        config = running_lab(args.lab_dir)
        cluster = lab_cluster(config, lab_backend(config, args.target[len("lab:"):]))
        cluster = Cluster(cluster.sp_url, cluster.lb_url, cluster.nodes, tls_verify(args, str(config.ca_cert)))
        lab_defaults = lab_account_defaults(config)
    else:
        if not args.lb or not args.node:
            raise CliError("give --lb (the balancer) and at least one --node, or a lab:BACKEND target")
        nodes = {chr(ord("A") + i): url for i, url in enumerate(args.node)}
        cluster = Cluster(args.target, args.lb, nodes, tls_verify(args))
    for url, what in ((cluster.sp_url, "--target"), (cluster.lb_url, "--lb"),
                      *((url, f"--node {name}") for name, url in cluster.nodes.items())):
        _reachable(url, what)
    if not (args.account or args.accounts_csv or args.accounts_template or lab_defaults):
        raise CliError(f"no account: give --account (password from ${PASSWORD_ENV} or --password-file)")
    first = accounts_from_args(args, lab_defaults)[0].pick()
    account = Account(first.username, first.password)
    # Tests 2 and 3 need two nodes
    results = run_checks(cluster, account) if len(cluster.nodes) > 1 else [check_each_node(cluster, account)]
    if args.json:
        say(json.dumps({"target": cluster.sp_url, "lb": cluster.lb_url, "nodes": cluster.nodes,
                        "account": first.username,
                        "checks": [{"test": r.test, "passed": r.passed, "evidence": r.evidence} for r in results]},
                       indent=2, ensure_ascii=False))
        return 0
    for result in results:
        say(f"{result.test} {result.mark}")
        for line in result.evidence:
            say(f"  {line}")
    say()
    say(format_table({urlsplit(cluster.lb_url).netloc: results}))
    return 0
