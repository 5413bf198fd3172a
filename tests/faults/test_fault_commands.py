"""run=COMMAND faults: real processes, their exit status and output kept, never an exception."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import gevent

from authbench.cluster.faults.execute import NOT_RUN, OUTPUT_CHARS, FaultSchedule, run_command
from authbench.cluster.faults.plan import RUN, Fault, parse_faults
from authbench.events import RunEvents


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
    assert fine["ok"] and late["status"] == NOT_RUN and late["time"] is None
    played = [line for line in said if line.startswith("fault ")]
    assert [line.split(" (began")[0] for line in played] == [
        "fault at=0s run=boom: failed: RuntimeError: lab state unreadable", "fault at=0.05s run=true: done"]
