"""Journeys/s with 1 worker process against 2, when the load generator is the bottleneck.

Two journeys: `requests`, the requests-based client (`journeys.browser`, ~20 ms of CPU per login, 7x
the fast client) doing complete SSO logins through the lab's stateless cluster, and `cpu`, a journey
of generator CPU alone (PBKDF2 in small slices with a yield between them, as a client yields on its
I/O; no server), which is generator-bound whatever else the machine is doing.
Method: a master in this process, fresh worker processes for every measurement; each measurement is
one pattern (USERS x JOURNEYS) after a warm-up, its measured TPS from the summary. 1 and 2 workers
alternate, the order rotating, for several rounds; medians and the ratio.

    .venv/bin/python bench/distributed.py [--rounds 3] [--users 8] [--journeys 40] [--base-port 22000]

With `--rate R` each measurement is an arrival-rate level instead (R journeys/s for `--duration`
seconds, at most --users in flight, split across the workers): its achieved rate, whether it was
sustained, and p99 from the intended start beside the service time — a rate one worker cannot hold
and two can.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

DEFAULT_ROUNDS = 3
DEFAULT_USERS = 8
DEFAULT_JOURNEYS = 40  # per user
DEFAULT_WARMUP = 2.0
CELL_LIMIT = 300.0
WORKER_WAIT = 60.0
KINDS = ("cpu", "requests")
CPU_SLICES = 20  # a `cpu` journey: this many slices of PBKDF2-SHA256 …
CPU_SLICE_ITERATIONS = 2000  # … of this many rounds each: ~20 ms of one core here in all


def _user_class(kind: str, sp_url: str, ca: str):
    import hashlib

    import gevent

    from authbench.accounts import AccountPicker, from_template
    from authbench.journeys import saml
    from authbench.journeys.browser import Browser
    from authbench.journeys.forms import PRESETS
    from authbench.user import JourneyOutcome, JourneyUser

    accounts = AccountPicker(from_template("user{000..199}", "pw-{user}"))

    class BenchUser(JourneyUser):
        journey_name = f"{kind} journey"

        def journey(self) -> JourneyOutcome:
            if kind == "cpu":
                for _ in range(CPU_SLICES):
                    hashlib.pbkdf2_hmac("sha256", b"authbench", b"salt", CPU_SLICE_ITERATIONS)
                    gevent.sleep(0)
                return JourneyOutcome(True)
            account = accounts.pick()
            browser = Browser(verify=ca, timeout=10)
            try:
                outcome = saml.sso_login(browser, sp_url, account.username, account.password, fields=PRESETS)
            finally:
                browser.close_connections()
            return JourneyOutcome(outcome.ok, outcome.reason, outcome.detail, account.username)

    return BenchUser


def _worker(port: int, kind: str, sp_url: str, ca: str) -> int:
    import locust  # noqa: F401  (gevent patches before ssl is imported)

    from authbench.distributed import worker
    from authbench.runner import create_environment

    environment = create_environment(_user_class(kind, sp_url, ca), settings=None)
    return worker.serve(worker.connect(environment, "127.0.0.1", port))


def _measure(kind: str, workers: int, args: argparse.Namespace, sp_url: str, ca: str) -> tuple[float, int]:
    from authbench.distributed import local, master
    from authbench.patterns import Pattern, Plan
    from authbench.results.summary import summarize
    from authbench.runner import create_environment, run_plan

    port = local.free_port()
    environment = create_environment(_user_class(kind, sp_url, ca), settings=None)
    coordinator = master.create_master(environment, local.LOOPBACK, port)
    command = [sys.executable, __file__, "--worker", str(port), kind, sp_url, ca]
    # Each worker in a session of its own: with the kernel's autogroup scheduling (on here), processes of
    # one session share one CPU share on a crowded machine, as if they were on one core together.
    processes = [subprocess.Popen(command, stdout=subprocess.DEVNULL, start_new_session=True)
                 for _ in range(workers)]
    try:
        coordinator.wait_for_workers(workers, WORKER_WAIT)
        if args.rate:
            return _measure_rate(environment, args)
        plan = Plan((Pattern(args.users, args.journeys),), warmup=DEFAULT_WARMUP)
        (cell,) = run_plan(environment, plan, cell_time_limit=CELL_LIMIT)
    finally:
        environment.runner.quit()
        local.reap(processes)
    summary = summarize(cell.samples)
    if not cell.complete or cell.degraded:
        raise SystemExit(f"{kind} with {workers} worker(s): complete={cell.complete}, degraded={cell.degraded}")
    return summary.tps or 0.0, summary.errors  # TPS counts successful journeys, as Grinder


def _measure_rate(environment, args: argparse.Namespace) -> tuple[float, int]:
    from authbench.openmodel.rates import Arrivals, Level, LevelPlan
    from authbench.openmodel.runner import run_level

    level = Level("rate", float(args.rate), float(args.duration), DEFAULT_WARMUP)
    cell = run_level(environment, level, 1, LevelPlan((level,), Arrivals(max_users=args.users)), CELL_LIMIT)
    record = cell.open
    print(f"  target {args.rate:g}/s: achieved {record['achieved_rate']:.1f}/s, "
          f"{'sustained' if record['sustained'] else 'NOT sustained'}, {record['late']} late, "
          f"{record['dropped']} dropped; p99 {record['response_ms']['p99']:.0f} ms from intended start, "
          f"{record['service_ms']['p99']:.0f} ms service", flush=True)
    return record["achieved_rate"], sum(1 for sample in cell.samples if sample.outcome != "ok")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    parser.add_argument("--users", type=int, default=DEFAULT_USERS)
    parser.add_argument("--journeys", type=int, default=DEFAULT_JOURNEYS)
    parser.add_argument("--run-dir", default=".authbench/bench-distributed")
    parser.add_argument("--base-port", type=int, default=22000)
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--rate", type=float, help="arrival-rate levels of this many journeys/s instead")
    parser.add_argument("--duration", type=float, default=20.0, help="--rate: measured seconds (default 20)")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        port, kind, sp_url, ca = args.worker
        sys.exit(_worker(int(port), kind, sp_url, ca))

    import locust  # noqa: F401  (gevent patches before the lab's client code imports ssl)

    from authbench_lab import lab
    from authbench_lab.config import LabConfig

    config = LabConfig(run_dir=Path(args.run_dir), base_port=args.base_port, backends=["stateless"], users=200)
    kinds = args.kinds.split(",")
    with_lab = "requests" in kinds  # the cpu journey needs no server
    if with_lab:
        lab.up(config)
    sp_url, ca = config.sp_url("stateless") + "/secure/", str(config.ca_cert)
    tps: dict[tuple[str, int], list[float]] = {(kind, n): [] for kind in kinds for n in (1, 2)}
    try:
        for round_number in range(args.rounds):
            for kind in kinds:
                for workers in ((1, 2) if round_number % 2 == 0 else (2, 1)):
                    value, errors = _measure(kind, workers, args, sp_url, ca)
                    tps[(kind, workers)].append(value)
                    print(f"round {round_number + 1} {kind:<8} {workers} worker(s): {value:.1f} journeys/s, "
                          f"{errors} errors", flush=True)
    finally:
        if with_lab:
            lab.down(config.run_dir)
    print(f"\n{datetime.date.today()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{args.users} users x {args.journeys} journeys per measurement, warm-up {DEFAULT_WARMUP:g} s, "
          f"{args.rounds} rounds, load average {os.getloadavg()[0]:.1f}\n")
    if args.rate:
        print(f"target rate {args.rate:g}/s for {args.duration:g} s, at most {args.users} in flight; "
              "figures are achieved starts/s")
    print("| journey | 1 worker, median journeys/s | 2 workers | 2 / 1 |")
    print("|---|---:|---:|---:|")
    for kind in kinds:
        one, two = statistics.median(tps[(kind, 1)]), statistics.median(tps[(kind, 2)])
        print(f"| {kind} | {one:.1f} | {two:.1f} | {two / one:.2f} |")


if __name__ == "__main__":
    main()
