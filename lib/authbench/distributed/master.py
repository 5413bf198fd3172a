"""The master's side: welcome workers of the same version, hand out each cell's users, merge the samples.

For each cell the master gives every user of the pattern a global index and assigns the users round
robin to the live workers, with the warm-up's end as one epoch time for all. Workers send back every
journey; the master fires `events.sample` for each (so the recorder, the web UI and /metrics see the
whole run) and knows the cell is done when every user has reported its last measured journey.

A worker lost mid-cell (no heartbeat for `WORKER_LIVENESS` seconds) takes its unfinished users with it:
they are not re-spawned elsewhere (that would break the per-user counts); the cell ends when the
others finish and is marked degraded with the workers, users and journeys lost. Whatever the lost
worker had already reported stays in the results.
"""

from __future__ import annotations

import logging
import socket
import time
from dataclasses import dataclass, field
from typing import Any

import gevent
from gevent.event import Event
from locust import runners
from locust.env import Environment
from locust.runners import STATE_MISSING, MasterRunner

from .. import __version__
from ..events import RunEvents
from ..patterns import Pattern
from ..results.failures import Evidence
from ..results.sample import MEASURED, Sample
from . import DistributedError, protocol

DEFAULT_WORKER_WAIT = 60.0  # seconds the master waits for the workers it expects
# Heartbeats (one a second) a worker may miss before it counts as lost. Locust's 3 is too tight for a
# worker whose users keep its CPU busy on a crowded machine; tests pass a shorter one.
WORKER_LIVENESS = 10
LIVENESS_POLL = 0.2  # seconds between checks of the workers' liveness while a cell runs
STOP_GRACE = 5.0  # seconds beyond the stop timeout a worker has to confirm a cut-short cell
log = logging.getLogger(__name__)


@dataclass
class CellTracker:
    """One cell as the master sees it: who runs which users, what came back, who was lost."""

    id: int
    pattern: Pattern
    repetition: int
    assignment: dict[str, list[int]]  # worker id → global user indexes
    events: RunEvents
    measured: list[Sample] = field(default_factory=list)
    counts: dict[int, int] = field(default_factory=dict)  # measured journeys received per user
    finished: set[int] = field(default_factory=set)
    lost: set[str] = field(default_factory=set)
    stopped: set[str] = field(default_factory=set)
    done: Event = field(default_factory=Event)
    all_stopped: Event = field(default_factory=Event)

    def receive(self, worker: str, data: dict[str, Any]) -> None:
        if worker in self.lost or worker not in self.assignment:
            return
        for row in data["samples"]:
            sample = protocol.row_sample(row, self.pattern.label, self.repetition, worker)
            if sample.phase == MEASURED:
                self.measured.append(sample)
                self.counts[sample.user] = self.counts.get(sample.user, 0) + 1
            self.events.sample.fire(sample=sample)
        self.finished.update(int(user) for user in data["finished"])
        self._check()

    def lose(self, worker: str) -> None:
        if worker in self.assignment and worker not in self.lost:
            self.lost.add(worker)
            self._check()
            self._check_stopped()

    def confirm_stop(self, worker: str) -> None:
        self.stopped.add(worker)
        self._check_stopped()

    def _check(self) -> None:
        live = [user for worker, users in self.assignment.items() if worker not in self.lost for user in users]
        if all(user in self.finished for user in live):
            self.done.set()

    def _check_stopped(self) -> None:
        if all(worker in self.stopped or worker in self.lost for worker in self.assignment):
            self.all_stopped.set()

    def degraded(self) -> dict[str, int] | None:
        if not self.lost:
            return None
        users = [user for worker in self.lost for user in self.assignment[worker] if user not in self.finished]
        return {"workers_lost": len(self.lost), "users_lost": len(users),
                "journeys_lost": sum(self.pattern.runs - self.counts.get(user, 0) for user in users)}


@dataclass
class CellOutcome:
    measured: list[Sample]
    complete: bool
    degraded: dict[str, int] | None


class Coordinator:
    """authbench's side of a MasterRunner, for the whole run: the welcomed workers and the current cell."""

    def __init__(self, environment: Environment, runner: MasterRunner) -> None:
        self.environment = environment
        self.runner = runner
        self.events: RunEvents = environment.authbench.events
        self.welcomed: set[str] = set()
        self.refused: dict[str, str] = {}  # worker id → its authbench version
        self.cell: CellTracker | None = None
        self._cells = 0
        runner.register_message(protocol.HELLO, self._hello)
        runner.register_message(protocol.SAMPLES, self._samples)
        runner.register_message(protocol.STOPPED, self._stopped)
        runner.register_message(protocol.FAILURE, self._failure)
        runner.register_message(protocol.LEVEL_DONE, self._level_done)  # arrival-rate levels (openmodel.distributed)

    def _hello(self, environment: Environment, msg: Any) -> None:
        version = str((msg.data or {}).get("version"))
        if version == __version__:
            self.welcomed.add(msg.node_id)
            self.runner.send_message(protocol.WELCOME, {}, client_id=msg.node_id)
            return
        self.refused[msg.node_id] = version
        log.error("refused worker %s: it runs authbench %s, this master %s", msg.node_id, version, __version__)
        reason = (f"the master runs authbench {__version__}, this worker {version}: install the same authbench "
                  "version on every machine")
        self.runner.send_message(protocol.REFUSED, {"reason": reason}, client_id=msg.node_id)

    def _samples(self, environment: Environment, msg: Any) -> None:
        cell = self.cell
        if cell is not None and cell.id == msg.data["cell"]:
            cell.receive(msg.node_id, msg.data)

    def _failure(self, environment: Environment, msg: Any) -> None:
        self.events.failure.fire(evidence=Evidence.from_dict(msg.data["evidence"]))

    def _level_done(self, environment: Environment, msg: Any) -> None:
        cell = self.cell
        if cell is not None and cell.id == msg.data["cell"] and hasattr(cell, "level_done"):
            cell.level_done(msg.node_id, msg.data)

    def new_cell_id(self) -> int:
        self._cells += 1
        return self._cells

    def notice_lost(self, cell: Any) -> None:
        self._notice_lost(cell)

    def _stopped(self, environment: Environment, msg: Any) -> None:
        cell = self.cell
        if cell is not None and cell.id == msg.data["cell"]:
            cell.confirm_stop(msg.node_id)

    def live_workers(self) -> list[str]:
        clients = self.runner.clients
        return sorted(worker for worker in self.welcomed
                      if worker in clients and clients[worker].state != STATE_MISSING)

    def wait_for_workers(self, count: int, timeout: float = DEFAULT_WORKER_WAIT) -> None:
        """Until `count` workers of this version are connected; DistributedError on a refusal or timeout."""
        deadline = time.monotonic() + timeout
        while len(self.live_workers()) < count:
            if self.refused:
                worker, version = next(iter(self.refused.items()))
                raise DistributedError(f"worker {worker} runs authbench {version}, this master {__version__}: "
                                       "install the same authbench version on every machine", 2)
            if time.monotonic() > deadline:
                raise DistributedError(
                    f"only {len(self.live_workers())} of {count} workers connected within {timeout:g} s: start "
                    f"them with `authbench run --worker --master-host <this host> --master-port "
                    f"{self.runner.master_bind_port}` (or wait longer with --worker-wait)")
            gevent.sleep(LIVENESS_POLL)

    def run_cell(self, pattern: Pattern, repetition: int, warmup: float, time_limit: float,
                 on_measured: Any) -> CellOutcome:
        workers = self.live_workers()
        if not workers:
            raise DistributedError("no workers left to run the next pattern: start workers and run again")
        self._cells += 1
        assignment: dict[str, list[int]] = {}
        for user in range(pattern.users):
            assignment.setdefault(workers[user % len(workers)], []).append(user)
        cell = CellTracker(self._cells, pattern, repetition, assignment, self.events)
        self.cell = cell
        warmup_end = time.time() + warmup
        for worker, users in assignment.items():
            self.runner.send_message(protocol.CELL, {
                "cell": cell.id, "users": pattern.users, "runs": pattern.runs, "repetition": repetition,
                "warmup_end": warmup_end, "indexes": users}, client_id=worker)
        timer = gevent.spawn_later(max(0.0, warmup_end - time.time()), on_measured)
        deadline = time.monotonic() + warmup + time_limit
        complete = True
        while not cell.done.wait(LIVENESS_POLL):
            self._notice_lost(cell)
            if time.monotonic() > deadline:
                complete = False
                self._cut_short(cell)
                break
        timer.kill()
        self._notice_lost(cell)
        return CellOutcome(sorted(cell.measured, key=lambda s: (s.user, s.iteration)), complete, cell.degraded())

    def _notice_lost(self, cell: CellTracker) -> None:
        live = set(self.live_workers())
        for worker in cell.assignment:
            if worker not in live and worker not in cell.lost:
                log.warning("worker %s lost in the middle of %s #%d", worker, cell.pattern.label, cell.repetition)
                cell.lose(worker)

    def _cut_short(self, cell: CellTracker) -> None:
        for worker in cell.assignment:
            if worker not in cell.lost:
                self.runner.send_message(protocol.STOP, {"cell": cell.id}, client_id=worker)
        deadline = time.monotonic() + (self.environment.stop_timeout or 0) + STOP_GRACE
        while not cell.all_stopped.wait(LIVENESS_POLL) and time.monotonic() < deadline:
            self._notice_lost(cell)


def coordinator_of(environment: Environment) -> Coordinator:
    """The coordinator of the environment's master runner, created on first use."""
    context = environment.authbench
    if context.coordinator is None:
        context.coordinator = Coordinator(environment, environment.runner)
    return context.coordinator


def create_master(environment: Environment, bind_host: str, bind_port: int,
                  liveness: int = WORKER_LIVENESS) -> Coordinator:
    """A MasterRunner for the environment, ready to welcome workers (before any of them connects)."""
    runners.HEARTBEAT_LIVENESS = liveness  # Locust reads it whenever a heartbeat arrives
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:  # Locust exits the process on a busy port; a one-line error is kinder
        probe.bind(("" if bind_host in ("*", "0.0.0.0") else bind_host, bind_port))
    except OSError as exc:
        raise DistributedError(f"cannot listen for workers on {bind_host}:{bind_port}: {exc.strerror}; "
                               "choose another --master-bind-port", 2) from None
    finally:
        probe.close()
    environment.create_master_runner(master_bind_host=bind_host, master_bind_port=bind_port)
    return coordinator_of(environment)
