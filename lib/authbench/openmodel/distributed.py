"""Arrival-rate levels across workers: each worker starts every n-th slot of one schedule, from one epoch.

The master sends the level with an epoch a little ahead (every worker has the message before slot 0),
and worker k of n starts slots k, k+n, k+2n…; so n processes keep a rate one could not, with the
same intended starts. Samples come back in batches like a pattern's, with the worker's counters so far
(so /metrics on the master follows the level as it runs); at the end each worker sends its final
counters and its HDR histograms (encoded), which the master adds into one LevelOutcome. A worker
lost mid-level takes its share with it: the level is marked degraded.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from typing import Any

import gevent
from gevent.event import Event
from hdrh.histogram import HdrHistogram
from locust.env import Environment

from ..distributed import DistributedError, protocol
from ..events import RunEvents
from ..results.sample import MEASURED, WARMUP, Sample
from .driver import DRAIN_TIMEOUT, LevelDriver, LevelOutcome
from .rates import Arrivals, Level
from .schedule import Schedule

EPOCH_LEAD = 1.0  # seconds from sending a level to its epoch
FLUSH_INTERVAL = 0.25  # seconds a worker's finished journey may wait before it is sent
LIVE_COUNTERS_EVERY = 1.0  # seconds between a worker's counters reaching the master when no journey ended
BATCH_SIZE = 100
POLL = 0.2  # seconds between the master's checks for lost workers
REPORT_GRACE = 10.0  # seconds beyond a level's own bounds the master waits for the workers' reports
COUNTERS = ("planned", "started", "dropped", "late", "unfinished", "not_reached", "ok", "errors", "peak_in_flight")
HISTOGRAMS = ("response", "service", "lag")


def counters(outcome: LevelOutcome) -> dict[str, int]:
    return {name: getattr(outcome, name) for name in COUNTERS}


def outcome_message(cell: int, outcome: LevelOutcome) -> dict[str, Any]:
    return {"cell": cell, "counters": counters(outcome),
            "first_sent": outcome.first_sent, "last_sent": outcome.last_sent,
            "histograms": {name: [getattr(outcome, name).histogram.encode(), getattr(outcome, name).total_ms]
                           for name in HISTOGRAMS}}


def add_counters(outcome: LevelOutcome, per_worker: dict[str, dict[str, int]]) -> None:
    """The level's counters: the sum of each worker's latest (peak in flight too: an upper bound of the whole)."""
    for name in COUNTERS:
        setattr(outcome, name, sum(int(latest.get(name, 0)) for latest in per_worker.values()))


def merge(outcome: LevelOutcome, data: dict[str, Any]) -> None:
    """Add one worker's final histograms and send times (its counters go through add_counters)."""
    sent = [value for value in (outcome.first_sent, data["first_sent"]) if value is not None]
    outcome.first_sent = min(sent) if sent else None
    sent = [value for value in (outcome.last_sent, data["last_sent"]) if value is not None]
    outcome.last_sent = max(sent) if sent else None
    for name, (encoded, total_ms) in data["histograms"].items():
        latencies = getattr(outcome, name)
        latencies.histogram.add(HdrHistogram.decode(encoded))
        latencies.total_ms += float(total_ms)


class LevelTracker:
    """One level as the master sees it; shaped like distributed.master.CellTracker for the coordinator."""

    def __init__(self, cell: int, level: Level, repetition: int, workers: list[str], events: RunEvents,
                 outcome: LevelOutcome) -> None:
        self.id = cell
        self.pattern = level
        self.repetition = repetition
        self.assignment: dict[str, list[int]] = {worker: [] for worker in workers}
        self.events = events
        self.outcome = outcome
        self.lost: set[str] = set()
        self.reported: set[str] = set()
        self.counters: dict[str, dict[str, int]] = {}  # each worker's latest counters: live figures for /metrics
        self.done = Event()

    def receive(self, worker: str, data: dict[str, Any]) -> None:
        if worker in self.lost:
            return
        for row in data["samples"]:
            sample = protocol.row_sample(row, self.pattern.label, self.repetition)
            if sample.phase == MEASURED:
                self.outcome.samples.append(sample)
            self.events.sample.fire(sample=sample)
        if data.get("counters") and worker not in self.reported:  # its final ones come with level_done
            self.counters[worker] = data["counters"]
            add_counters(self.outcome, self.counters)

    def level_done(self, worker: str, data: dict[str, Any]) -> None:
        if worker in self.assignment and worker not in self.lost and worker not in self.reported:
            self.counters[worker] = data["counters"]
            add_counters(self.outcome, self.counters)
            merge(self.outcome, data)
            self.reported.add(worker)
            self._check()

    def lose(self, worker: str) -> None:
        if worker in self.assignment and worker not in self.reported:
            self.lost.add(worker)
            if self.counters.pop(worker, None) is not None:  # its share goes with it (the level is degraded)
                add_counters(self.outcome, self.counters)
            self._check()

    def confirm_stop(self, worker: str) -> None:  # levels are never stopped by message: bounded on the worker
        pass

    def _check(self) -> None:
        if all(worker in self.reported or worker in self.lost for worker in self.assignment):
            self.done.set()

    def degraded(self) -> dict[str, int] | None:
        if not self.lost:
            return None
        share = len(self.lost) / len(self.assignment)
        return {"workers_lost": len(self.lost), "users_lost": 0, "journeys_lost": round(self.pattern.tests * share)}


def run_on_workers(environment: Environment, level: Level, repetition: int, arrivals: Arrivals,
                   time_limit: float, on_measured: Any) -> tuple[LevelOutcome, dict[str, int] | None]:
    """The level on the master's workers, each its share of the slots; their results merged."""
    coordinator = environment.authbench.coordinator
    workers = coordinator.live_workers()
    if not workers:
        raise DistributedError("no workers left to run the next level: start workers and run again")
    outcome = LevelOutcome(level, arrivals)
    epoch = time.time() + EPOCH_LEAD
    outcome.measured_begin = epoch + Schedule(level.rate, level.duration, level.warmup, arrivals.kind,
                                              arrivals.seed).measured_begin
    tracker = LevelTracker(coordinator.new_cell_id(), level, repetition, workers, coordinator.events, outcome)
    coordinator.cell = tracker
    for share, worker in enumerate(workers):
        coordinator.runner.send_message(protocol.LEVEL, {
            "cell": tracker.id, "level": dataclasses.asdict(level), "arrivals": dataclasses.asdict(arrivals),
            "repetition": repetition, "epoch": epoch, "time_limit": time_limit, "share": share, "of": len(workers)},
            client_id=worker)
    environment.authbench.level = outcome
    timer = gevent.spawn_later(max(0.0, outcome.measured_begin - time.time()), on_measured)
    natural = level.warmup + level.duration
    wait = min(time_limit, natural + max(REPORT_GRACE, natural / 2)) + DRAIN_TIMEOUT + REPORT_GRACE
    deadline = time.monotonic() + EPOCH_LEAD + wait  # a worker that never reports cannot hold the run for long
    while not tracker.done.wait(POLL) and time.monotonic() < deadline:
        coordinator.notice_lost(tracker)
    timer.kill()
    outcome.finished = True
    outcome.samples.sort(key=lambda sample: sample.iteration)
    if not tracker.done.is_set():  # a worker never reported: its share is lost
        for worker in tracker.assignment:
            tracker.lose(worker)
    return outcome, tracker.degraded()


def serve_levels(agent: Any) -> None:
    """On a worker (distributed.worker.WorkerAgent): run the levels the master sends."""
    def level(environment: Environment, msg: Any) -> None:  # Locust passes both by name
        _run_level(agent, msg.data)

    agent.runner.register_message(protocol.LEVEL, level, concurrent=True)


def _run_level(agent: Any, spec: dict[str, Any]) -> None:
    environment, runner = agent.environment, agent.runner
    agent.idle.wait((environment.stop_timeout or 0) + 1)
    agent.idle.clear()
    agent.cell, agent.context.controller = None, None  # no pattern cell: samples go through this batch
    cell = int(spec["cell"])
    batch: list[protocol.Row] = []

    def flush(always: bool = False) -> None:
        """Send the finished journeys with this worker's counters so far (also without journeys if `always`)."""
        while batch or always:
            chunk = batch[:BATCH_SIZE]
            del batch[:BATCH_SIZE]
            runner.send_message(protocol.SAMPLES, {"cell": cell, "samples": chunk, "finished": [], "last": False,
                                                   "counters": counters(driver.outcome)})
            always = False

    def keep_flushing() -> None:
        ticks = round(LIVE_COUNTERS_EVERY / FLUSH_INTERVAL)
        for tick in itertools.count(1):
            gevent.sleep(FLUSH_INTERVAL)
            flush(always=tick % ticks == 0)

    def collect(sample: Sample) -> None:
        batch.append(protocol.sample_row(sample))

    def measuring() -> None:  # Locust's step statistics count from here, as on the master
        environment.stats.reset_all()
        agent.level_phase = MEASURED

    driver = LevelDriver(environment, environment.user_classes[0], Level(**spec["level"]),
                         int(spec["repetition"]), Arrivals(**spec["arrivals"]), on_sample=collect,
                         on_measured=measuring,
                         on_failure=lambda evidence: agent.context.events.failure.fire(evidence=evidence),
                         epoch=float(spec["epoch"]), share=(int(spec["share"]), int(spec["of"])))
    agent.level_phase = WARMUP
    flusher = gevent.spawn(keep_flushing)
    try:
        outcome = driver.run(float(spec["time_limit"]))
    finally:
        flusher.kill()
        flush()
        runner._send_stats()  # the step statistics reach the master before the level's outcome
        agent.level_phase = None
        agent.idle.set()
    runner.send_message(protocol.LEVEL_DONE, outcome_message(cell, outcome))
