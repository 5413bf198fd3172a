"""The full-run timeline: buckets, percentiles, users in flight, warm-up, annotations and bounded memory."""

from __future__ import annotations

import json
import math
import random

from authbench.results.sample import ERROR, MEASURED, OK, WARMUP, Sample
from authbench.results.timeline import BIN_GROWTH, MAX_POINTS, Timeline, annotations, build

T0 = 1_700_000_000.0


def sample(start: float, ms: float, outcome: str = OK, phase: str = MEASURED, pattern: str = "2x10",
           repetition: int = 1) -> Sample:
    return Sample(T0 + start, ms, 0, 0, outcome, "" if outcome == OK else "boom", phase, pattern, repetition)


def test_rates_errors_and_percentiles_per_second_where_journeys_end():
    durations = list(range(1, 101))  # 100 ok journeys ending in second 2, 1..100 ms
    samples = [sample(2.0, ms) for ms in durations] + [sample(0.5, 100, ERROR), sample(0.2, 1000, ERROR)]
    series = build(samples).series()
    assert series["t"] == [T0, T0 + 1, T0 + 2] and series["width_s"] == 1.0
    assert series["ok_per_s"] == [0, 0, 100]
    assert series["errors_per_s"] == [1, 1, 0]  # counted in the second they ended (0.6 s and 1.2 s)
    assert series["p50_ms"][:2] == [None, None]  # no ok journey ended there: no percentile, not zero
    for name, exact in (("p50_ms", 50), ("p95_ms", 95), ("p99_ms", 99)):  # nearest rank, within half a bin
        assert abs(series[name][2] - exact) <= exact * (BIN_GROWTH - 1) / 2 + 1e-9
    json.dumps(series)


def test_users_in_flight_are_the_mean_number_of_journeys_running_in_each_second():
    samples = [sample(0.0, 3000), sample(0.0, 3000), sample(1.5, 1000)]  # two for 3 s, one from 1.5 s to 2.5 s
    series = build(samples).series()
    assert series["in_flight"] == [2, 2.5, 2.5, 0]  # the last bucket holds the two ends, nothing in flight
    assert series["ok_per_s"] == [0, 0, 1, 2]


def test_warm_up_seconds_are_flagged():
    samples = [sample(t, 100, phase=WARMUP) for t in (0, 1, 2)] + [sample(t, 100) for t in (3, 4)]
    assert build(samples).series()["warmup"] == [1, 1, 1, 0, 0]


def test_a_long_run_is_aggregated_into_wider_buckets_and_stays_bounded():
    rng = random.Random(7)
    samples = [sample(t * 0.5, rng.uniform(5, 50)) for t in range(20_000)]  # 10,000 s of journeys, 2/s
    timeline = build(samples, max_points=1000)
    series = timeline.series()
    assert len(series["t"]) <= 1000 and len(timeline) <= 1000
    assert series["width_s"] == 16.0  # 1 s doubled until 10,000 s fit in 1000 buckets
    assert math.isclose(sum(series["ok_per_s"]) * series["width_s"], 20_000)  # no journey lost in merging
    assert all(5 <= p <= 50 * BIN_GROWTH for p in series["p99_ms"] if p is not None)
    assert 1.9 < sorted(series["ok_per_s"])[len(series["ok_per_s"]) // 2] < 2.1  # still journeys per second
    assert MAX_POINTS >= 3600  # the live page and the report keep an hour at one-second resolution


def test_a_journey_reported_late_that_started_before_the_first_is_placed_before_it():
    timeline = Timeline()
    timeline.add(sample(5.0, 100))
    timeline.add(sample(1.0, 4500))  # began earlier, ended later (the live page gets samples as they end)
    series = timeline.series()
    assert series["t"][0] == T0 + 1 and series["t"][-1] == T0 + 5
    assert series["in_flight"][0] == 1.0


def test_annotations_mark_cells_levels_measured_phases_and_faults():
    samples = [sample(0, 100, phase=WARMUP), sample(2, 100), sample(3, 400),
               sample(10, 100, pattern="10/s", phase=WARMUP), sample(12, 100, pattern="10/s")]
    document = {"cells": [{"pattern": "2x10", "repetition": 1},
                          {"pattern": "10/s", "repetition": 1, "open": {"target_rate": 10.0},
                           "faults": [{"fault": "at=1s stop idp-a", "time": T0 + 11, "ok": True},
                                      {"fault": "at=2s start idp-a", "time": T0 + 12.5, "ok": False}]}]}
    document["cells"].append({"pattern": "peak", "repetition": 1, "open": {"target_rate": 50.0}})
    samples.append(sample(20, 100, pattern="peak"))
    marks = [(round(m["t"] - T0, 3), m["what"], m["label"]) for m in annotations(samples, document)]
    assert marks == [(0, "start", "2x10 #1"), (2, "measured", "2x10 #1"), (3.4, "end", "2x10 #1"),
                     (10, "level", "10/s #1"), (11, "fault", "stop idp-a"), (12, "measured", "10/s #1"),
                     (12.1, "end", "10/s #1"), (12.5, "fault", "start idp-a (failed)"),
                     (20, "level", "peak #1 (50/s)"), (20, "measured", "peak #1 (50/s)"),
                     (20.1, "end", "peak #1 (50/s)")]
