"""Prometheus gauges of the level running: target and achieved rate, late and dropped starts.

Read when scraped from the RunContext's `level` (the running level's LevelOutcome), so nothing is
counted twice; between levels they keep the last level's figures, and read 0 before the first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Gauge


def _reader(context: Any, read: Callable[[Any], float]) -> Callable[[], float]:
    def value() -> float:
        outcome = context.level
        return 0.0 if outcome is None else float(read(outcome))

    return value


def register(registry: CollectorRegistry, context: Any) -> None:
    gauges = {
        "authbench_level_target_rate": ("Target arrival rate of the level (journeys/s)",
                                        lambda o: o.level.rate),
        "authbench_level_achieved_rate": ("Measured starts per second so far in the level",
                                          lambda o: o.live_rate(time.time())),
        "authbench_level_starts_late": ("Measured starts later than --late-after after their slot",
                                        lambda o: o.late),
        "authbench_level_starts_dropped": ("Measured starts dropped: --max-users busy for --queue-for",
                                           lambda o: o.dropped),
        "authbench_level_in_flight_peak": ("Most journeys in flight at once in the level",
                                           lambda o: o.peak_in_flight),
    }
    for name, (text, read) in gauges.items():
        Gauge(name, text, registry=registry).set_function(_reader(context, read))
