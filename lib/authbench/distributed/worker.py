"""A worker: connects to the master, proves its version, runs the users each cell assigns it.

Each cell's users run under a phase controller of their own (the global indexes and warm-up end the
master sent), so every user does exactly its `runs` measured journeys. Samples go to the master in
small batches — at least every `FLUSH_INTERVAL`, and at once when a user finishes — and Locust's step
statistics go through Locust's own report, with the warm-up's left out.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any

import gevent
from gevent.event import Event
from locust import runners
from locust.env import Environment
from locust.runners import STATE_INIT, WorkerRunner
from locust.stats import StatsEntry

from .. import __version__
from ..accounts import AccountPicker
from ..mix import owner_of, split_classes
from ..openmodel.distributed import serve_levels
from ..patterns import Pattern
from ..phases import PhaseController
from ..results.failures import Evidence
from ..results.sample import MEASURED, WARMUP, Sample
from . import DistributedError, protocol

CONNECT_ATTEMPT = 1.0  # seconds per attempt to reach the master (Locust's CONNECT_TIMEOUT)
DEFAULT_CONNECT_WAIT = 30.0  # seconds a worker tries to reach the master before giving up
DEFAULT_MASTER_TIMEOUT = 10.0  # seconds without the master's heartbeat before a worker quits (Locust: 60)
HELLO_RETRY = 1.0  # seconds between version hellos until the master answers
HELLO_TIMEOUT = 15.0  # seconds the master has to answer the hello
FLUSH_INTERVAL = 0.25  # seconds a finished journey may wait in a batch before it is sent
BATCH_SIZE = 100  # samples per message at most
EXIT_MASTER_LOST = 1
EXIT_UNREACHABLE = 2
log = logging.getLogger(__name__)


@dataclass
class _Cell:
    id: int
    controller: PhaseController
    batch: list[protocol.Row] = field(default_factory=list)
    finished: list[int] = field(default_factory=list)
    stopped: bool = False


class WorkerAgent:
    """authbench's side of a WorkerRunner: the hello, the cells, the sample batches."""

    def __init__(self, environment: Environment, runner: WorkerRunner) -> None:
        self.environment = environment
        self.runner = runner
        self.context = environment.authbench
        self.welcomed = Event()
        self.refused: str | None = None
        self.cell: _Cell | None = None
        self.level_phase: str | None = None  # WARMUP or MEASURED while an arrival-rate level runs here
        self.idle = Event()  # no users of an earlier cell left
        self.idle.set()
        runner.register_message(protocol.WELCOME, self._welcome)
        runner.register_message(protocol.REFUSED, self._refused)
        runner.register_message(protocol.CELL, self._cell, concurrent=True)
        runner.register_message(protocol.STOP, self._stop, concurrent=True)
        self.context.events.sample.add_listener(self._sample)
        self.context.events.failure.add_listener(self._failure)
        environment.events.report_to_master.add_listener(self._strip_warmup_stats)
        serve_levels(self)  # arrival-rate levels, each worker its share of the slots

    # -- handshake ---------------------------------------------------------------------------------

    def hello(self, timeout: float = HELLO_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while not self.welcomed.is_set() and self.refused is None:
            if time.monotonic() > deadline:
                raise DistributedError(
                    f"the master at {self.runner.master_host}:{self.runner.master_port} never answered authbench's "
                    f"hello within {timeout:g} s: is it `authbench run --master` (not plain Locust)?", 2)
            self.runner.send_message(protocol.HELLO, {"version": __version__})
            self.welcomed.wait(HELLO_RETRY)
        if self.refused is not None:
            raise DistributedError(self.refused, 2)

    def _welcome(self, environment: Environment, msg: Any) -> None:
        self.welcomed.set()

    def _refused(self, environment: Environment, msg: Any) -> None:
        self.refused = str(msg.data["reason"])

    # -- cells -------------------------------------------------------------------------------------

    def _cell(self, environment: Environment, msg: Any) -> None:
        spec = msg.data
        pattern = Pattern(int(spec["users"]), int(spec["runs"]))
        classes = self.environment.user_classes
        split = split_classes(classes, pattern.users)  # a --mix: the pattern's users per journey, as the master's
        controller = PhaseController(pattern, int(spec["repetition"]), 0.0, on_measured=self._measured,
                                     indexes=spec["indexes"], warmup_end=float(spec["warmup_end"]),
                                     on_finished=self._finished, split=split)
        cell = _Cell(int(spec["cell"]), controller)
        for picker in self._pickers():  # this worker's accounts, disjoint from the other workers'
            picker.share(spec["indexes"], pattern.users)
        self.idle.wait((self.environment.stop_timeout or 0) + 1)  # the last cell's users may still be exiting
        self.idle.clear()
        self.cell = cell
        self.context.controller = controller
        owner = owner_of(split) if split else [0] * pattern.users
        counts = {cls.__name__: sum(1 for index in controller.indexes if owner[index] == position)
                  for position, cls in enumerate(classes)}
        self.runner.start_worker(counts)
        while not controller.done.wait(FLUSH_INTERVAL) and not cell.stopped:
            self._flush(cell)
        self._wind_down(cell)

    def _pickers(self) -> list[AccountPicker]:
        """The account pickers of the run's journeys (one, or one per journey of a --mix)."""
        classes = self.environment.user_classes
        settings = [self.context.settings, *(getattr(cls, "mix_settings", None) for cls in classes)]
        pickers = [getattr(each, "accounts", None) for each in settings]
        return list({id(picker): picker for picker in pickers if isinstance(picker, AccountPicker)}.values())

    def _wind_down(self, cell: _Cell) -> None:
        if not cell.stopped:
            deadline = time.monotonic() + (self.environment.stop_timeout or 0) + 1
            while self.runner.user_count and time.monotonic() < deadline:
                gevent.sleep(0.01)  # users stop by themselves after their last ticket
            self.runner.stop()
        self.runner.worker_state = STATE_INIT  # the master sees this worker ready for the next cell
        self.idle.set()

    def _stop(self, environment: Environment, msg: Any) -> None:
        cell = self.cell
        if cell is None or cell.id != int(msg.data["cell"]):
            return
        cell.stopped = True
        self.runner.stop()  # users get stop_timeout to finish the journey they are in
        self.runner._send_stats()
        self._flush(cell, last=True)
        self.runner.send_message(protocol.STOPPED, {"cell": cell.id})

    def _measured(self) -> None:
        self.environment.stats.reset_all()  # what Locust counted during the warm-up stays out

    def _sample(self, sample: Sample) -> None:
        cell = self.cell
        if cell is None:
            return
        cell.batch.append(protocol.sample_row(sample))
        if len(cell.batch) >= BATCH_SIZE:
            self._flush(cell)

    def _failure(self, evidence: Evidence) -> None:
        """Evidence of a failing journey goes to the master, which keeps the first few of each reason."""
        self.runner.send_message(protocol.FAILURE, {"evidence": evidence.to_dict()})

    def _finished(self, user: int) -> None:
        cell = self.cell
        if cell is None:
            return
        cell.finished.append(user)
        last = len(cell.controller.finished) == len(cell.controller.indexes)
        if last:
            self.runner._send_stats()  # the step statistics reach the master before the cell's last samples
        self._flush(cell, last=last)

    def _flush(self, cell: _Cell, last: bool = False) -> None:
        if not cell.batch and not cell.finished and not last:
            return
        batch, finished = cell.batch[:BATCH_SIZE], cell.finished
        cell.batch, cell.finished = cell.batch[BATCH_SIZE:], []
        more = bool(cell.batch)
        self.runner.send_message(protocol.SAMPLES, {"cell": cell.id, "samples": batch, "finished": finished,
                                                    "last": last and not more})
        if more:
            self._flush(cell, last)

    def _strip_warmup_stats(self, client_id: str, data: dict[str, Any]) -> None:
        """Locust reports statistics every few seconds; outside a measured phase they are left out."""
        controller = self.context.controller
        if self.level_phase == MEASURED or (controller is not None and controller.phase != WARMUP):
            return
        data["stats"] = []
        data["stats_total"] = StatsEntry(self.environment.stats, "Aggregated", None).serialize()
        data["errors"] = {}


def connect(environment: Environment, master_host: str, master_port: int, *,
            connect_wait: float = DEFAULT_CONNECT_WAIT,
            master_timeout: float = DEFAULT_MASTER_TIMEOUT) -> WorkerAgent:
    """A worker runner connected to the master, its version accepted; DistributedError otherwise."""
    # Locust reads these module constants when it uses them; authbench bounds both waits its own way.
    runners.CONNECT_TIMEOUT = CONNECT_ATTEMPT
    runners.CONNECT_RETRY_COUNT = max(0, math.ceil(connect_wait / CONNECT_ATTEMPT) - 1)
    runners.MASTER_HEARTBEAT_TIMEOUT = master_timeout
    try:
        runner = environment.create_worker_runner(master_host, master_port)
    except ConnectionError:
        raise DistributedError(
            f"cannot reach the authbench master at {master_host}:{master_port} within {connect_wait:g} s: start "
            "`authbench run --master` there first, or check --master-host, --master-port and the firewall",
            EXIT_UNREACHABLE) from None
    agent = WorkerAgent(environment, runner)
    try:
        agent.hello()
    except DistributedError:
        runner.quit()
        raise
    return agent


def serve(agent: WorkerAgent, master_timeout: float = DEFAULT_MASTER_TIMEOUT) -> int:
    """Run cells until the master says quit (0) or stops answering (1, after `master_timeout`)."""
    runner = agent.runner
    runner.greenlet.join()
    last = runner.last_heartbeat_timestamp
    if last is not None and last < time.time() - master_timeout + 1:
        raise DistributedError(
            f"lost the master at {runner.master_host}:{runner.master_port}: no heartbeat for {master_timeout:g} s "
            "(it was killed or the network failed); the samples it had received are in its results folder",
            EXIT_MASTER_LOST)
    return 0
