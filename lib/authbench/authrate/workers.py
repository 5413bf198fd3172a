"""`authbench authrate --workers N`: N processes share the connections, `-m` and `-M`; one table.

Each worker is `authbench authrate` again with a hidden `--worker-slot i/N`: it takes its share,
waits for the go (so all start together), and sends its counts as JSON lines every `FLUSH_S` —
histograms HDR-encoded, merged exactly. The parent prints the table on its own clock.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

import gevent
from gevent import subprocess
from hdrh.histogram import HdrHistogram

from ..kinds.ldap.client import Endpoint
from ..sockets import time_wait_count
from .loop import BindPlan, Limits, Outcome, Run, Table
from .ratetable import Counts

SLOT_OPTION = "--worker-slot"
FLUSH_S = 0.1  # how often a worker sends its counts; the table's intervals are this precise
START_LIMIT_S = 60.0  # a worker not ready by then: the run does not start


def share(limits: Limits, slot: int, workers: int) -> Limits:
    """Worker `slot`'s part: connections and iterations split exactly, the target rate evenly."""
    def part(total: int) -> int:
        return total // workers + (1 if slot < total % workers else 0)

    iterations = part(limits.iterations)
    idle = limits.iterations > 0 and iterations == 0  # -m smaller than --workers: nothing to do (0 is unlimited)
    return replace(limits, connections=0 if idle else part(limits.connections), iterations=iterations,
                   target_rate=limits.target_rate / workers, interval_s=FLUSH_S)


def _send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


class _Sender(Table):
    """A worker's table: every interval's counts to the parent instead of a row on screen."""

    def __init__(self) -> None:
        super().__init__(lambda _: None, False, ())

    def start(self) -> None:
        pass

    def interval(self, recent: Counts, recent_s: float, total_s: float):
        _send({"ops": recent.ops, "errors": recent.errors, "total_ms": recent.total_ms,
               "histogram": recent.histogram.encode().decode()})


def worker(plan: BindPlan, limits: Limits, endpoint: Endpoint, slot: int, workers: int) -> int:
    """The child's side: ready, wait for the go, run the share, report the outcome."""
    if plan.arguments.seed is not None:
        plan.arguments.random.seed(f"{plan.arguments.seed}/{slot}")  # each worker its own, repeatable, stream
    _send({"ready": slot})
    sys.stdin.readline()
    mine = share(limits, slot, workers)
    outcome = Run(plan, mine, endpoint, _Sender()).execute()
    _send({"end": {"reasons": dict(outcome.reasons), "behind_max_s": outcome.behind_max_s,
                   "late": outcome.late_ops, "opened": outcome.connections_opened,
                   "unanswered": outcome.unanswered}})
    return 0


def _counts(message: dict) -> Counts:
    histogram = HdrHistogram.decode(message["histogram"].encode())
    return Counts(message["ops"], message["errors"], message["total_ms"], histogram)


def run_workers(argv: Sequence[str], limits: Limits, endpoint: Endpoint, table: Table, workers: int,
                env: dict[str, str] | None = None) -> Outcome:
    """The parent's side: start the workers (`env` added to theirs), merge their counts into the table every
    `-i` seconds."""
    command = [sys.executable, "-m", "authbench", "authrate", *argv]
    environment = {**os.environ, **(env or {})}
    children = [subprocess.Popen([*command, SLOT_OPTION, f"{slot}/{workers}"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, env=environment) for slot in range(workers)]
    box, ends = [Counts()], []  # box[0]: the counts since the last row
    try:
        with gevent.Timeout(START_LIMIT_S, RuntimeError("the workers did not start")):
            for child in children:
                if "ready" not in json.loads(child.stdout.readline() or "{}"):
                    raise RuntimeError("a worker stopped before it was ready")
        for child in children:
            child.stdin.write("go\n")
            child.stdin.flush()
        measure_from = last = time.perf_counter() + limits.warmup_s

        def read(child) -> None:
            for line in child.stdout:
                message = json.loads(line)
                if "end" in message:
                    ends.append(message["end"])
                    return
                elif time.perf_counter() >= measure_from:
                    box[0].absorb(_counts(message))

        readers = [gevent.spawn(read, child) for child in children]
        gevent.sleep(max(0.0, measure_from - time.perf_counter()))
        table.start()
        while not all(r.dead for r in readers):
            tick = last + limits.interval_s
            while time.perf_counter() < tick and not all(r.dead for r in readers):
                gevent.joinall(readers, timeout=max(0.0, tick - time.perf_counter()))
            now = time.perf_counter()
            recent, box[0] = box[0], Counts()
            if recent.ops or not all(r.dead for r in readers):
                table.interval(recent, now - last, now - measure_from)
            last = now
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
            child.wait()
    if len(ends) < workers:
        print(f"warning: {workers - len(ends)} worker(s) ended without their report; their last counts are missing",
              file=sys.stderr, flush=True)
    reasons: Counter = Counter()
    for end in ends:
        reasons.update(end["reasons"])
    return Outcome(table.total, max(0.0, last - measure_from), reasons,
                   max((e["behind_max_s"] for e in ends), default=0.0), sum(e["late"] for e in ends),
                   sum(e["opened"] for e in ends), None if limits.keep_open else time_wait_count(endpoint.port),
                   unanswered=sum(e["unanswered"] for e in ends))
