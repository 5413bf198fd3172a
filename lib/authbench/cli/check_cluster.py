"""`authbench check-cluster`: the 2012 report's functional checks (Tests 1–3) against any IdP cluster.

Through the SP: `--target` is the SP's protected URL, `--lb` the balancer's base URL as the SP's
redirects name it, and `--node` each node's own base URL. A check that fails is a finding, not an
error of the command: the exit status is 0 whenever the checks ran, 2 when they could not (a URL
that is unreachable, hangs or presents an untrusted certificate: "could not test", one line).
"""

from __future__ import annotations

import argparse
import json
import re
from urllib.parse import urlsplit

from ..errors import AuthbenchError
from ..kinds import oidc
from .console import say
from .options import (
    PASSWORD_ENV,
    accounts_from_args,
    add_account_options,
    add_lab_dir_option,
    add_tls_options,
    check_url,
    tls_verify,
)

PROBE_TIMEOUT_S = 5.0  # seconds the first GET to each URL may take before it counts as hanging


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("check-cluster", help="Tests 1-3 of the 2012 report against an IdP cluster")
    parser.add_argument("--target", required=True,
                        help="the SP's protected URL, or lab:BACKEND for a cluster of the running lab; an OpenID "
                        "Provider as oidc+https://ISSUER or oidc+lab:keycloak-DESIGN")
    parser.add_argument("--lb", help="the balancer's base URL (as the SP's redirects name it)")
    parser.add_argument("--node", action="append", default=[], metavar="URL",
                        help="a node's base URL, bypassing the balancer (repeat; two for Tests 2 and 3)")
    add_tls_options(parser)
    add_lab_dir_option(parser)
    add_account_options(parser)
    oidc.add_client_options(parser.add_argument_group("OpenID Provider (oidc+ targets): the RP authbench plays"))
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.set_defaults(handler=_check_cluster)


def _testable(url: str, what: str, verify: bool | str) -> None:
    """One GET as the checks will make it (same TLS verification, bounded wait), else "could not test".

    A target that hangs, or whose certificate is not trusted, is a setup problem to fix before the
    checks can say anything about the cluster: exit 2 in one line, not a Test 1 ×.
    """
    import requests

    check_url(url, what)
    try:
        requests.get(url, verify=verify, timeout=PROBE_TIMEOUT_S, allow_redirects=False).close()
    except requests.exceptions.SSLError as exc:
        raise AuthbenchError(f"could not test: {what} {url}: TLS certificate not accepted ({_reason(exc)}); "
                       "give --ca-bundle with its CA (or --insecure)") from None
    except requests.exceptions.Timeout:
        raise AuthbenchError(f"could not test: {what} {url} did not answer within {PROBE_TIMEOUT_S:g} s") from None
    except requests.exceptions.RequestException as exc:
        raise AuthbenchError(f"could not test: {what} {url} is unreachable ({_reason(exc)}); check the URL") from None


def _reason(exc: Exception) -> str:
    """The innermost cause of a requests error, e.g. "self-signed certificate in certificate chain"."""
    text = re.sub(r"\s*\(_ssl\.c:\d+\)", "", str(exc.args[0] if exc.args else exc))
    return text.rsplit(": ", 1)[-1].strip("')\" ") or type(exc).__name__


def _logs_in(cluster, account, entry: str) -> None:
    """Some node must log the account in through the SP: a target where none does (a broken SP, a wrong account)
    is not a cluster to judge, its Tests would all read ×. That is "could not test", exit 2, with the reason."""
    from ..cluster.checks import login, pinned_to
    from ..journeys.fastbrowser import FastBrowser

    outcome = None
    for node in cluster.nodes:  # the checks' own timeout: a first login on a cold node may take seconds per page
        with FastBrowser(verify=cluster.verify, route=pinned_to(cluster, node)) as browser:
            outcome = login(cluster, browser, account)
        if outcome.ok:
            return
    raise AuthbenchError(f"could not test: no node logs {account.username} in through --target {entry} "
                         f"({outcome}); fix the SP (an OP: the RP registration) or the account first")


def _check_cluster(args: argparse.Namespace) -> int:
    from ..cluster.checks import Account, Cluster, check_each_node, format_table, run_checks
    from .options import lab_account_defaults, lab_backend, lab_cluster, running_lab

    lab_defaults, entry = None, args.target
    if oidc.claims(args.target):
        from ..kinds.oidc.checks import cluster_for

        options = oidc.Options(client_id=args.client_id, client_secret_file=args.client_secret_file,
                               client_auth=args.client_auth, redirect_uri=args.redirect_uri, scope=args.scope)
        cluster, lab_defaults = cluster_for(args.target, args.lab_dir, args.lb, args.node, options, args.ca_bundle,
                                            args.insecure, PROBE_TIMEOUT_S * 2)
        entry = cluster.login.issuer
    elif args.target.startswith("lab:"):
        if args.lb or args.node:
            raise AuthbenchError("--lb and --node are for URL targets; a lab: target brings its own balancer and nodes")
        config = running_lab(args.lab_dir)
        cluster = lab_cluster(config, lab_backend(config, args.target[len("lab:"):]))
        cluster = Cluster(cluster.sp_url, cluster.lb_url, cluster.nodes, tls_verify(args, str(config.ca_cert)))
        lab_defaults = lab_account_defaults(config)
    else:
        if not args.lb or not args.node:
            raise AuthbenchError("give --lb (the balancer) and at least one --node, or a lab:BACKEND target")
        nodes = {chr(ord("A") + i): url for i, url in enumerate(args.node)}
        cluster = Cluster(args.target, args.lb, nodes, tls_verify(args))
    if cluster.login is None:
        entry = cluster.sp_url
    for url, what in ((entry, "--target"), (cluster.lb_url, "--lb"),
                      *((url, f"--node {name}") for name, url in cluster.nodes.items())):
        _testable(url, what, cluster.verify)
    if not (args.account or args.accounts_csv or args.accounts_template or lab_defaults):
        raise AuthbenchError(f"no account: give --account (password from ${PASSWORD_ENV} or --password-file)")
    first = accounts_from_args(args, lab_defaults)[0].pick()
    account = Account(first.username, first.password)
    _logs_in(cluster, account, entry)
    # Tests 2 and 3 need two nodes
    results = run_checks(cluster, account) if len(cluster.nodes) > 1 else [check_each_node(cluster, account)]
    if args.json:
        say(json.dumps({"target": entry, "lb": cluster.lb_url, "nodes": cluster.nodes,
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
