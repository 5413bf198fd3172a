"""CPU and memory of the servers under test and of the generator, sampled every second while cells run.

The OneSpan baseline reports server and database CPU beside throughput; the 2012 report could only
guess why Terracotta saturated. A component is a process and all its descendants (a gunicorn node is
an arbiter and its workers). CPU is user + system time between two samples, as percent of one core;
memory is the resident set (shared pages count in every process that maps them).

Rows go to `resources.csv` as they are taken; each cell gets a summary of its measured phase. A cell
whose generator process used nearly a whole core is flagged: the generator, not the system under
test, may have set the pace, so its figures are not to be trusted. Beside it, how much of the time
the generator was ready to run but waited for a core (the kernel's schedstat): on a machine shared
with the servers under test that is the machine's limit showing, not the generator's.
"""

from __future__ import annotations

import contextlib
import csv
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from ..results.sample import MEASURED, WARMUP
from .prometheus import Queries

SAMPLE_INTERVAL_S = 1.0
GENERATOR = "generator"
GENERATOR_SATURATED_PCT = 90.0  # one generator process (gevent: one core at most) using more CPU than this
RESOURCES_FILE = "resources.csv"
COLUMNS = ("time", "pattern", "repetition", "phase", "component", "pid", "cpu_pct", "rss_bytes")
MIB = 1024 * 1024
FULL_INTERVAL_SHARE = 0.5  # a reading covering less than this share of an interval is left out of maxima


@dataclass
class Reading:
    time: float
    phase: str
    component: str
    cpu_pct: float
    cpu_s: float
    rss_bytes: int
    per_process_pct: dict[int, float]
    per_process_waiting_pct: dict[int, float] = field(default_factory=dict)  # generator only: runnable, no core
    seconds: float = 0.0  # the wall time this reading covers (0: unknown, counted as one interval)


def _process_tree(pid: int, prune: frozenset[int] = frozenset()) -> list[psutil.Process]:
    """A process and its descendants, without the subtrees rooted at a `prune` pid."""
    try:
        tree = [psutil.Process(pid)]
    except psutil.Error:
        return []
    stack = [tree[0]]
    while stack:
        try:
            children = stack.pop().children()
        except psutil.Error:  # ended while walking
            continue
        kept = [child for child in children if child.pid not in prune]
        tree += kept
        stack += kept
    return tree


def _waiting_ns(pid: int) -> int | None:
    """Nanoseconds the process's threads were ready to run but waited for a core (/proc/<pid>/task/*/schedstat)."""
    total = 0
    try:
        for task in os.scandir(f"/proc/{pid}/task"):
            with open(f"{task.path}/schedstat") as handle:
                _running, waiting, _slices = handle.read().split()
            total += int(waiting)
    except (OSError, ValueError):
        return None
    return total


def _cpu_and_rss(process: psutil.Process) -> tuple[float, int] | None:
    try:
        with process.oneshot():
            times = process.cpu_times()
            return times.user + times.system, process.memory_info().rss
    except psutil.Error:  # ended between listing and reading
        return None


@dataclass
class ResourceSampler:
    """Samples named process trees in a background thread (a greenlet under gevent) until stopped."""

    components: dict[str, int]  # name → pid of the component's root process
    csv_path: Path
    # Servers started by the generator's own process (a lab `compare` brought up) are its children, yet
    # not the generator: their subtrees are left out of its tree (lab_pids).
    not_generator: frozenset[int] = frozenset()
    interval: float = SAMPLE_INTERVAL_S
    pattern: str = ""
    repetition: int = 0
    phase: str = WARMUP
    journeys: int = 0  # measured journeys of the current cell
    prometheus: Queries | None = None  # a user target's own Prometheus, asked after each cell
    # The components' current root pids, asked before each reading: a node a fault plan stopped and started again
    # is a new process (lab_repoint), whose CPU would otherwise go unmeasured.
    repoint: Callable[[], dict[str, int]] | None = None
    measured_start: float = 0.0
    _readings: list[Reading] = field(default_factory=list)
    _last: dict[tuple[str, int], tuple[float, float]] = field(default_factory=dict)  # (name, pid) → (t, cpu_s)
    _last_waiting: dict[int, tuple[float, int]] = field(default_factory=dict)  # generator pid → (t, waiting ns)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _events: Any = None  # the run followed (listen), until stop
    _guard: Any = None  # the run's results.writes.WriteGuard: a refused write stops the run

    def __post_init__(self) -> None:
        new = not self.csv_path.exists() or self.csv_path.stat().st_size == 0
        self._file = self.csv_path.open("a", newline="", encoding="utf-8")
        self._writer = csv.writer(self._file, lineterminator="\n")
        if new:
            self._writer.writerow(COLUMNS)
            self._file.flush()
        self._written = self._file.tell()  # bytes of whole rows: a refused write is cut back to it

    # -- the run's events (authbench.events) --------------------------------------------------------

    def listen(self, context: Any) -> None:
        """Follow a run: `context` is its RunContext (`environment.authbench`) until `stop`."""
        self._events = context.events
        self._guard = getattr(context, "writes", None)
        for event, listener in self._listeners():
            event.add_listener(listener)

    def _listeners(self) -> list[tuple[Any, Any]]:
        events = self._events
        return [(events.cell_start, self.cell_start), (events.measuring, self.measuring), (events.sample, self.sample)]

    def cell_start(self, pattern: Any, repetition: int, warmup_s: float) -> None:
        with self._lock:
            self.pattern, self.repetition, self.journeys = pattern.label, repetition, 0
            self.phase = WARMUP if warmup_s > 0 else MEASURED
            self.measured_start = time.time()
            self._readings.clear()
        self.take()  # a baseline, so even a short cell has one interval to measure

    def measuring(self, pattern: Any, repetition: int) -> None:
        self.take()  # closes the warm-up's last interval
        with self._lock:
            self.phase, self.measured_start = MEASURED, time.time()

    def sample(self, sample: Any) -> None:
        if sample.phase == MEASURED:
            self.journeys += 1

    # -- sampling ----------------------------------------------------------------------------------

    def start(self) -> ResourceSampler:
        self._thread = threading.Thread(target=self._loop, name="resource-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """End the sampling and stop following the run (a web UI's environment outlives it)."""
        if self._events is not None:
            for event, listener in self._listeners():
                event.remove_listener(listener)
            self._events = None
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.interval * 5)
        with self._lock:
            self._file.close()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.take()

    def take(self) -> None:
        """One reading of every component; the first sight of a process only sets its baseline."""
        now = time.time()
        rows = []
        fresh = self._repointed()
        with self._lock:
            if self._file.closed:
                return
            self.components.update({name: pid for name, pid in fresh.items() if name in self.components})
            for name, root in self.components.items():
                cpu_pct = cpu_s = seconds = 0.0
                rss = 0
                per_process: dict[int, float] = {}
                for process in _process_tree(root, self.not_generator if name == GENERATOR else frozenset()):
                    reading = _cpu_and_rss(process)
                    if reading is None:
                        continue
                    total, process_rss = reading
                    rss += process_rss
                    previous = self._last.get((name, process.pid))
                    self._last[(name, process.pid)] = (now, total)
                    if previous is None or now <= previous[0]:
                        continue
                    used = max(0.0, total - previous[1])
                    cpu_s += used
                    seconds = max(seconds, now - previous[0])
                    per_process[process.pid] = 100.0 * used / (now - previous[0])
                cpu_pct = sum(per_process.values())
                waiting = self._waiting(per_process) if name == GENERATOR else {}
                self._readings.append(Reading(now, self.phase, name, cpu_pct, cpu_s, rss, per_process, waiting,
                                              seconds))
                rows.append((f"{now:.3f}", self.pattern, self.repetition, self.phase, name, root, f"{cpu_pct:.1f}",
                             rss))
            try:
                self._writer.writerows(rows)
                self._file.flush()
                self._written = self._file.tell()
                return
            except OSError as exc:
                failure = exc
                self._give_up()
        if self._guard is not None:
            self._guard.failed(self.csv_path, failure)  # may raise results.writes.WriteCut: the lock is free

    def _repointed(self) -> dict[str, int]:
        if self.repoint is None:
            return {}
        try:
            return self.repoint()
        except Exception:  # noqa: BLE001 - e.g. lab.json replaced under the read: the pids known stay
            return {}

    def _give_up(self) -> None:
        """After a refused write: no more rows, and none half-written (the readings stay, for the summary)."""
        with contextlib.suppress(OSError):
            self._file.close()  # its flush fails again: the buffer goes
        with contextlib.suppress(OSError):
            os.truncate(self.csv_path, self._written)

    def _waiting(self, pids: dict[int, float]) -> dict[int, float]:
        now, waiting = time.time(), {}
        for pid in pids:
            ns = _waiting_ns(pid)
            previous = self._last_waiting.get(pid)
            if ns is None:
                continue
            self._last_waiting[pid] = (now, ns)
            if previous is not None and now > previous[0]:
                waiting[pid] = 100.0 * (ns - previous[1]) / 1e9 / (now - previous[0])
        return waiting

    # -- per cell ------------------------------------------------------------------------------------

    def cell_summary(self) -> dict[str, Any]:
        """The measured phase of the current cell, per component (the `resources` of docs/results-layout.md)."""
        self.take()  # closes the last interval
        with self._lock:
            measured = [r for r in self._readings if r.phase == MEASURED and r.per_process_pct]
            journeys = self.journeys
        summary = summarize_readings(measured, self.components, journeys, self.interval)
        if self.prometheus is not None:
            summary["prometheus"] = self.prometheus.over(self.measured_start, time.time())
        return summary


def summarize_readings(readings: list[Reading], components: dict[str, int], journeys: int,
                       interval: float) -> dict[str, Any]:
    summary: dict[str, dict[str, Any]] = {}
    for name, pid in components.items():
        rows = [r for r in readings if r.component == name]
        if not rows:
            continue
        cpu_s = sum(r.cpu_s for r in rows)
        summary[name] = {
            "pid": pid,
            "cpu_pct_mean": round(_weighted_mean([(r.cpu_pct, r.seconds) for r in rows]), 1),
            "cpu_pct_max": round(max(r.cpu_pct for r in _full_intervals(rows, interval)), 1),
            "cpu_s": round(cpu_s, 3),
            "rss_mib_mean": round(sum(r.rss_bytes for r in rows) / len(rows) / MIB, 1),
            "rss_mib_max": round(max(r.rss_bytes for r in rows) / MIB, 1),
            "cpu_ms_per_journey": round(cpu_s * 1000 / journeys, 3) if journeys else None,
        }
    return {"interval_s": interval, "samples": len({r.time for r in readings}), "components": summary,
            "generator_saturated": _busiest(readings, "per_process_pct") > GENERATOR_SATURATED_PCT,
            "generator_waiting_pct": round(_busiest(readings, "per_process_waiting_pct"), 1)}


def _weighted_mean(values: list[tuple[float, float]]) -> float:
    """Mean of (percentage, seconds covered) pairs, weighted by time.

    The readings at a cell's or phase's edges cover a few milliseconds, where the kernel's 10 ms CPU
    accounting makes a percentage of 0 or several hundred; an unweighted mean let them decide short cells.
    """
    weights = [seconds if seconds > 0 else 1.0 for _, seconds in values]
    total = sum(weights)
    return sum(pct * weight for (pct, _), weight in zip(values, weights, strict=True)) / total if total else 0.0


def _full_intervals(rows: list[Reading], interval: float) -> list[Reading]:
    """The readings that cover at least half an interval (for maxima), or all when none does."""
    full = [r for r in rows if r.seconds == 0 or r.seconds >= interval * FULL_INTERVAL_SHARE]
    return full or rows


def _busiest(readings: list[Reading], field_name: str) -> float:
    """The highest time-weighted mean, over the generator's processes, of one per-process percentage."""
    per_pid: dict[int, list[tuple[float, float]]] = {}
    for reading in readings:
        if reading.component == GENERATOR:
            for pid, pct in getattr(reading, field_name).items():
                per_pid.setdefault(pid, []).append((pct, reading.seconds))
    return max((_weighted_mean(values) for values in per_pid.values()), default=0.0)


def lab_components(state: dict, backend: str) -> dict[str, int]:
    """The processes that serve one cluster of the lab (its own and the shared ones it uses: a Keycloak cluster's
    JVMs, PostgreSQL, slapd, HAProxy), plus the generator."""
    from ..embedded_lab import serves_cluster

    components = {}
    for name, entry in state.get("components", {}).items():
        if entry.get("pid") and serves_cluster(name, backend):
            components[name.rpartition("/")[2]] = entry["pid"]
    components[GENERATOR] = os.getpid()
    return components


def lab_repoint(run_dir: str | Path, backend: str) -> Callable[[], dict[str, int]]:
    """ResourceSampler.repoint for one cluster of the lab running in `run_dir`: lab_components of its lab.json now."""
    from ..embedded_lab import state

    return lambda: lab_components(state(run_dir) or {}, backend)


def lab_pids(state: dict) -> frozenset[int]:
    """The root pid of every component of a lab (every cluster), for ResourceSampler.not_generator."""
    return frozenset(entry["pid"] for entry in state.get("components", {}).values() if entry.get("pid"))
