"""Generator CPU per complete SSO journey: the fast client against the requests client and a reference.

Method: complete SP-initiated logins through one lab cluster's SP (client storage on: 10 HTTPS
requests, 7 of them to the IdP, password every time), an empty cookie jar for every journey and
keep-alive connections kept across journeys, in one process monkey-patched by gevent as Locust runs
(`import locust` first). CPU is this process's user + system time (`getrusage`) over a round of
journeys, divided by the journeys. The clients take turns round by round (the order rotating) so the
shared machine's drift hits them alike; medians over rounds are reported. `--concurrency` runs that
many users as greenlets in the one process, as a Locust worker does.

- fast: `FastBrowser` + `sso_login` (authbench's load client)
- requests: the requests-based `Browser` + the same `sso_login`
- reference: written the obvious way — Locust's `HttpSession` (HttpUser's client, requests following
  the redirects) and BeautifulSoup reading each page's form
- floor: no journey, only as many bare keep-alive round trips through fast's transport (a GET of the
  protected page answered by a redirect) — what the network, TLS and gevent cost before any HTTP or
  HTML work

    .venv/bin/python bench/journey_cpu.py [--run-dir .authbench/lab] [--backend stateless] [--concurrency 1,16]
        [--base-port 22000] (the port plan of the lab it starts when no --run-dir is given)
"""

from __future__ import annotations

# isort: off
import locust  # noqa: F401  (first: gevent patches the standard library, as in a Locust run)
# isort: on

import argparse
import platform
import re
import resource
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urljoin

import gevent
from bs4 import BeautifulSoup
from locust.clients import HttpSession
from locust.event import Events

from authbench.journeys.browser import Browser
from authbench.journeys.connection import Connection
from authbench.journeys.fastbrowser import FastBrowser
from authbench.journeys.saml import sso_login
from authbench_lab import lab
from authbench_lab.config import LabConfig, password_for, username

DEFAULT_RUN_DIR = ".authbench/bench-journey-lab"
DEFAULT_BASE_PORT = 22000
DEFAULT_BACKEND = "stateless"
DEFAULT_JOURNEYS = 100  # per client and round
DEFAULT_ROUNDS = 5
DEFAULT_CONCURRENCY = "1,16"
WARMUP_JOURNEYS = 10
JOURNEY_REQUESTS = 10  # HTTPS requests in one journey through the lab's SP, client storage on
USERS = 200
MAX_PAGES = 12
LOGGED_IN_MARKER = 'id="remote-user"'


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# -- the three clients, each as a factory of "one journey" callables (one per simulated user) ----------

def fast_client(url: str, ca_cert: str) -> Callable[[str, str], bool]:
    browser = FastBrowser(verify=ca_cert)

    def journey(user: str, password: str) -> bool:
        browser.clear_cookies()
        return sso_login(browser, url, user, password).ok

    return journey


def requests_client(url: str, ca_cert: str) -> Callable[[str, str], bool]:
    browser = Browser(verify=ca_cert)

    def journey(user: str, password: str) -> bool:
        browser.session.cookies.clear()
        return sso_login(browser, url, user, password).ok

    return journey


def reference_client(url: str, ca_cert: str) -> Callable[[str, str], bool]:
    session = HttpSession(base_url=url, request_event=Events().request, user=None)
    session.verify = ca_cert
    session.trust_env = False  # else REQUESTS_CA_BUNDLE from the environment overrides `verify`

    def journey(user: str, password: str) -> bool:
        session.cookies.clear()
        response = session.get(url)
        for _ in range(MAX_PAGES):
            if LOGGED_IN_MARKER in response.text:
                return True
            form = BeautifulSoup(response.text, "html.parser").find("form")
            if form is None:
                return False
            data = {}
            for control in form.find_all(["input", "button"]):
                name, kind = control.get("name"), control.get("type", "text").lower()
                if name and (kind not in ("checkbox", "radio") or control.has_attr("checked")):
                    data[name] = control.get("value", "")
            if "j_password" in data:
                data.update(j_username=user, j_password=password)
            response = session.post(urljoin(response.url, form.get("action") or response.url), data=data)
        return False

    return journey


def bare_get(url: str) -> tuple[str, int, bytes]:
    """(host, port, request): the floor's round trip, a GET of an https URL with nothing but its Host."""
    match = re.match(r"https://([^/:]+):(\d+)(/.*)", url)
    assert match is not None, url
    host, port, path = match.group(1), int(match.group(2)), match.group(3)
    return host, port, f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()


def floor_client(url: str, ca_cert: str) -> Callable[[str, str], bool]:
    host, port, request = bare_get(url)
    connection = Connection("https", host, port, ca_cert, 10.0)

    def journey(_user: str, _password: str) -> bool:
        return all(connection.exchange(request).status == 302 for _ in range(JOURNEY_REQUESTS))

    return journey


CLIENTS = {"fast": fast_client, "requests": requests_client, "reference": reference_client, "floor": floor_client}


def run_round(journeys: list[Callable[[str, str], bool]], count: int, offset: int) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, failures) of `count` journeys shared by the given users."""
    failures = 0

    def user(journey: Callable[[str, str], bool], share: range) -> None:
        nonlocal failures
        for index in share:
            name = username(index % USERS, USERS)
            failures += not journey(name, password_for(name))

    per_user = count // len(journeys)
    cpu, wall = cpu_seconds(), time.perf_counter()
    greenlets = [gevent.spawn(user, journey, range(offset + k * per_user, offset + (k + 1) * per_user))
                 for k, journey in enumerate(journeys)]
    gevent.joinall(greenlets, raise_error=True)
    return cpu_seconds() - cpu, time.perf_counter() - wall, failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-dir", help="use this running lab (default: start one in " + DEFAULT_RUN_DIR + ")")
    parser.add_argument("--base-port", type=int, default=DEFAULT_BASE_PORT)
    parser.add_argument("--backend", default=DEFAULT_BACKEND)
    parser.add_argument("--journeys", type=int, default=DEFAULT_JOURNEYS, help="per client and round")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    parser.add_argument("--concurrency", default=DEFAULT_CONCURRENCY, help="users per run, comma-separated")
    parser.add_argument("--clients", default=",".join(CLIENTS))
    args = parser.parse_args()

    started_lab = None
    if args.run_dir:
        state = lab.read_state(args.run_dir)
        if state is None:
            raise SystemExit(f"no lab in {args.run_dir}")
        config = LabConfig.from_dict(state["config"])
    else:
        config = LabConfig(run_dir=Path(DEFAULT_RUN_DIR), base_port=args.base_port, backends=[args.backend],
                           users=USERS)
        lab.up(config)
        started_lab = config.run_dir
    try:
        measure(config, args)
    finally:
        if started_lab is not None:
            lab.down(started_lab)


def measure(config: LabConfig, args: argparse.Namespace) -> None:
    url, ca_cert = config.sp_url(args.backend) + "/secure/", str(config.ca_cert)
    names = args.clients.split(",")
    print(f"{platform.python_implementation()} {platform.python_version()}, {args.backend}, {url}, "
          f"{args.rounds} rounds × {args.journeys} journeys per client")
    for users in (int(value) for value in args.concurrency.split(",")):
        clients = {name: [CLIENTS[name](url, ca_cert) for _ in range(users)] for name in names}
        for journeys in clients.values():
            run_round(journeys, max(WARMUP_JOURNEYS, users), 0)  # connections, imports, caches
        cpu_ms: dict[str, list[float]] = {name: [] for name in names}
        rates: dict[str, list[float]] = {name: [] for name in names}
        failures = dict.fromkeys(names, 0)
        for round_index in range(args.rounds):
            order = names[round_index % len(names):] + names[:round_index % len(names)]
            for name in order:
                cpu, wall, failed = run_round(clients[name], args.journeys, round_index * args.journeys)
                done = args.journeys // users * users
                cpu_ms[name].append(cpu / done * 1000)
                rates[name].append(done / wall)
                failures[name] += failed
        fast = statistics.median(cpu_ms[names[0]])
        print(f"\nconcurrency {users}")
        print(f"{'client':<10} {'CPU ms/journey':>15} {'min':>7} {'max':>7} {'× ' + names[0]:>9} {'journeys/s':>11} "
              f"{'failed':>7}")
        for name in names:
            median = statistics.median(cpu_ms[name])
            print(f"{name:<10} {median:>15.2f} {min(cpu_ms[name]):>7.2f} {max(cpu_ms[name]):>7.2f} "
                  f"{median / fast:>9.2f} {statistics.median(rates[name]):>11.1f} {failures[name]:>7}")


if __name__ == "__main__":
    main()
