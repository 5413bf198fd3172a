"""run=COMMAND faults: real processes, their exit status and output kept, never an exception; each in a process
group of its own, ended as a group at its timeout or when the cell or the run ends."""

from __future__ import annotations

import os
import sys
import time
from types import SimpleNamespace

import gevent
import psutil

from authbench.cluster.faults.commands import KILL_GRACE, OUTPUT_CHARS, Command
from authbench.cluster.faults.execute import FaultSchedule, run_command
from authbench.cluster.faults.plan import RUN, Fault, parse_faults
from authbench.events import RunEvents

MARGIN = 1.5  # seconds a loaded machine may add to a process group's end


def command(text: str, timeout: float = 10.0) -> dict:
    return run_command(Fault(0.0, RUN, text, timeout))


def test_success_keeps_the_output():
    result = command("echo node gone")
    assert result["ok"] and result["exit_status"] == 0 and result["status"] == "exit status 0"
    assert result["output"] == "node gone\n"


def test_failure_names_the_status_and_the_last_line():
    result = command("sh -c 'echo first; echo \"pod idp-0 not found\" >&2; exit 3'")
    assert not result["ok"] and result["exit_status"] == 3
    assert result["status"] == "exit status 3: pod idp-0 not found"


def test_timeout_and_missing_program():
    result = command(f"{sys.executable} -c 'import time; print(\"waiting\", flush=True); time.sleep(30)'", 0.5)
    assert not result["ok"] and result["status"] == "timed out after 0.5 s" and "waiting" in result["output"]
    result = command("/nonexistent/kubectl delete pod idp-0")
    assert not result["ok"] and result["status"].startswith("could not start:")


def test_long_output_keeps_its_tail():
    result = command(f"{sys.executable} -c 'print(\"x\" * 5000 + \"END\")'")
    assert len(result["output"]) == OUTPUT_CHARS and result["output"].endswith("END\n")


def test_a_fault_that_raises_is_recorded_and_the_plan_goes_on():
    def act(fault: Fault) -> dict:
        if fault.target == "boom":
            raise RuntimeError("lab state unreadable")
        return {"ok": True, "status": "done"}

    events, said = RunEvents(), []
    schedule = FaultSchedule(parse_faults(["at=0s run=boom; at=0.05s run=true; at=60s run=late"]), None,
                             said.append, act)
    schedule.listen(SimpleNamespace(events=events))
    events.measuring.fire(pattern=None, repetition=1)
    gevent.sleep(0.3)
    boom, fine, late = schedule.finish()["faults"]
    assert (boom["ok"], boom["status"]) == (False, "failed: RuntimeError: lab state unreadable")
    assert fine["ok"] and late["status"].startswith("not reached: the measured phase ended at ")
    assert late["time"] is None
    played = [line for line in said if line.startswith("fault ")]
    assert [line.split(" (began")[0] for line in played] == [
        "fault at=0s run=boom: failed: RuntimeError: lab state unreadable", "fault at=0.05s run=true: done",
        f"fault at=60s run=late: {late['status']}"]  # the fault not reached is said too


def alive_in_group(pgid: int) -> list[psutil.Process]:
    """Processes of the group that still run (a zombie is dead, only not yet reaped by its parent)."""
    found = []
    for process in psutil.process_iter(["status"]):
        try:
            if process.info["status"] != psutil.STATUS_ZOMBIE and os.getpgid(process.pid) == pgid:
                found.append(process)
        except (OSError, psutil.Error):
            continue
    return found


def timed(fault: Fault) -> tuple[dict, float, Command]:
    command = Command(fault)
    began = time.monotonic()
    result = command.run()
    return result, time.monotonic() - began, command


def test_a_timeout_ends_the_whole_process_group_on_time():
    """Issue 25 item 5: the timeout held only for the shell, and its children kept the output pipe (and the run)."""
    result, took, command = timed(Fault(0.0, RUN, "sh -c 'sleep 30 & sleep 30'", 1.0))
    assert result["status"] == "timed out after 1 s" and not result["ok"] and result["exit_status"] is None
    assert took < 1.0 + MARGIN, took
    assert command.pgid != os.getpgid(0) and not alive_in_group(command.pgid)


def test_a_group_that_ignores_sigterm_is_killed():
    result, took, command = timed(Fault(0.0, RUN, "sh -c 'trap \"\" TERM; sleep 30 & sleep 30'", 1.0))
    assert result["status"] == "timed out after 1 s"
    assert 1.0 + KILL_GRACE - 0.1 <= took < 1.0 + KILL_GRACE + MARGIN, took
    assert not alive_in_group(command.pgid)


def test_a_background_child_holding_the_output_does_not_hold_the_command():
    result, took, command = timed(Fault(0.0, RUN, "sh -c 'sleep 30 & echo started'", 10.0))
    assert result["ok"] and result["output"] == "started\n" and took < MARGIN, took
    assert len(alive_in_group(command.pgid)) == 1  # the sleep: its group is ended when the cell ends
    assert command.end_leftovers() == 1 and not alive_in_group(command.pgid)


def measured(faults_text: str, act=None) -> tuple[FaultSchedule, RunEvents, list[str]]:
    events, said = RunEvents(), []
    schedule = FaultSchedule(parse_faults([faults_text]), None, said.append, act)
    schedule.listen(SimpleNamespace(events=events))
    events.measuring.fire(pattern=None, repetition=1)
    return schedule, events, said


def test_a_command_still_running_when_the_cell_ends_is_cut_with_its_group():
    """Issue 25 item 5: with timeout=3600s the cell waited 120 s for it, then recorded it as "not run"."""
    schedule, _, said = measured("at=0s timeout=3600s run=sh -c 'sleep 30 & sleep 30'; at=0.5s run=true")
    gevent.sleep(0.5)
    [command] = schedule._commands
    began = time.monotonic()
    cut, after = schedule.finish()["faults"]
    assert time.monotonic() - began < MARGIN
    assert not cut["ok"] and cut["status"].startswith("cut: the cell ended after ") and cut["time"] is not None
    assert after["time"] is None and after["status"].startswith("not reached")  # nothing starts after the end
    assert not alive_in_group(command.pgid)
    assert any(line.startswith("fault at=0s run=sh -c 'sleep 30 & sleep 30': cut: the cell ended") for line in said)


def test_leftovers_of_a_finished_command_end_with_the_cell():
    schedule, _, said = measured("at=0s run=sh -c 'sleep 30 & echo started'")
    gevent.sleep(0.3)
    [command] = schedule._commands
    assert alive_in_group(command.pgid)
    [record] = schedule.finish()["faults"]
    assert record["ok"] and not alive_in_group(command.pgid)
    assert "fault at=0s run=sh -c 'sleep 30 & echo started': 1 process(es) it left running ended when the cell " \
           "ended" in said


def test_closing_mid_cell_cuts_the_command():
    """The run interrupted (Ctrl-C, an error): `close` ends the plan the cell left under way."""
    schedule, _, _ = measured("at=0s run=sh -c 'sleep 30 & sleep 30'")
    gevent.sleep(0.3)
    [command] = schedule._commands
    schedule.close()
    assert not alive_in_group(command.pgid) and schedule.begin is None
