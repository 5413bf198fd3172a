"""The lab's components watched while a run measures: one that goes down outside the fault plan is named.

A kill -9'd IdP node leaves the balancer sending every journey to the other one: the run goes on, and
its figures are a one-node cluster's. The watcher reads the lab's pids (through embedded_lab, no health
probe) every WATCH_INTERVAL_S and at each cell's start and end. A watched component that goes down is
said in one line when it is seen, and every cell during which it was down is marked degraded with its
name (`RunContext.cluster_marks` → the cell's `degraded.components_down`), which summary.json, the
report and the capacity search (it does not confirm on such a step) read. Watched: the target
cluster's own components and the lab's shared servers that ran when the run began, except those the
fault plan stops or starts: those are its business (docs/failover.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from .. import embedded_lab
from ..errors import AuthbenchError
from ..results.table import COMPONENTS_DOWN, run_label
from .faults.plan import LAB_ACTIONS

WATCH_INTERVAL_S = 0.5


def _serves(name: str, backend: str | None) -> bool:
    """A shared server (no cluster prefix) or one of the target cluster's own."""
    cluster, _, _ = name.rpartition("/")
    return cluster in ("", backend or "")


class LabWatcher:
    """Watches named lab components in a background thread (a greenlet under gevent) until stopped."""

    def __init__(self, lab_dir: str, watched: Sequence[str], say: Callable[[str], None],
                 interval: float = WATCH_INTERVAL_S) -> None:
        self.lab_dir = lab_dir
        self.watched = tuple(watched)
        self.say = say
        self.interval = interval
        self.down: dict[str, int | None] = {}  # name → the pid that ended (None: stopped through the lab)
        self.cell_down: set[str] = set()  # down at some time during the current cell
        self.cell = ""  # the label of the cell under way ("" between cells)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._context: Any = None

    def listen(self, context: Any) -> None:
        """Follow a run: `context` is its RunContext until `stop`."""
        self._context = context
        context.events.cell_start.add_listener(self._cell_start)
        context.events.cell_stop.add_listener(self._cell_stop)
        context.cluster_marks = self.marks

    def _cell_start(self, pattern: Any, repetition: int, **_: Any) -> None:
        with self._lock:
            self.cell, self.cell_down = run_label(pattern.label, repetition), set(self.down)
        self.check()

    def _cell_stop(self, **_: Any) -> None:
        with self._lock:
            self.cell = ""

    def marks(self) -> dict[str, Any]:
        """The current cell's mark: {components_down: [names]}, or {} when the cluster stayed whole."""
        self.check()
        with self._lock:
            down = sorted(self.cell_down)
        return {COMPONENTS_DOWN: down} if down else {}

    def check(self) -> None:
        """One reading of the lab's pids; says what went down or came back since the last one."""
        try:
            now = embedded_lab.component_pids(self.lab_dir)
        except (AuthbenchError, OSError):  # lab.json unreadable this once: the next reading decides
            return
        lines = []
        with self._lock:
            where = f"during {self.cell}" if self.cell else "between cells"
            for name in self.watched:
                entry = now.get(name) or {"pid": None, "running": False}
                if entry["running"]:
                    if name in self.down:
                        del self.down[name]
                        lines.append(f"lab component {name} is up again (pid {entry['pid']}) {where}")
                    continue
                if name not in self.down:
                    self.down[name] = entry["pid"]
                    how = f"its process (pid {entry['pid']}) ended" if entry["pid"] else "stopped through the lab"
                    lines.append(f"lab component {name} went down {where}: {how}, not by the fault plan; the cells "
                                 "measured while it is down are marked degraded")
                self.cell_down.add(name)
        for line in lines:
            self.say(line)

    def start(self) -> LabWatcher:
        self._thread = threading.Thread(target=self._loop, name="lab-watcher", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """End the watching and stop following the run (a web UI's environment outlives it)."""
        if self._context is not None:
            self._context.events.cell_start.remove_listener(self._cell_start)
            self._context.events.cell_stop.remove_listener(self._cell_stop)
            self._context.cluster_marks = None
            self._context = None
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.interval * 5)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.check()


@contextmanager
def watching(lab_dir: str, backend: str | None, faults: Sequence[Any],
             say: Callable[[str], None]) -> Iterator[LabWatcher | None]:
    """A started watcher of a lab journey's components, the fault plan's own left out; None off the lab."""
    if not lab_dir:
        yield None
        return
    played = {fault.target for fault in faults if fault.action in LAB_ACTIONS}
    try:
        now = embedded_lab.component_pids(lab_dir)
    except AuthbenchError:
        yield None
        return
    watched = [name for name, entry in now.items() if entry["running"] and _serves(name, backend)
               and name not in played]
    watcher = LabWatcher(lab_dir, watched, say).start()
    try:
        yield watcher
    finally:
        watcher.stop()
