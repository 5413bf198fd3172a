"""Grinder-style figures: exact counts, warm-up excluded, HDR percentiles within 1 % of exact ones."""

from __future__ import annotations

import json
import math
import random
import statistics

import pytest

from authbench.results.sample import ERROR, MEASURED, OK, WARMUP, Sample
from authbench.results.summary import (
    DISTRIBUTION_LABELS,
    HISTOGRAM_HIGHEST_US,
    Summary,
    average,
    split_runs,
    summarize,
)

PERCENTILE_TOLERANCE = 0.01
LT50, LT300, LT1000, GE1000 = DISTRIBUTION_LABELS


def journey(start: float, duration_ms: float, outcome: str = OK, phase: str = MEASURED, **changes: object) -> Sample:
    fields: dict[str, object] = dict(
        start=start,
        duration_ms=duration_ms,
        user=0,
        iteration=0,
        outcome=outcome,
        reason="" if outcome == OK else "timeout",
        phase=phase,
        pattern="10x200",
        repetition=1,
    )
    fields.update(changes)
    return Sample(**fields)  # type: ignore[arg-type]


def synthetic_run(users: int, warmup: int, measured: int, seed: int = 0, error_every: int = 0) -> list[Sample]:
    """Users run back to back; the measured phase starts once every user's warm-up has ended.

    Warm-up journeys are slow and often fail, so any leak of them into a figure shows.
    """
    rng = random.Random(seed)
    samples = []
    clock = [1_000.0 + rng.random() / 10 for _ in range(users)]
    for user in range(users):
        for i in range(warmup):
            duration = rng.uniform(2_000, 5_000)
            outcome = ERROR if i % 2 else OK
            samples.append(journey(clock[user], duration, outcome, WARMUP, user=user, iteration=i))
            clock[user] += duration / 1000
    barrier = max(clock)
    count = 0
    for user in range(users):
        clock[user] = barrier + rng.random() / 100
        for i in range(measured):
            duration = rng.lognormvariate(4, 0.7)
            count += 1
            outcome = ERROR if error_every and count % error_every == 0 else OK
            samples.append(journey(clock[user], duration, outcome, MEASURED, user=user, iteration=i))
            clock[user] += duration / 1000
    samples.sort(key=lambda s: s.end)  # completion order, as the recorder writes them
    return samples


def exact_percentile(ordered: list[float], percentile: float) -> float:
    """Nearest rank, with HdrHistogram's rounding of the rank (so both name the same sample)."""
    rank = max(1, int(percentile * len(ordered) / 100 + 0.5))
    return ordered[rank - 1]


def test_synthetic_run_measures_only_after_warmup() -> None:
    samples = synthetic_run(users=10, warmup=5, measured=200)
    warm = [s for s in samples if s.phase == WARMUP]
    measured = [s for s in samples if s.phase == MEASURED]
    assert min(s.start for s in measured) >= max(s.end for s in warm)


def test_counts_exclude_warmup() -> None:
    samples = synthetic_run(users=10, warmup=5, measured=200, error_every=50)
    summary = summarize(samples)
    assert summary.tests == 2000
    assert summary.errors == 40
    assert summary.successes == 1960
    assert summary.warmup_excluded == 50
    assert summary.reasons == {"timeout": 40}
    assert (summary.pattern, summary.repetition) == ("10x200", 1)
    # The warm-up journeys are 2-5 s; none of them may show up in a time figure.
    assert summary.max_ms is not None and summary.max_ms < 2_000
    measured_only = summarize(s for s in samples if s.phase == MEASURED)
    assert measured_only.to_dict() | {"warmup_excluded": 50} == summary.to_dict()


def test_mean_and_sd_match_statistics_over_successful_journeys() -> None:
    samples = synthetic_run(users=5, warmup=2, measured=300, error_every=7)
    ok = [s.duration_ms for s in samples if s.phase == MEASURED and s.outcome == OK]
    summary = summarize(samples)
    assert summary.mean_ms == pytest.approx(statistics.fmean(ok), rel=1e-12)
    assert summary.sd_ms == pytest.approx(statistics.pstdev(ok), rel=1e-9)  # Grinder: population SD
    assert summary.min_ms == min(ok) and summary.max_ms == max(ok)


def test_percentiles_within_one_percent_of_exact() -> None:
    rng = random.Random(7)
    durations = [rng.lognormvariate(4.5, 1.0) for _ in range(20_000)]
    summary = summarize(journey(1_000.0 + i / 100, d) for i, d in enumerate(durations))
    ordered = sorted(durations)
    for name, percentile in (("median_ms", 50), ("p90_ms", 90), ("p99_ms", 99), ("p999_ms", 99.9)):
        exact = exact_percentile(ordered, percentile)
        assert getattr(summary, name) == pytest.approx(exact, rel=PERCENTILE_TOLERANCE), name


def test_percentiles_of_few_samples_stay_within_range() -> None:
    summary = summarize(journey(1_000.0 + i, 10.0 * (i + 1)) for i in range(10))
    assert summary.median_ms == pytest.approx(50.0, rel=PERCENTILE_TOLERANCE)
    assert summary.p99_ms == summary.p999_ms == summary.max_ms == 100.0
    assert summary.min_ms == 10.0


def test_peak_tps_on_a_known_timeline() -> None:
    # Intervals start at the first measured start (100.0): [100, 101), [101, 102), [102, 103).
    timeline = [
        (100.0, 200),  # ends 100.2
        (100.0, 500),  # ends 100.5
        (100.5, 500),  # ends 101.0: the boundary belongs to the second interval
        (101.0, 100),
        (101.0, 200),
        (101.0, 300),
        (101.5, 400),  # ends 101.9
        (102.0, 500),
        (102.0, 500),
        (102.0, 500),
    ]
    samples = [journey(start, duration) for start, duration in timeline]
    # Four failures ending in the third interval would make it the busiest if they counted.
    samples += [journey(102.0, 600, ERROR) for _ in range(4)]
    samples += [journey(50.0, 10, OK, WARMUP) for _ in range(20)]  # warm-up burst: ignored
    summary = summarize(samples)
    assert summary.peak_tps == 5.0
    assert summary.duration_s == pytest.approx(2.6)
    # 2.6 s holds only two whole intervals: Peak TPS is then a count, and the summary says so.
    assert any(w.startswith("Peak TPS rests on fewer than 3 whole 1 s intervals") for w in summary.warnings)


def test_distribution_boundaries() -> None:
    durations = [49.9, 50, 299.9, 300, 999.9, 1000]
    samples = [journey(1_000.0 + i, d) for i, d in enumerate(durations)]
    samples.append(journey(1_010.0, 10, ERROR))  # failures are not in the distribution
    summary = summarize(samples)
    assert summary.distribution == {LT50: 1, LT300: 2, LT1000: 2, GE1000: 1}
    assert summary.distribution_pct == pytest.approx({LT50: 100 / 6, LT300: 200 / 6, LT1000: 200 / 6, GE1000: 100 / 6})


def test_tps_counts_successes_over_the_whole_measured_span() -> None:
    samples = [journey(10.0 + i / 2, 250) for i in range(8)]  # successes from 10.0, last ends at 13.75
    samples += [journey(11.0, 100, ERROR), journey(14.0, 1_000, ERROR)]  # an error is the last to end: 15.0
    summary = summarize(samples)
    assert summary.duration_s == pytest.approx(5.0)
    assert summary.tps == pytest.approx(8 / 5.0)
    assert summary.tests == 10 and summary.errors == 2
    assert summary.warnings[0] == (
        "2 of 10 journeys failed (20.0%); times, percentiles and TPS count successful journeys only."
    )


def test_warnings_name_the_sample_count_behind_a_weak_percentile() -> None:
    few = summarize(journey(1_000.0 + i, 20.0) for i in range(50))
    assert "p99 rests on 50 samples (fewer than 100); treat it as a rough figure." in few.warnings
    assert "p99.9 rests on 50 samples (fewer than 1000); treat it as a rough figure." in few.warnings
    some = summarize(journey(1_000.0 + i, 20.0) for i in range(500))
    assert [w for w in some.warnings if "rests on" in w] == [
        "p99.9 rests on 500 samples (fewer than 1000); treat it as a rough figure."
    ]
    assert summarize(journey(1_000.0 + i, 20.0) for i in range(1_000)).warnings == []


def test_no_measured_or_no_successful_journeys() -> None:
    empty = summarize([journey(1.0, 5.0, OK, WARMUP)])
    assert (empty.tests, empty.tps, empty.peak_tps, empty.mean_ms, empty.p99_ms) == (0, 0.0, 0.0, None, None)
    assert empty.warmup_excluded == 1 and empty.warnings == ["No measured journeys: every figure is empty."]
    failed = summarize([journey(1.0, 5.0, ERROR, reason=""), journey(2.0, 5.0, ERROR)])
    assert failed.tests == failed.errors == 2 and failed.mean_ms is None and failed.tps == 0.0
    assert failed.reasons == {"timeout": 1, "unknown": 1}
    assert failed.distribution_pct == {label: 0.0 for label in DISTRIBUTION_LABELS}


def test_journeys_beyond_the_histogram_are_clamped_and_flagged() -> None:
    hours = 2 * HISTOGRAM_HIGHEST_US / 1000
    summary = summarize([journey(1.0, 10.0), journey(2.0, hours)])
    assert summary.max_ms == hours  # exact, not from the histogram
    assert summary.p999_ms == pytest.approx(HISTOGRAM_HIGHEST_US / 1000, rel=PERCENTILE_TOLERANCE)
    assert any("took longer than 1 h" in w for w in summary.warnings)


def test_one_pattern_and_repetition_at_a_time() -> None:
    with pytest.raises(ValueError, match="one pattern × repetition"):
        summarize([journey(1.0, 5.0), journey(2.0, 5.0, repetition=2)])


def test_split_runs_keeps_order() -> None:
    samples = [journey(1.0, 5.0, repetition=r, iteration=i) for i in range(3) for r in (2, 1)]
    groups = split_runs(samples)
    assert list(groups) == [("10x200", 2), ("10x200", 1)]
    assert [s.iteration for s in groups[("10x200", 1)]] == [0, 1, 2]


def test_to_dict_is_json_and_round_trips() -> None:
    summary = summarize(synthetic_run(users=2, warmup=1, measured=20, error_every=9))
    data = json.loads(json.dumps(summary.to_dict(), allow_nan=False))
    assert Summary.from_dict(data) == summary


def test_average_of_three_repetitions() -> None:
    reps = [
        Summary(
            pattern="10x200",
            repetition=1,
            tests=2000,
            errors=0,
            successes=2000,
            mean_ms=100.0,
            sd_ms=10.0,
            tps=20.0,
            peak_tps=30.0,
            median_ms=90.0,
            p90_ms=150.0,
            p99_ms=300.0,
            p999_ms=500.0,
            min_ms=40.0,
            max_ms=800.0,
            distribution={LT50: 10, LT300: 1990},
            distribution_pct={LT50: 0.5, LT300: 99.5},
            reasons={},
        ),
        Summary(
            pattern="10x200",
            repetition=2,
            tests=2000,
            errors=3,
            successes=1997,
            mean_ms=110.0,
            sd_ms=20.0,
            tps=22.0,
            peak_tps=33.0,
            median_ms=95.0,
            p90_ms=160.0,
            p99_ms=330.0,
            p999_ms=None,
            min_ms=41.0,
            max_ms=900.0,
            distribution={LT50: 20, LT300: 1977},
            distribution_pct={LT50: 1.0, LT300: 99.0},
            reasons={"timeout": 2, "saml": 1},
            warnings=["p99.9 rests on 1997 samples"],
        ),
        Summary(
            pattern="10x200",
            repetition=3,
            tests=2001,
            errors=6,
            successes=1995,
            mean_ms=120.0,
            sd_ms=30.0,
            tps=24.5,
            peak_tps=36.0,
            median_ms=100.0,
            p90_ms=170.0,
            p99_ms=360.0,
            p999_ms=700.0,
            min_ms=42.0,
            max_ms=1000.0,
            distribution={LT50: 30, LT300: 1965},
            distribution_pct={LT50: 1.5, LT300: 98.5},
            reasons={"timeout": 6},
        ),
    ]
    mean = average(reps)
    assert (mean.pattern, mean.repetition, mean.repetitions) == ("10x200", 0, 3)
    assert mean.tests == pytest.approx(2000 + 1 / 3) and mean.errors == 3
    assert (mean.mean_ms, mean.sd_ms, mean.median_ms, mean.p90_ms, mean.p99_ms) == (110, 20, 95, 160, 330)
    assert mean.tps == pytest.approx(22.1666666) and mean.peak_tps == 33
    assert mean.p999_ms == 600  # averaged over the repetitions that have it
    assert (mean.min_ms, mean.max_ms) == (41, 900)
    assert mean.distribution[LT50] == 20 and mean.distribution_pct[LT300] == pytest.approx(99.0)
    assert mean.distribution[GE1000] == 0
    assert mean.reasons == {"timeout": 8, "saml": 1}  # totals, most frequent first
    assert mean.warnings == ["repetition 2: p99.9 rests on 1997 samples"]


def test_average_of_real_summaries_matches_the_mean_of_each_figure() -> None:
    reps = [summarize(synthetic_run(users=4, warmup=1, measured=100, seed=seed)) for seed in (1, 2, 3)]
    mean = average(reps)
    for name in ("tps", "peak_tps", "mean_ms", "sd_ms", "p99_ms"):
        assert getattr(mean, name) == pytest.approx(statistics.fmean(getattr(r, name) for r in reps)), name
    assert not math.isnan(mean.tps)
    with pytest.raises(ValueError):
        average([])
