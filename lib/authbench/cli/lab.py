"""`authbench lab …`: the embedded IdP-cluster lab (system under test)."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Sequence

from ..errors import EXIT_FAILURE, AuthbenchError
from .console import say
from .options import add_lab_dir_option, folder_path

MB = 1024 * 1024


def lab_call(function: Callable, *args, **kwargs):
    """Run a lab function, turning its errors into CLI errors (the lab package loads lazily)."""
    from authbench_lab.lab import LabError

    try:
        return function(*args, **kwargs)
    except LabError as exc:
        raise AuthbenchError(str(exc), exc.exit_code, exc.details) from None
    except OSError as exc:
        if exc.filename is None:  # not about a path: a run-time failure, shown as such by main
            raise
        raise AuthbenchError(f"cannot use {exc.filename}: {exc.strerror}; give a --lab-dir where authbench can "
                             "create and write folders") from None


def _lab_up(args: argparse.Namespace) -> int:
    from authbench_lab import config, lab

    backends = lab_call(lab.parse_backends, args.backend)
    extras = lab_call(lab.parse_extras, ",".join(args.with_extras))
    if args.keycloak_design and "keycloak" not in extras:  # refused, not a whole lab started without its Keycloak
        raise AuthbenchError(f"--keycloak-design {args.keycloak_design} needs --with keycloak: add it, or drop "
                             "--keycloak-design")
    lab_config = config.LabConfig(
        run_dir=args.lab_dir, base_port=args.base_port, backends=backends, users=args.users,
        stickiness=args.stickiness, client_storage=not args.no_client_storage, workers=args.workers,
        threads=args.threads, idp_cookie_path=args.idp_cookie_path, public_host=args.public_host or "",
        listen=args.listen or "", extras=extras, privacyidea_cache=_cache_seconds(args.privacyidea_cache),
        keycloak_design=args.keycloak_design or config.DEFAULT_KEYCLOAK_DESIGN, timings=args.timings,
    )
    result = lab_call(lab.up, lab_config)
    seed = result["seed"]
    if seed.get("fresh"):
        say(f"seeded {seed['users']} users in {seed['seconds']:.2f} s")
    elif seed.get("seconds") is not None:
        say(f"LDAP already seeded with {seed['users']} users (took {seed['seconds']:.2f} s)")
    if not result["started"]:
        say(f"lab already up in {lab_config.run_dir}: {len(result['kept'])} components healthy, "
             "nothing restarted")
    else:
        kept = f", {len(result['kept'])} already running" if result["kept"] else ""
        say(f"started {_count(result['started'], 'component')}{kept}; healthy in {result['seconds']:.1f} s")
    _print_endpoints(lab.endpoints(lab_config.run_dir))
    for name in (name for extra in extras if extra != "keycloak" for name in lab.extra_components(extra)):
        say(f"{name:<11} {result['state']['components'][name]['url']}")
    if keycloak_cost := result["state"].get("keycloak_install"):
        say("Keycloak installed: " + ", ".join(f"{step} {seconds:.1f} s" for step, seconds in keycloak_cost.items()))
    say(f"CA certificate: {lab_config.ca_cert}")
    return 0


def _cache_seconds(text: str) -> int:
    if text == "off":
        return 0
    if not text.isdigit():
        raise AuthbenchError(f"--privacyidea-cache must be a number of seconds or off, got {text!r}")
    return int(text)


def _lab_down(args: argparse.Namespace) -> int:
    from authbench_lab import lab

    result = lab_call(lab.down, args.lab_dir, purge=args.purge)
    if not result["found"]:
        say(f"no lab in {result['run_dir']}; nothing to stop")
    elif not result["stopped"]:
        say(f"no lab running in {result['run_dir']}; nothing to stop")
    else:
        say(f"stopped {_count(result['stopped'], 'component')} in {result['seconds']:.1f} s")
    if result["purged"]:
        say(f"removed {result['run_dir']}")
    return 0


def _lab_status(args: argparse.Namespace) -> int:
    from authbench_lab import lab

    rows = lab_call(lab.status, args.lab_dir)
    if args.json:
        say(json.dumps({"components": rows, "endpoints": lab.endpoints(args.lab_dir)}, indent=2))
        return 0
    if not rows:
        say(f"no lab in {os.path.abspath(args.lab_dir)}")
        return 0
    table = [("COMPONENT", "URL", "PID", "HEALTH", "RSS MB", "DETAIL")]
    for row in rows:
        health = "healthy" if row["healthy"] else ("stopped" if row["pid"] is None else "UNHEALTHY")
        detail = "" if row["detail"] == "stopped" else row["detail"]
        table.append((row["name"], row["url"], str(row["pid"] or "-"), health,
                      f"{row['rss_bytes'] / MB:.0f}" if row["pid"] else "-", detail))
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]) - 1)]
    for line in table:
        say("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=False)) + "  " + line[-1])
    say()
    _print_endpoints(lab.endpoints(args.lab_dir))
    return 0


def _print_endpoints(endpoints: list[dict]) -> None:
    width = max((len(item["backend"]) for item in endpoints), default=0)
    for item in endpoints:
        say(f"{item['backend']:<{width}} lb {item['lb']}  nodes {item['node-a']} {item['node-b']}  sp {item['sp']}")


def _lab_stop(args: argparse.Namespace) -> int:
    from authbench_lab import lab

    result = lab_call(lab.stop_component, args.lab_dir, args.component)
    state = f"stopped (pid {result['pid']})" if result["was_running"] else "was not running"
    say(f"{result['name']} {state}")
    return 0


def _lab_start(args: argparse.Namespace) -> int:
    from authbench_lab import lab

    result = lab_call(lab.start_component, args.lab_dir, args.component)
    if result["already_running"]:
        say(f"{result['name']} is already running (pid {result['pid']})")
    else:
        say(f"{result['name']} started (pid {result['pid']}): {result['detail']}")
    return 0


def _lab_check(args: argparse.Namespace) -> int:
    """One SSO per cluster through its balancer, then Tests 1–3, against the lab's expected table."""
    from authbench.cluster.checks import Account, format_table, run_checks
    from authbench.journeys.fastbrowser import FastBrowser
    from authbench.journeys.saml import sso_login
    from authbench_lab.config import EXPECTED_CLUSTER_CHECKS, password_for, username

    from .options import lab_cluster, running_lab

    config = lab_call(running_lab, args.lab_dir)
    user = username(0, config.users)
    account = Account(user, password_for(user))
    results, failed = {}, False
    width = max(len(name) for name in config.clusters())
    for backend in config.clusters():  # the reference IdP's backends, and Keycloak's cluster when the lab runs it
        cluster = lab_cluster(config, backend)
        with FastBrowser(verify=cluster.verify) as browser:
            outcome = sso_login(browser, cluster.sp_url, account.username, account.password)
        say(f"{backend:<{width}} SSO through the balancer: {outcome}")
        results[backend] = run_checks(cluster, account)
        expected = EXPECTED_CLUSTER_CHECKS[backend]
        observed = tuple(result.passed for result in results[backend])
        if not outcome.ok or observed != expected:
            failed = True
            for result, want in zip(results[backend], expected, strict=True):
                if result.passed != want:
                    say(f"  {result.test} expected {'○' if want else '×'}: " + " | ".join(result.evidence))
    say()
    say(format_table(results))
    say("\nas the 2012 report's table expects" if not failed else "\nDIFFERS from the expected table")
    return EXIT_FAILURE if failed else 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from authbench_lab import config

    lab_parser = subparsers.add_parser("lab", help="the embedded IdP-cluster lab (system under test)")
    commands = lab_parser.add_subparsers(dest="lab_command", required=True, metavar="COMMAND")
    run_dir = argparse.ArgumentParser(add_help=False)
    add_lab_dir_option(run_dir)
    run_dir.add_argument("--run-dir", dest="lab_dir", type=folder_path, help=argparse.SUPPRESS)  # before --lab-dir

    up = commands.add_parser("up", parents=[run_dir], help="start the lab (idempotent)")
    up.add_argument("--backend", default="all",
                    help=f"session store of the IdP clusters: {', '.join(config.BACKENDS)}, a comma list, "
                    "or all (default)")
    up.add_argument("--users", type=int, default=config.DEFAULT_USERS,
                    help=f"LDAP accounts to seed, 1..{config.MAX_USERS} (default {config.DEFAULT_USERS})")
    up.add_argument("--stickiness", choices=config.STICKINESS, default="session",
                    help="HAProxy affinity: none = round robin, session = sticky on JSESSIONID (default)")
    up.add_argument("--no-client-storage", action="store_true",
                    help="IdPs do not use the browser's client-side storage")
    up.add_argument("--idp-cookie-path", default=config.DEFAULT_IDP_COOKIE_PATH, metavar="PATH",
                    help="the Path of the IdP nodes' cookies: /idp as Shibboleth (default), / as SimpleSAMLphp")
    up.add_argument("--base-port", type=int, default=config.DEFAULT_BASE_PORT,
                    help=f"first port of the port plan (default {config.DEFAULT_BASE_PORT})")
    up.add_argument("--workers", type=int, default=config.DEFAULT_WORKERS,
                    help=f"gunicorn worker processes per IdP node (default {config.DEFAULT_WORKERS})")
    up.add_argument("--threads", type=int, default=config.DEFAULT_THREADS,
                    help=f"threads per worker process (default {config.DEFAULT_THREADS})")
    up.add_argument("--public-host", metavar="NAME",
                    help="host name in the lab's URLs, SAML metadata and TLS certificate, for clients on other "
                    "machines or pods (default 127.0.0.1)")
    up.add_argument("--listen", metavar="ADDRESS",
                    help="where the HTTPS frontends (balancers, nodes, SPs) listen: 127.0.0.1 (default) or "
                    "0.0.0.0 inside a container")
    up.add_argument("--with", dest="with_extras", action="append", default=[], metavar="NAME",
                    help=f"also start an optional server: {', '.join(config.EXTRAS)} (comma list or repeated)")
    up.add_argument("--keycloak-design", choices=config.KEYCLOAK_DESIGNS,
                    help="which Keycloak cluster --with keycloak runs, as lab:keycloak-DESIGN (default "
                    f"{config.DEFAULT_KEYCLOAK_DESIGN}; docs/keycloak.md)")
    up.add_argument("--timings", choices=config.TIMINGS, default=config.DEFAULT_TIMINGS,
                    help="how quickly stops and returns are noticed: standard (default, what docs/ measured) or fast "
                    "(1 s graceful stops, HAProxy checks every 200 ms, memcached retried after 1 s: for tests and "
                    "rehearsals, not for measuring failover; docs/lab.md)")
    up.add_argument("--privacyidea-cache", default="off", metavar="SECONDS|off",
                    help="how long privacyIDEA keeps resolved users in its user cache (default off)")
    up.set_defaults(handler=_lab_up)

    down = commands.add_parser("down", parents=[run_dir], help="stop the lab")
    down.add_argument("--purge", action="store_true", help="also delete the run directory")
    down.set_defaults(handler=_lab_down)

    status = commands.add_parser("status", parents=[run_dir], help="health of every component")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.set_defaults(handler=_lab_status)

    check = commands.add_parser("check", parents=[run_dir],
                                help="one SSO per cluster and the cluster checks (Tests 1-3)")
    check.set_defaults(handler=_lab_check)

    for name, handler, text in (("stop", _lab_stop, "stop one component (fault injection)"),
                                ("start", _lab_start, "start a stopped component again")):
        parser = commands.add_parser(name, parents=[run_dir], help=text)
        parser.add_argument("component", help="e.g. ldap, memcached-a, redis-primary, lb, local/idp-a")
        parser.set_defaults(handler=handler)




def _count(items: Sequence, noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"
