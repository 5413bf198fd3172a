"""Plays a fault plan during each measured phase and keeps what every fault did.

The plan starts when the measured phase does (`RunEvents.measuring`) and runs in a greenlet beside the
users; a fault never stops the measurement: a lab action that fails or a command that exits non-zero,
times out or cannot start is recorded (one status line, exit status, the tail of its output) and the
run goes on. When the cell ends, faults not reached yet are recorded as not run, and the cell's
failover analysis (analysis.py) is computed from its measured samples.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gevent

from ...results.sample import MEASURED, Sample
from . import analysis
from .plan import RUN, START, STOP, Fault

OUTPUT_CHARS = 2000  # the tail of a command's output kept in summary.json
FINISH_WAIT = 120.0  # seconds a fault still running at the end of a cell may take (a node's restart)
NOT_RUN = "not run: the measured phase ended first"


def run_command(fault: Fault) -> dict[str, Any]:
    """Run a run=COMMAND fault without a shell, bounded by its timeout; never raises."""
    try:
        done = subprocess.run(fault.argv, capture_output=True, text=True, errors="replace", timeout=fault.timeout,
                              stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired as exc:
        output = _text(exc.stdout) + _text(exc.stderr)
        return {"ok": False, "exit_status": None, "status": f"timed out after {fault.timeout:g} s",
                "output": output[-OUTPUT_CHARS:]}
    except (OSError, ValueError) as exc:
        return {"ok": False, "exit_status": None, "status": f"could not start: {exc}", "output": ""}
    output = (done.stdout or "") + (done.stderr or "")
    last = next((line for line in reversed(output.splitlines()) if line.strip()), "")
    status = f"exit status {done.returncode}" + (f": {last}" if last and done.returncode else "")
    return {"ok": done.returncode == 0, "exit_status": done.returncode, "status": status,
            "output": output[-OUTPUT_CHARS:]}


def _text(value: str | bytes | None) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value or ""


def lab_action(run_dir: str | Path, fault: Fault) -> dict[str, Any]:
    """Stop or start a lab component through the lab's API; never raises."""
    from ...embedded_lab import start_component, stop_component
    from ...errors import AuthbenchError

    try:
        if fault.action == STOP:
            result = stop_component(run_dir, fault.target)
            status = f"stopped (pid {result['pid']})" if result["was_running"] else "was not running"
        else:
            result = start_component(run_dir, fault.target)
            status = "already running" if result["already_running"] else f"started (pid {result['pid']})"
    except (AuthbenchError, OSError) as exc:
        return {"ok": False, "exit_status": None, "status": str(exc).splitlines()[0], "output": ""}
    return {"ok": True, "exit_status": None, "status": status, "output": ""}


class FaultSchedule:
    """One run's fault plan: `listen(context)` before the run, `finish()` (a cell's extras) after each cell."""

    def __init__(self, faults: list[Fault], lab_run_dir: str | Path | None, say: Callable[[str], None] = print,
                 act: Callable[[Fault], dict[str, Any]] | None = None) -> None:
        self.faults = faults
        self.lab_run_dir = lab_run_dir
        self.say = say
        self.act = act or self._act
        self.records: list[dict[str, Any]] = []
        self.samples: list[Sample] = []
        self.begin: float | None = None
        self._greenlet: gevent.Greenlet | None = None
        self._events: Any = None

    def listen(self, context: Any) -> None:
        self._events = context.events
        context.events.measuring.add_listener(self._measuring)
        context.events.sample.add_listener(self._sample)

    def close(self) -> None:
        """Stop listening (a web UI's environment outlives the run: the next run must not replay this plan)."""
        if self._events is not None:
            self._events.measuring.remove_listener(self._measuring)
            self._events.sample.remove_listener(self._sample)
            self._events = None

    def _act(self, fault: Fault) -> dict[str, Any]:
        if fault.action == RUN:
            return run_command(fault)
        assert fault.action in (STOP, START) and self.lab_run_dir is not None
        return lab_action(self.lab_run_dir, fault)

    def _measuring(self, **_kwargs: Any) -> None:
        self.begin = time.time()
        self.samples = []
        self.records = [{"fault": f.describe(), "action": f.action, "at_s": f.at, "time": None, "seconds": None,
                         "ok": None, "exit_status": None, "status": NOT_RUN, "output": ""} for f in self.faults]
        self._greenlet = gevent.spawn(self._play, self.begin)

    def _sample(self, sample: Sample) -> None:
        if sample.phase == MEASURED and self.begin is not None:
            self.samples.append(sample)

    def _play(self, begin: float) -> None:
        for fault, record in zip(self.faults, self.records, strict=True):
            gevent.sleep(max(0.0, begin + fault.at - time.time()))
            record["time"] = time.time()
            try:
                record.update(self.act(fault))
            except Exception as exc:  # noqa: BLE001 - a fault must never end the measurement
                record.update({"ok": False, "status": f"failed: {type(exc).__name__}: {exc}"})
            record["seconds"] = round(time.time() - record["time"], 3)
            self.say(f"fault {record['fault']}: {record['status']} (began at {record['time'] - begin:.1f} s, "
                     f"took {record['seconds']:g} s)")
            if self._events is not None:  # the web UI's chart marks it
                self._events.fault.fire(record=dict(record))

    def finish(self) -> dict[str, Any]:
        """End the cell's plan (a fault under way may finish) and return its record and analysis."""
        if self._greenlet is None or self.begin is None:
            return {"faults": [], "failover": None}
        self._greenlet.join(timeout=FINISH_WAIT if self._running_fault() else 0)
        self._greenlet.kill()
        self._greenlet = None
        for record in self.records:
            if record["time"] is not None:
                record["time"] = round(record["time"], 3)
        section = analysis.analyse(self.samples, self.records, self.begin)
        for line in analysis.lines(section):
            self.say(line)
        records, self.begin = self.records, None
        return {"faults": records, "failover": section}

    def _running_fault(self) -> bool:
        return any(r["time"] is not None and r["seconds"] is None for r in self.records)
