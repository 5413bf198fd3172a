"""Plays a fault plan during each measured phase, keeps what every fault did, and leaves the lab whole.

The plan starts when the measured phase does (`RunEvents.measuring`) and runs in a greenlet beside the
users; a fault never stops the measurement: a lab action that fails or a command that exits non-zero,
times out or cannot start is recorded (one status line, exit status, the tail of its output) and the
run goes on. A `start` is done once the lab's balancer sends to the node again. When the cell ends, a
command still running is cut (its process group ended, commands.py), faults not reached are printed and
recorded as not reached, every lab component the plan stopped in the cell is started again — a `start`
the cell never reached is so played at its end, with a warning — and the cell's failover analysis
(analysis.py) is computed from its measured samples. An interruption or an error ends the plan the same
way (`close`). Before each cell, the lab components the plan touches are started if they are not
running, so no repetition measures a cluster that is not whole; one that will not come back fails the
run (ClusterNotWhole).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gevent
from locust.exception import StopTest

from ...errors import RunFailed
from ...results.sample import MEASURED, OK, WARMUP, Sample
from ...signals import note
from . import analysis
from .balancer import wait_until_balanced
from .commands import OUTPUT_CHARS, Command
from .plan import LAB_ACTIONS, RUN, START, STOP, Fault

FINISH_WAIT = 120.0  # seconds a lab action still under way at the end of a cell may take (a node's restart)
CUT_WAIT = 10.0  # seconds a cut command's greenlet has to record it
NOT_REACHED = "not reached: the measured phase ended first"
ALREADY_RUNNING = "already running"
log = logging.getLogger(__name__)

__all__ = ["NOT_REACHED", "OUTPUT_CHARS", "ClusterNotWhole", "FaultSchedule", "lab_action", "run_command"]


class ClusterNotWhole(RunFailed, StopTest):
    """A component of the fault plan is down before a cell and will not start: the run ends (exit 1, one line).

    Also a Locust StopTest only because it is raised by an event listener, and Locust's event hooks log and
    swallow every other exception: this one must end the run."""


def run_command(fault: Fault) -> dict[str, Any]:
    """Run a run=COMMAND fault in its own process group, bounded by its timeout; never raises."""
    return Command(fault).run()


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
            status = ALREADY_RUNNING if result["already_running"] else f"started (pid {result['pid']})"
    except (AuthbenchError, OSError) as exc:
        return {"ok": False, "exit_status": None, "status": str(exc).splitlines()[0], "output": ""}
    return {"ok": True, "exit_status": None, "status": status, "output": ""}


class FaultSchedule:
    """One run's fault plan: `listen(context)` before the run, `finish()` (a cell's extras) after each cell,
    `close()` when the run ends however it ends."""

    def __init__(self, faults: list[Fault], lab_run_dir: str | Path | None, say: Callable[[str], None] = print,
                 act: Callable[[Fault], dict[str, Any]] | None = None,
                 settle: Callable[[str], str | None] | None = None) -> None:
        self.faults = faults
        self.lab_run_dir = lab_run_dir
        self.say = say
        self.act = act or self._act
        self.settle = settle or self._settle  # None once a started component is back in its cluster, or why not
        self.records: list[dict[str, Any]] = []
        self.samples: list[Sample] = []
        self.warmed: set[int] = set()  # users of the cell who logged in during its warm-up: logged in at every fault
        self.begin: float | None = None
        self.touched = list(dict.fromkeys(f.target for f in faults if f.action in LAB_ACTIONS))
        self._greenlet: gevent.Greenlet | None = None
        self._events: Any = None
        self._ending = False  # the cell ended: play no further fault
        self._current: Fault | None = None  # the fault being acted on
        self._stopped: list[str] = []  # lab components the cell's plan stopped and has not started again
        self._commands: list[Command] = []  # the cell's run= commands

    def listen(self, context: Any) -> None:
        self._events = context.events
        context.events.cell_start.add_listener(self._cell_start)
        context.events.measuring.add_listener(self._measuring)
        context.events.sample.add_listener(self._sample)

    def close(self) -> None:
        """Stop listening (a web UI's environment outlives the run: the next run must not replay this plan), and
        end a plan a cell left under way (an interruption, an error): commands cut, components started again."""
        if self._events is not None:
            self._events.cell_start.remove_listener(self._cell_start)
            self._events.measuring.remove_listener(self._measuring)
            self._events.sample.remove_listener(self._sample)
            self._events = None
        if self.begin is None:
            return
        try:
            self._stop_playing("the run ended")
            restarted = self._restore()
            for again in restarted:
                self.say(f"fault plan: {again['component']} was stopped by the plan; as the run ended: "
                         f"{again['status']}")
            if restarted:  # the one line an interrupted command ends with
                note(sys.exc_info()[1], "fault plan: " + ", ".join(
                    f"{r['component']} {'started again' if r['ok'] else 'NOT started again'}" for r in restarted))
        except Exception:  # noqa: BLE001 - the run is ending already; say it, do not hide why it ends
            log.exception("ending the fault plan failed")
            self.say("fault plan: could not end it cleanly (see the log); check the lab with 'authbench lab status'")
        self.begin = None

    def _act(self, fault: Fault) -> dict[str, Any]:
        if fault.action == RUN:
            command = Command(fault)
            self._commands.append(command)
            return command.run()
        assert fault.action in (STOP, START) and self.lab_run_dir is not None
        return lab_action(self.lab_run_dir, fault)

    def _settle(self, name: str) -> str | None:
        if self.lab_run_dir is None:
            return None
        try:
            return wait_until_balanced(self.lab_run_dir, name)
        except Exception as exc:  # noqa: BLE001 - e.g. an unreadable lab.json: a reason, said where it matters
            return f"its balancer could not be asked: {type(exc).__name__}: {exc}"

    def _cell_start(self, pattern: Any = None, repetition: int = 0, **_kwargs: Any) -> None:
        """Before each cell: the lab components the plan touches running again and balanced to, or the run ends."""
        cell = f"{getattr(pattern, 'label', pattern)} #{repetition}"
        self.warmed = set()
        for name in self.touched:
            result = self._start(name)
            if not result.get("ok"):
                raise ClusterNotWhole(f"fault plan: {name} is not running and did not start again before cell "
                                      f"{cell}: {result['status']}")
            if result["status"] != ALREADY_RUNNING:
                self.say(f"fault plan: {name} was not running before cell {cell}: {result['status']}")
            problem = self.settle(name)
            if problem:
                raise ClusterNotWhole(f"fault plan: {name} runs, but {problem}, before cell {cell}")

    def _start(self, name: str) -> dict[str, Any]:
        try:
            return self.act(Fault(0.0, START, name))
        except Exception as exc:  # noqa: BLE001 - said as a status like any fault's
            return {"ok": False, "status": f"failed: {type(exc).__name__}: {exc}"}

    def _measuring(self, **_kwargs: Any) -> None:
        self.begin = time.time()
        self.samples, self._stopped, self._commands, self._ending = [], [], [], False
        self.records = [{"fault": f.describe(), "action": f.action, "target": f.target, "at_s": f.at, "time": None,
                         "seconds": None, "ok": None, "exit_status": None, "status": NOT_REACHED, "output": ""}
                        for f in self.faults]
        self._greenlet = gevent.spawn(self._play, self.begin)

    def _sample(self, sample: Sample) -> None:
        if sample.phase == MEASURED and self.begin is not None:
            self.samples.append(sample)
        elif sample.phase == WARMUP and sample.outcome == OK:
            self.warmed.add(sample.user)

    def _play(self, begin: float) -> None:
        for fault, record in zip(self.faults, self.records, strict=True):
            if not self._ending:
                gevent.sleep(max(0.0, begin + fault.at - time.time()))
            if self._ending:
                return
            record["time"] = time.time()
            self._current = fault
            if fault.action == STOP and fault.target not in self._stopped:  # before: a stop cut halfway counts
                self._stopped.append(fault.target)
            try:
                record.update(self.act(fault))
                if fault.action == START and record["ok"] and record["status"] != ALREADY_RUNNING:
                    problem = self.settle(fault.target)  # back in its balancer: what comes next meets a whole cluster
                    if problem:
                        record["status"] += f", but {problem}"
            except Exception as exc:  # noqa: BLE001 - a fault must never end the measurement
                record.update({"ok": False, "status": f"failed: {type(exc).__name__}: {exc}"})
            finally:
                self._current = None
            record["seconds"] = round(time.time() - record["time"], 3)
            if fault.action == START and record["ok"] and fault.target in self._stopped:
                self._stopped.remove(fault.target)
            self.say(f"fault {record['fault']}: {record['status']} (began at {record['time'] - begin:.1f} s, "
                     f"took {record['seconds']:g} s)")
            if self._events is not None:  # the web UI's chart marks it
                self._events.fault.fire(record=dict(record))

    def finish(self) -> dict[str, Any]:
        """End the cell's plan and return its record and analysis: a lab action under way may finish, a command
        still running is cut, faults not reached are said, what the plan stopped is started again."""
        if self._greenlet is None or self.begin is None:
            return {"faults": [], "failover": None}
        ended = time.time() - self.begin
        self._stop_playing("the cell ended")
        restored = self._restore()
        restarted = {r["component"]: r for r in restored}
        for fault, record in zip(self.faults, self.records, strict=True):
            if record["time"] is None:
                record["status"] = f"not reached: the measured phase ended at {ended:.1f} s"
                again = restarted.pop(fault.target, None) if fault.action == START else None
                if again is not None:
                    record.update(ok=again["ok"], status=f"{record['status']}; played at the cell's end: "
                                                         f"{again['status']}")
                self.say(f"fault {record['fault']}: {record['status']}")
            else:
                record["time"] = round(record["time"], 3)
        for name, again in restarted.items():
            self.say(f"fault plan: {name} was stopped by the plan; at the cell's end: {again['status']}")
        section = analysis.analyse(self.samples, self.records, self.begin, self.warmed)
        for line in analysis.lines(section):
            self.say(line)
        records, self.begin = self.records, None
        return {"faults": records, "failover": section, **({"restored": restored} if restored else {})}

    def _stop_playing(self, why: str) -> None:
        """No further fault; a lab action under way may finish (FINISH_WAIT), a command is cut, and what commands
        left running in their process groups is ended."""
        self._ending = True
        for command in self._commands:
            command.cut(why)
        if self._greenlet is not None:
            if self._current is not None:
                self._greenlet.join(timeout=FINISH_WAIT if self._current.action in LAB_ACTIONS else CUT_WAIT)
            self._greenlet.kill(block=True, timeout=CUT_WAIT)
            self._greenlet = None
        for record in self.records:
            if record["time"] is not None and record["seconds"] is None:  # killed under way
                record.update(ok=False, seconds=round(time.time() - record["time"], 3),
                              status=f"cut: still under way when {why}")
                self.say(f"fault {record['fault']}: {record['status']}")
        for command in self._commands:
            left = command.end_leftovers()
            if left:
                self.say(f"fault {command.fault.describe()}: {left} process(es) it left running ended when {why}")

    def _restore(self) -> list[dict[str, Any]]:
        """Start again every lab component the cell's plan stopped; what it did, for those not already running."""
        done = []
        for name in list(self._stopped):
            result = self._start(name)
            if result.get("ok"):
                self._stopped.remove(name)
                problem = self.settle(name)
                if problem:
                    result = {**result, "status": f"{result['status']}, but {problem}"}
            if result["status"] != ALREADY_RUNNING:
                done.append({"component": name, "ok": bool(result.get("ok")), "status": result["status"]})
        return done
