"""The capacity search's cool-down on a real server that keeps a backlog: it waits while the queue drains."""

from __future__ import annotations

import http.client
import threading
import time

from sleepy_server import LOOPBACK, SleepyServer

from authbench.openmodel.cooldown import SETTLED_PROBES, cool_down, idle_latency, settled_below
from authbench.user import JourneyOutcome

DELAY = 0.02  # seconds per request, served one at a time
BACKLOG = 40  # requests queued at once: ~0.8 s of work left behind by an "overloaded step"


def get(port: int) -> JourneyOutcome:
    conn = http.client.HTTPConnection(LOOPBACK, port, timeout=10)
    try:
        conn.request("GET", "/")
        ok = conn.getresponse().status == 200
    finally:
        conn.close()
    return JourneyOutcome(ok)


def test_a_cool_down_lasts_while_the_backlog_drains_and_ends_at_idle_latency():
    with SleepyServer(DELAY, serial=True) as server:
        journey = lambda: get(server.port)  # noqa: E731
        idle = idle_latency(journey)
        assert idle is not None and DELAY * 1000 <= idle < settled_below(idle)
        backlog = [threading.Thread(target=get, args=(server.port,)) for _ in range(BACKLOG)]
        for thread in backlog:
            thread.start()
        time.sleep(0.05)  # the queue is there before the cool-down begins
        began = time.monotonic()
        cooled = cool_down(journey, idle)
        waited = time.monotonic() - began
        for thread in backlog:
            thread.join(timeout=10)
    assert cooled.settled and cooled.probes >= SETTLED_PROBES + 1  # the first probe met the queue
    assert waited >= (BACKLOG // 2) * DELAY  # at least half the backlog was still being served


def test_a_target_that_stays_busy_ends_the_cool_down_at_its_bound():
    slow = 0.05  # every answer takes 50 ms, more than settled_below(1 ms) = 21 ms
    with SleepyServer(slow) as server:
        journey = lambda: get(server.port)  # noqa: E731
        cooled = cool_down(journey, idle_ms=1.0, max_s=0.5)
    assert settled_below(1.0) < slow * 1000
    assert not cooled.settled and cooled.seconds >= 0.5 and cooled.probes >= 1


def test_an_idle_target_needs_just_the_settling_probes():
    with SleepyServer(DELAY) as server:
        journey = lambda: get(server.port)  # noqa: E731
        cooled = cool_down(journey, idle_latency(journey))
    assert cooled.settled and cooled.probes == SETTLED_PROBES
