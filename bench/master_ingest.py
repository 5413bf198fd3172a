"""How many journey samples per second one master can take in: the ceiling of a distributed run.

Every journey a worker runs travels to the master (msgpack over ZeroMQ), which fires the run's sample
event for it: the recorder appends it to samples.csv, the summaries and /metrics count it. Here the
journey does nothing (a null journey: no HTTP), so the workers produce samples as fast as Locust can
run users and the master's share of a core per sample is what is measured.
Method: the real path (`headless.execute` with a master environment, results written to a temporary
folder), K worker processes on this machine, one pattern USERS x JOURNEYS; the master's own CPU time
(getrusage of this process, workers excluded) over the cell gives CPU per sample and so the ceiling
samples/s = 1 / (CPU per sample) for a master with one core of its own.

    .venv/bin/python bench/master_ingest.py [--workers 2] [--users 20] [--journeys 1000] [--rounds 3] [--metrics]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_WORKERS = 2
DEFAULT_USERS = 20
DEFAULT_JOURNEYS = 1000  # per user
DEFAULT_ROUNDS = 3
WORKER_WAIT = 60.0
CELL_LIMIT = 600.0


def _user_class():
    import gevent

    from authbench.user import JourneyOutcome, JourneyUser

    class NullUser(JourneyUser):
        journey_name = "null journey"

        def journey(self) -> JourneyOutcome:
            gevent.sleep(0)  # a yield, as any real journey's I/O gives
            return JourneyOutcome(True, account="user000")

    return NullUser


def _worker(port: int) -> int:
    import locust  # noqa: F401  (gevent patches before ssl is imported)

    from authbench.distributed import worker
    from authbench.runner import create_environment

    environment = create_environment(_user_class(), settings=None)
    return worker.serve(worker.connect(environment, "127.0.0.1", port))


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _measure(args: argparse.Namespace, results: Path) -> tuple[int, float, float]:
    """(samples received, master CPU seconds, wall seconds) of one cell."""
    from authbench import headless
    from authbench.distributed import local, master
    from authbench.patterns import Pattern, Plan
    from authbench.runner import create_environment

    port = local.free_port()
    environment = create_environment(_user_class(), settings=None)
    coordinator = master.create_master(environment, local.LOOPBACK, port)
    command = [sys.executable, __file__, "--worker", str(port)]
    processes = [subprocess.Popen(command, stdout=subprocess.DEVNULL, start_new_session=True)
                 for _ in range(args.workers)]
    try:
        coordinator.wait_for_workers(args.workers, WORKER_WAIT)
        plan = Plan((Pattern(args.users, args.journeys),), warmup=0.0)
        cpu, wall = _cpu_seconds(), time.monotonic()
        report = headless.execute(plan, _user_class(), None, config={"bench": "master_ingest"}, results_base=results,
                                  cell_time_limit=CELL_LIMIT, say=lambda _text: None, environment=environment,
                                  metrics_port=local.free_port() if args.metrics else None)
        cpu, wall = _cpu_seconds() - cpu, time.monotonic() - wall
    finally:
        environment.runner.quit()
        local.reap(processes)
    if not report.complete or report.degraded:
        raise SystemExit(f"cell complete={report.complete}, degraded={report.degraded}")
    with open(report.run_dir / "samples.csv") as handle:
        samples = sum(1 for _ in handle) - 1
    return samples, cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=DEFAULT_WORKERS)
    parser.add_argument("--users", type=int, default=DEFAULT_USERS)
    parser.add_argument("--journeys", type=int, default=DEFAULT_JOURNEYS)
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    parser.add_argument("--metrics", action="store_true", help="serve /metrics too (its counters see every sample)")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        sys.exit(_worker(args.worker))
    if min(args.workers, args.users, args.journeys, args.rounds) < 1:
        parser.exit(2, "master_ingest.py: error: --workers, --users, --journeys and --rounds must be at least 1\n")

    import locust  # noqa: F401

    ceilings, rates = [], []
    with tempfile.TemporaryDirectory(prefix="master-ingest-") as results:
        for round_number in range(args.rounds):
            samples, cpu, wall = _measure(args, Path(results))
            assert samples == args.users * args.journeys, samples
            ceilings.append(samples / cpu)
            rates.append(samples / wall)
            print(f"round {round_number + 1}: {samples} samples in {wall:.1f} s ({samples / wall:.0f}/s observed), "
                  f"master CPU {cpu:.2f} s = {1e6 * cpu / samples:.0f} us/sample", flush=True)
    print(f"\n{datetime.date.today()}, {os.cpu_count()} cores, Python {platform.python_version()}, {args.workers} "
          f"workers, {args.users} users x {args.journeys} null journeys, {args.rounds} rounds, "
          f"/metrics {'on' if args.metrics else 'off'}, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"median: {statistics.median(rates):.0f} samples/s observed; master ceiling "
          f"{statistics.median(ceilings):.0f} samples/s per core of its own")


if __name__ == "__main__":
    main()
