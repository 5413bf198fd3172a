"""A fault plan ends clean: what it stopped is started again when its cell ends (also when the run is cut), faults
not reached are said, and no cell starts while a component of the plan is down. The lab is a stand-in here
(tests/cli/test_run_failover.py plays the same on the real lab)."""

from __future__ import annotations

from types import SimpleNamespace

import gevent
import pytest

from authbench.cluster.faults.execute import ClusterNotWhole, FaultSchedule
from authbench.cluster.faults.plan import START, STOP, Fault, parse_faults
from authbench.events import RunEvents
from authbench.signals import Interrupted


class Lab:
    """Components that a stop takes down and a start brings back (unless `broken`)."""

    def __init__(self, *down: str, broken: tuple[str, ...] = ()) -> None:
        self.down, self.broken, self.calls = set(down), set(broken), []

    def act(self, fault: Fault) -> dict:
        self.calls.append((fault.action, fault.target))
        if fault.action == STOP:
            was = fault.target not in self.down
            self.down.add(fault.target)
            return {"ok": True, "status": "stopped (pid 7)" if was else "was not running"}
        assert fault.action == START
        if fault.target not in self.down:
            return {"ok": True, "status": "already running"}
        if fault.target in self.broken:
            return {"ok": False, "status": "port 9 is already in use"}
        self.down.discard(fault.target)
        return {"ok": True, "status": "started (pid 8)"}


def schedule_of(plan: str, lab: Lab) -> tuple[FaultSchedule, RunEvents, list[str]]:
    events, said = RunEvents(), []
    schedule = FaultSchedule(parse_faults([plan]), None, said.append, lab.act)
    schedule.listen(SimpleNamespace(events=events))
    return schedule, events, said


def cell(events: RunEvents, repetition: int = 1) -> None:
    events.cell_start.fire(pattern=SimpleNamespace(label="4x6"), repetition=repetition, warmup_s=0.0)
    events.measuring.fire(pattern=None, repetition=repetition)


def test_a_start_after_the_cell_is_played_at_its_end_and_the_next_repetition_stops_a_running_node():
    """Issue 25 item 2: `at=1s stop idp-a; at=30s start idp-a` on a short --repeat 2 run left idp-a stopped, and the
    second repetition's stop said "was not running"."""
    lab = Lab()
    schedule, events, said = schedule_of("at=0s stop idp-a; at=30s start idp-a", lab)
    for repetition in (1, 2):
        cell(events, repetition)
        gevent.sleep(0.1)
        done = schedule.finish()
        stop, start = done["faults"]
        assert stop["status"] == "stopped (pid 7)"  # a whole cluster in every repetition
        assert start["time"] is None and start["ok"]
        assert start["status"].startswith("not reached: the measured phase ended at ")
        assert start["status"].endswith("; played at the cell's end: started (pid 8)")
        assert done["restored"] == [{"component": "idp-a", "ok": True, "status": "started (pid 8)"}]
        assert not lab.down
    assert sum(line.startswith("fault at=30s start idp-a: not reached") for line in said) == 2


def test_a_stop_without_its_start_is_undone_at_the_cells_end():
    lab = Lab()
    schedule, events, said = schedule_of("at=0s stop memcached-a; at=0s stop idp-b; at=0.05s start idp-b", lab)
    cell(events)
    gevent.sleep(0.2)
    done = schedule.finish()
    assert done["restored"] == [{"component": "memcached-a", "ok": True, "status": "started (pid 8)"}]
    assert not lab.down
    assert "fault plan: memcached-a was stopped by the plan; at the cell's end: started (pid 8)" in said


def test_a_cell_never_starts_on_a_cluster_that_is_not_whole():
    lab = Lab("idp-a")  # down before the run (an earlier run broke off)
    schedule, events, said = schedule_of("at=0s stop idp-a; at=1s start idp-a", lab)
    events.cell_start.fire(pattern=SimpleNamespace(label="4x6"), repetition=1, warmup_s=0.0)
    assert not lab.down and said == ["fault plan: idp-a was not running before cell 4x6 #1: started (pid 8)"]
    broken = Lab("idp-a", broken=("idp-a",))
    schedule, events, said = schedule_of("at=0s stop idp-a; at=1s start idp-a", broken)
    with pytest.raises(ClusterNotWhole) as caught:  # through Locust's event hook, which swallows other errors
        events.cell_start.fire(pattern=SimpleNamespace(label="4x6"), repetition=2, warmup_s=0.0)
    assert str(caught.value) == ("fault plan: idp-a is not running and did not start again before cell 4x6 #2: "
                                 "port 9 is already in use")
    assert caught.value.exit_code == 1
    schedule = FaultSchedule(parse_faults(["at=0s stop idp-a"]), None, said.append, Lab().act,
                             settle=lambda name: "the balancer does not send to it after 10 s (DOWN)")
    schedule.listen(SimpleNamespace(events=(events := RunEvents())))
    with pytest.raises(ClusterNotWhole, match="idp-a runs, but the balancer does not send to it after 10 s"):
        events.cell_start.fire(pattern=SimpleNamespace(label="4x6"), repetition=1, warmup_s=0.0)


def test_a_start_played_in_the_cell_waits_until_the_balancer_sends_to_the_node():
    """A Keycloak node is healthy some seconds before HAProxy's checks take it back: a command run right after the
    cell (check-cluster through node B) met HAProxy's 503 for it. A start now ends once the balancer sends to the
    node, and says so when it does not."""
    for balancer in ("UP", "DOWN"):
        asked: list[str] = []
        events, said = RunEvents(), []

        def settle(name: str, balancer: str = balancer, asked: list[str] = asked) -> str | None:
            asked.append(name)
            return None if balancer == "UP" or len(asked) <= 2 else "the balancer does not send to it after 10 s"

        schedule = FaultSchedule(parse_faults(["at=0s stop idp-b; at=0.05s start idp-b; at=0.1s start idp-a"]),
                                 None, said.append, Lab().act, settle=settle)
        schedule.listen(SimpleNamespace(events=events))
        cell(events)  # the cell's own check before it begins: idp-b and idp-a balanced
        gevent.sleep(0.3)
        _, start, running = schedule.finish()["faults"]
        assert asked == ["idp-b", "idp-a", "idp-b"]  # once more after its start, not after "already running"
        assert running["status"] == "already running"
        assert start["status"] == ("started (pid 8)" if balancer == "UP" else
                                   "started (pid 8), but the balancer does not send to it after 10 s")


def test_an_interrupted_cell_starts_again_what_its_plan_stopped():
    lab = Lab()
    schedule, events, _ = schedule_of("at=0s stop idp-a; at=60s start idp-a", lab)
    cell(events)
    gevent.sleep(0.1)
    assert lab.down == {"idp-a"}
    interrupted = Interrupted()
    try:
        raise interrupted
    except Interrupted:
        schedule.close()  # as prepared.cell_listeners' `finally` does
    assert not lab.down and lab.calls[-1] == (START, "idp-a")
    assert interrupted.notes == ["fault plan: idp-a started again"]
    assert not events.cell_start._handlers and not events.measuring._handlers  # listens no more
