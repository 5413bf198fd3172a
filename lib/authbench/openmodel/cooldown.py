"""Cool-down between capacity steps: wait until the target answers at its idle latency again.

A step that overloaded the target leaves work queued in it (the balancer's and the IdP's queues, a
database's backlog) after the driver has stopped sending. The next step, often at a lower rate, would
then be judged on the previous step's backlog and fail though the target could hold its rate. So the
search measures the target's idle latency once, before its first step, and after a failed step sends
single journeys, one at a time, until a few in a row answer near that latency again — bounded in
journeys and in time, and recorded with the step.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

BASELINE_PROBES = 5  # journeys, one at a time, whose median is the target's idle latency
SETTLED_PROBES = 3  # consecutive journeys near the idle latency that end a cool-down
IDLE_FACTOR = 1.5  # "near": at most this times the idle latency …
IDLE_SLACK_MS = 20.0  # … or this much above it, whichever is larger (a 2 ms login is not "slow" at 4 ms)
MAX_COOLDOWN_S = 60.0  # a target still slow after this is measured as it is (said in the record)
MAX_PROBES = 200  # journeys one cool-down may send at most
PROBE_GAP_S = 0.2  # pause between probes that found the target still busy


@dataclass
class CoolDown:
    seconds: float
    probes: int
    settled: bool  # False: MAX_COOLDOWN_S or MAX_PROBES ran out first; the next step meets a busy target

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def timed(journey: Callable[[], Any]) -> tuple[bool, float]:
    """(succeeded, milliseconds) of one journey; a journey that raises failed."""
    began = time.perf_counter()
    try:
        ok = bool(journey().ok)
    except Exception:  # noqa: BLE001 - a probe that breaks is a slow answer, not the end of the search
        ok = False
    return ok, (time.perf_counter() - began) * 1000


def idle_latency(journey: Callable[[], Any], probes: int = BASELINE_PROBES) -> float | None:
    """Median ms of the successful ones of `probes` journeys sent one at a time; None when none succeeded."""
    times = [ms for ok, ms in (timed(journey) for _ in range(probes)) if ok]
    return statistics.median(times) if times else None


def settled_below(idle_ms: float) -> float:
    return max(idle_ms * IDLE_FACTOR, idle_ms + IDLE_SLACK_MS)


def cool_down(journey: Callable[[], Any], idle_ms: float, *, max_s: float = MAX_COOLDOWN_S,
              max_probes: int = MAX_PROBES, sleep: Callable[[float], None] = time.sleep) -> CoolDown:
    """Send journeys one at a time until SETTLED_PROBES in a row succeed within `settled_below(idle_ms)`."""
    limit = settled_below(idle_ms)
    began = time.monotonic()
    probes = in_a_row = 0
    while in_a_row < SETTLED_PROBES:
        if probes >= max_probes or time.monotonic() - began >= max_s:
            return CoolDown(round(time.monotonic() - began, 3), probes, False)
        ok, ms = timed(journey)
        probes += 1
        if ok and ms <= limit:
            in_a_row += 1
        else:
            in_a_row = 0
            sleep(PROBE_GAP_S)
    return CoolDown(round(time.monotonic() - began, 3), probes, True)
