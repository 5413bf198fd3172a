"""Generator CPU per journey: authbench's SAML user against a reference client written the obvious way.

The reference is what one writes first with Locust: an HttpUser (requests) following redirects, and
BeautifulSoup finding the forms. Both do the same complete SP-initiated login through the lab's SP.
Method: each measurement is a fresh process running U users × J journeys under Locust; its CPU time
(user + system, getrusage, imports excluded) divided by the journeys is the figure. The clients
alternate for several rounds in one run, so the machine's drift hits all alike; medians and ratios
are reported.

- authbench: `SAMLUser` as `authbench run` drives it (connections kept across journeys)
- authbench-new-connection: the same with `--new-connection` (two TCP+TLS connections per journey)
- reference: Locust HttpUser + BeautifulSoup, written the obvious way
- floor: no journey, only as many bare keep-alive round trips (a GET of the SP's protected page, answered
  by a redirect) through authbench's transport, each reported to Locust as a step is: what Locust, TLS,
  the sockets, the gevent hub and waking up cost before any HTTP, cookie or HTML work
- `--server lab,replay`: against the lab itself, and/or against the lab's recorded pages served by HAProxy
  (`replay_server.py`), where the generator, not the server, is the slower side: its CPU per journey
  once it is busy, which is what limits a run
- `--baseline-lib DIR` adds "before" and "before-new-connection": the authbench of another checkout's
  `lib` directory (e.g. `git archive main lib | tar -x -C /tmp/before`), for before/after in one run

    .venv/bin/python bench/generator_cpu.py [--rounds 3] [--users 4] [--journeys 250] [--backend stateless]
        [--kinds authbench,reference] [--baseline-lib DIR] [--base-port 22000] [--server lab,replay]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

DEFAULT_ROUNDS = 3
DEFAULT_USERS = 4
DEFAULT_JOURNEYS = 250  # per user: a process's start (Locust, 2 handshakes per user) is ~75 ms of CPU to spread
DEFAULT_KINDS = "authbench,reference"
KINDS = ("authbench", "authbench-new-connection", "reference", "floor")
NEW_CONNECTION = "-new-connection"  # a kind's suffix: close the connections after every journey
DEFAULT_BACKEND = "stateless"
CHILD_TIME_LIMIT = 600  # seconds one measurement may take
DEFAULT_SERVERS = "lab"
LAB_ACCOUNTS = "user{000..199}"
REPLAY_ACCOUNT = "user000"  # the replay serves the one journey it recorded
REPLAY_ACCOUNTS = "user{000..000}"  # the same, as a template
REPLAY_PORT_OFFSET = 950  # the replay's ports: --base-port + this, one per origin


def _child(kind: str, sp_url: str, ca: str, users: int, journeys: int, accounts_template: str) -> None:
    import locust  # noqa: F401, I001  (gevent patches before ssl is imported)
    import resource

    from authbench.accounts import AccountPicker, from_template
    from authbench.patterns import Pattern, Plan
    from authbench.runner import run_plan_locally

    accounts = AccountPicker(from_template(accounts_template, "pw-{user}"))
    outcomes: list[bool] = []
    if kind == "floor":
        user_class, plan_settings = _floor_user(sp_url, ca), None
    elif kind != "reference":
        from authbench.journeys.forms import PRESETS

        SAMLSettings, SAMLUser = _saml_user()  # kinds.saml.user, or users.saml in a checkout before the move
        settings = SAMLSettings(sp_url, accounts, ca, 10.0, PRESETS, new_connection=kind.endswith(NEW_CONNECTION))
        user_class, plan_settings = SAMLUser, settings
    else:
        user_class, plan_settings = _reference_user(sp_url, ca, accounts), None

    def on_sample(sample) -> None:
        outcomes.append(sample.outcome == "ok")

    before = resource.getrusage(resource.RUSAGE_SELF)
    began = time.perf_counter()
    run_plan_locally(Plan((Pattern(users, journeys),)), user_class, plan_settings, cell_time_limit=CHILD_TIME_LIMIT,
                     listen=lambda context: context.events.sample.add_listener(on_sample))
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(json.dumps({"kind": kind, "journeys": len(outcomes), "ok": sum(outcomes), "cpu_s": cpu, "wall_s": wall}))


def _saml_user():
    """(SAMLSettings, SAMLUser) of the authbench first on the path, in either layout: `kinds.saml.user` since
    the kinds' move, `users.saml` before it (what a `--baseline-lib` checkout from before the move has).
    The layout is read from that package's own folder: an editable install's finder would otherwise hand
    an older authbench the `kinds` package of the checkout it was installed from."""
    from importlib.machinery import PathFinder

    import authbench

    if PathFinder.find_spec("authbench.kinds", authbench.__path__) is not None:
        from authbench.kinds.saml import user as module
    else:
        from authbench.users import saml as module
    return module.SAMLSettings, module.SAMLUser


def _reference_user(sp_url: str, ca: str, accounts):
    """Locust HttpUser + BeautifulSoup, the obvious way; wrapped in the journey protocol to count it alike."""
    from bs4 import BeautifulSoup
    from locust.clients import HttpSession

    from authbench.user import JourneyOutcome, JourneyUser

    class ReferenceUser(JourneyUser):
        journey_name = "SSO login (reference)"

        def on_start(self) -> None:
            super().on_start()
            self.client = HttpSession(base_url=sp_url, request_event=self.environment.events.request, user=self)
            self.client.verify = ca
            self.client.trust_env = False

        def journey(self) -> JourneyOutcome:
            account = accounts.pick()
            self.client.cookies.clear()
            response = self.client.get(sp_url, name="start")
            for _ in range(10):
                soup = BeautifulSoup(response.text, "html.parser")
                if soup.find(id="remote-user"):
                    return JourneyOutcome(True, account=account.username)
                form = soup.find("form")
                if form is None:
                    return JourneyOutcome(False, "no form", account=account.username)
                data = {field.get("name"): field.get("value", "") for field in form.find_all("input")
                        if field.get("name") and field.get("type") != "submit"}
                if "j_password" in data:
                    data.update(j_username=account.username, j_password=account.password, _eventId_proceed="")
                action = requests_url(response.url, form.get("action"))
                response = self.client.post(action, data=data, name=form.get("action", "").split("?")[0])
            return JourneyOutcome(False, "too many pages", account=account.username)

    return ReferenceUser


def _floor_user(sp_url: str, ca: str):
    """The journey's round trips and nothing else: what no client on this transport and Locust can go below."""
    from journey_cpu import JOURNEY_REQUESTS, bare_get

    from authbench.journeys.connection import Connection
    from authbench.user import JourneyOutcome, JourneyUser

    host, port, request = bare_get(sp_url)

    class FloorUser(JourneyUser):
        journey_name = "SSO login (floor)"

        def on_start(self) -> None:
            super().on_start()
            self.connection = Connection("https", host, port, ca, 10.0)

        def on_stop(self) -> None:
            self.connection.close()

        def journey(self) -> JourneyOutcome:
            ok = True
            for _ in range(JOURNEY_REQUESTS):
                response = self.connection.exchange(request)
                ok = ok and response.status == 302
                self.environment.events.request.fire(
                    request_type="GET", name="floor", response_time=response.elapsed_ms,
                    response_length=len(response.body), exception=None, context={}, url=None)
            return JourneyOutcome(ok, "" if ok else "not a redirect")

    return FloorUser


def requests_url(base: str, action: str | None) -> str:
    from urllib.parse import urljoin

    return urljoin(base, action or base)


def _measure(kind: str, args: argparse.Namespace, sp_url: str, ca: str, accounts_template: str) -> dict:
    environment = dict(os.environ)
    if kind.startswith("before"):  # the baseline checkout's authbench first on the path
        environment["PYTHONPATH"] = os.pathsep.join(filter(None, (args.baseline_lib, environment.get("PYTHONPATH"))))
    result = subprocess.run(
        [sys.executable, __file__, "--child", kind, "--sp-url", sp_url, "--ca", ca, "--users", str(args.users),
         "--journeys", str(args.journeys), "--accounts", accounts_template],
        capture_output=True, text=True, timeout=CHILD_TIME_LIMIT, check=True, env=environment)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    parser.add_argument("--users", type=int, default=DEFAULT_USERS)
    parser.add_argument("--journeys", type=int, default=DEFAULT_JOURNEYS)
    parser.add_argument("--backend", default=DEFAULT_BACKEND)
    parser.add_argument("--kinds", default=DEFAULT_KINDS, help="comma-separated, see above")
    parser.add_argument("--baseline-lib", help="another checkout's lib directory, measured as 'before'")
    parser.add_argument("--run-dir", default=".authbench/bench-generator")
    parser.add_argument("--base-port", type=int, default=22000)
    parser.add_argument("--server", default=DEFAULT_SERVERS,
                        help="comma-separated: lab (the lab's SP and IdPs), replay (the lab's pages served by HAProxy)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--sp-url", help=argparse.SUPPRESS)
    parser.add_argument("--ca", help=argparse.SUPPRESS)
    parser.add_argument("--accounts", default=LAB_ACCOUNTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.sp_url, args.ca, args.users, args.journeys, args.accounts)
        return
    unknown = set(args.server.split(",")) - {"lab", "replay"}
    if unknown:
        parser.exit(2, f"generator_cpu.py: error: --server: unknown {', '.join(sorted(unknown))}; "
                       "give lab, replay or lab,replay\n")
    unknown = set(args.kinds.split(",")) - set(KINDS)
    if unknown:
        parser.exit(2, f"generator_cpu.py: error: --kinds: unknown {', '.join(sorted(unknown))}; "
                       f"choose from {','.join(KINDS)}\n")

    from pathlib import Path

    from replay_server import ReplayServer, record_journey

    from authbench_lab import lab
    from authbench_lab.config import LabConfig, password_for

    config = LabConfig(run_dir=Path(args.run_dir), base_port=args.base_port, backends=[args.backend], users=200)
    lab.up(config)
    sp_url, ca = config.sp_url(args.backend) + "/secure/", str(config.ca_cert)
    kinds = args.kinds.split(",")
    if args.baseline_lib:
        kinds += [kind.replace("authbench", "before") for kind in kinds if kind.startswith("authbench")]
    tables = []
    try:
        for server in args.server.split(","):
            if server == "lab":
                results = _rotate(kinds, args, sp_url, ca, LAB_ACCOUNTS, server)
            else:  # replay
                exchanges = record_journey(sp_url, ca, REPLAY_ACCOUNT, password_for(REPLAY_ACCOUNT))
                replay = ReplayServer(exchanges, sp_url, args.base_port + REPLAY_PORT_OFFSET,
                                      config.pki_dir / "server.pem", Path(args.run_dir) / "replay")
                with replay as replay_url:
                    results = _rotate(kinds, args, replay_url, ca, REPLAY_ACCOUNTS, server)
            tables.append((server, results))
    finally:
        lab.down(config.run_dir)
    print(f"\n{datetime.date.today()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{args.users} users x {args.journeys} journeys per measurement, {args.rounds} rounds, backend "
          f"{args.backend}")
    for server, results in tables:
        _print_table(server, results)


def _rotate(kinds: list[str], args: argparse.Namespace, sp_url: str, ca: str, accounts: str,
            server: str) -> dict[str, list[dict]]:
    """Each kind once per round, the order rotating, so the machine's drift hits all alike."""
    results: dict[str, list[dict]] = {kind: [] for kind in kinds}
    for round_number in range(args.rounds):
        shift = round_number % len(kinds)
        for kind in kinds[shift:] + kinds[:shift]:
            measured = _measure(kind, args, sp_url, ca, accounts)
            results[kind].append(measured)
            print(f"{server} round {round_number + 1} {kind:<24} {measured['journeys']} journeys "
                  f"({measured['ok']} ok) CPU {measured['cpu_s'] * 1000 / measured['journeys']:.2f} ms/journey, "
                  f"{measured['journeys'] / measured['wall_s']:.1f} journeys/s", flush=True)
    return results


def _print_table(server: str, results: dict[str, list[dict]]) -> None:
    per = {kind: statistics.median(m["cpu_s"] * 1000 / m["journeys"] for m in rows) for kind, rows in results.items()}
    print(f"\nagainst the {server}:\n")
    print("| client | median CPU ms per journey | min | max | journeys/s |")
    print("|---|---:|---:|---:|---:|")
    for kind, value in per.items():
        rows = [m["cpu_s"] * 1000 / m["journeys"] for m in results[kind]]
        rate = statistics.median(m["journeys"] / m["wall_s"] for m in results[kind])
        print(f"| {kind} | {value:.2f} | {min(rows):.2f} | {max(rows):.2f} | {rate:.1f} |")
    for kind in per:
        if kind != "reference" and "reference" in per:
            print(f"{kind} / reference: {per[kind] / per['reference']:.2f}")
        if kind.startswith(("authbench", "before")) and "floor" in per:
            print(f"{kind} - floor: {per[kind] - per['floor']:.2f} ms")

if __name__ == "__main__":
    main()
