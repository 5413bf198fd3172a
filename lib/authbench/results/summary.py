"""Grinder-style figures for one pattern × repetition, and their average over repetitions.

Definitions follow The Grinder 3 where it has one (checked against its source):
- mean and SD are over successful tests only (Grinder keeps no time for a failed test), and the SD is the
  population SD (Grinder divides the variance by n, not n - 1);
- TPS and peak TPS count successful tests only.
One deliberate difference: `tests` here counts every measured journey, failures included, whereas Grinder's
Tests column counts successes only (its Tests and Errors are disjoint). Grinder's figure is `successes`.

Percentiles come from an HDR histogram (microseconds, 3 significant digits: within 0.1 %), so memory stays
flat however many samples a run has; min and max are exact.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from hdrh.histogram import HdrHistogram

from authbench.results.sample import MEASURED, OK, Sample

HISTOGRAM_LOWEST_US = 1
HISTOGRAM_HIGHEST_US = 3_600_000_000  # one hour; longer journeys are clamped to it (and a warning says so)
HISTOGRAM_SIGNIFICANT_DIGITS = 3
PEAK_INTERVAL_S = 1.0  # Grinder's default sample interval (grinder.console sample interval: 1000 ms)
PEAK_MIN_INTERVALS = 3  # a measured phase shorter than this many intervals gets a warning on its Peak TPS
PERCENTILES = {"median_ms": 50.0, "p90_ms": 90.0, "p99_ms": 99.0, "p999_ms": 99.9}
DISTRIBUTION_BOUNDS_MS = (50.0, 300.0, 1000.0)  # OneSpan's buckets: <50, 50–300, 300–1000, ≥1000 ms
DISTRIBUTION_LABELS = ("<50 ms", "<300 ms", "<1000 ms", ">=1000 ms")
# Fewest successful tests a percentile should rest on before it is quoted without a warning.
SAMPLES_FOR_PERCENTILE = {"p99": 100, "p99.9": 1000}
UNKNOWN_REASON = "unknown"


@dataclass
class Summary:
    """Figures for one pattern × repetition (or, from `average`, the mean over repetitions).

    Times are in ms. mean_ms, sd_ms, the percentiles, min_ms and max_ms are None when there was no
    successful test: a 0 there would read as a very fast run.
    """

    pattern: str = ""
    repetition: int = 0  # 0 for an average
    repetitions: int = 1  # how many repetitions the figures stand for
    tests: float = 0  # measured journeys, failures included (an average may be fractional)
    errors: float = 0
    successes: float = 0  # = Grinder's "Tests"
    warmup_excluded: float = 0  # warm-up journeys seen and left out of every figure
    mean_ms: float | None = None  # over successful tests, like Grinder's Mean Test Time
    sd_ms: float | None = None  # population SD over successful tests, like Grinder's
    tps: float = 0.0  # successful tests / duration_s
    peak_tps: float = 0.0  # most successful completions in one PEAK_INTERVAL_S interval, per second
    duration_s: float = 0.0  # last end - first start over all measured journeys, failures included
    median_ms: float | None = None
    p90_ms: float | None = None
    p99_ms: float | None = None
    p999_ms: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    distribution: dict[str, float] = field(default_factory=dict)  # label -> successful tests in the bucket
    distribution_pct: dict[str, float] = field(default_factory=dict)  # label -> % of successful tests
    reasons: dict[str, int] = field(default_factory=dict)  # failure reason -> count
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Summary:
        """Rebuild a summary from `to_dict` output (e.g. from summary.json); unknown keys are ignored."""
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        return cls(**known)


def summarize(samples: Iterable[Sample]) -> Summary:
    """Summarise ONE pattern × repetition in a single pass; warm-up samples are counted, then ignored.

    TPS divides by the span of the measured phase (first measured start to last measured end), not by the
    sum of journey times or a wall clock that includes the warm-up: that is the window in which the
    counted work happened. Peak TPS bins successful completions (journey ends) into PEAK_INTERVAL_S
    intervals starting at the first measured start.
    """
    tests = errors = warmup = 0
    mean = m2 = 0.0  # Welford: stable where sum-of-squares loses digits on long runs
    successes = 0
    first_start = math.inf
    last_end = -math.inf
    low = math.inf
    high = -math.inf
    clamped = 0
    ends = array("d")
    buckets = [0] * (len(DISTRIBUTION_BOUNDS_MS) + 1)
    reasons: Counter[str] = Counter()
    runs: set[tuple[str, int]] = set()
    histogram = HdrHistogram(HISTOGRAM_LOWEST_US, HISTOGRAM_HIGHEST_US, HISTOGRAM_SIGNIFICANT_DIGITS)

    for sample in samples:
        if sample.phase != MEASURED:
            warmup += 1
            continue
        tests += 1
        runs.add((sample.pattern, sample.repetition))
        start = sample.start
        duration = sample.duration_ms
        end = start + duration / 1000
        if start < first_start:
            first_start = start
        if end > last_end:
            last_end = end
        if sample.outcome != OK:
            errors += 1
            reasons[sample.reason or UNKNOWN_REASON] += 1
            continue
        successes += 1
        delta = duration - mean
        mean += delta / successes
        m2 += delta * (duration - mean)
        if duration < low:
            low = duration
        if duration > high:
            high = duration
        ends.append(end)
        buckets[bisect_right(DISTRIBUTION_BOUNDS_MS, duration)] += 1
        micros = round(duration * 1000)
        if micros > HISTOGRAM_HIGHEST_US:
            micros = HISTOGRAM_HIGHEST_US
            clamped += 1
        histogram.record_value(max(micros, 0))

    if len(runs) > 1:
        listed = ", ".join(f"{p or '-'} #{r}" for p, r in sorted(runs))
        raise ValueError(f"summarize takes one pattern × repetition, got {listed}")
    pattern, repetition = next(iter(runs)) if runs else ("", 0)
    duration_s = last_end - first_start if tests else 0.0
    summary = Summary(
        pattern=pattern,
        repetition=repetition,
        tests=tests,
        errors=errors,
        successes=successes,
        warmup_excluded=warmup,
        duration_s=duration_s,
        tps=successes / duration_s if duration_s > 0 else 0.0,
        peak_tps=_peak_tps(ends, first_start),
        distribution=dict(zip(DISTRIBUTION_LABELS, buckets, strict=True)),
        distribution_pct={
            label: 100.0 * count / successes if successes else 0.0
            for label, count in zip(DISTRIBUTION_LABELS, buckets, strict=True)
        },
        reasons=dict(reasons.most_common()),
    )
    if successes:
        summary.mean_ms = mean
        summary.sd_ms = math.sqrt(m2 / successes)
        summary.min_ms = low
        summary.max_ms = high
        values = histogram.get_percentile_to_value_dict(list(PERCENTILES.values()))
        for name, percentile in PERCENTILES.items():
            # The bucket's upper end, like HdrHistogram's own reports; never beyond the exact max.
            setattr(summary, name, min(values[percentile] / 1000, high))
    summary.warnings = _warnings(summary, clamped)
    return summary


def average(summaries: list[Summary]) -> Summary:
    """The 2012 report's "average of T1-1, T1-2, T1-3": the plain mean of each figure over repetitions.

    Every figure, percentiles and SD included, is the mean of the repetitions' values (not a figure of the
    pooled samples), so it can be checked by hand against the per-repetition rows. A figure that is None
    in some repetition is averaged over the others. `reasons` are totals over the repetitions, since a
    reason is something to look up rather than to average.
    """
    if not summaries:
        raise ValueError("average needs at least one summary")
    patterns = {s.pattern for s in summaries}
    result = Summary(
        pattern=summaries[0].pattern if len(patterns) == 1 else "",
        repetition=0,
        repetitions=sum(s.repetitions for s in summaries),
    )
    for name in ("tests", "errors", "successes", "warmup_excluded", "tps", "peak_tps", "duration_s"):
        setattr(result, name, _mean([getattr(s, name) for s in summaries]))
    for name in ("mean_ms", "sd_ms", "min_ms", "max_ms", *PERCENTILES):
        present = [getattr(s, name) for s in summaries if getattr(s, name) is not None]
        setattr(result, name, _mean(present) if present else None)
    for label in DISTRIBUTION_LABELS:
        result.distribution[label] = _mean([s.distribution.get(label, 0) for s in summaries])
        result.distribution_pct[label] = _mean([s.distribution_pct.get(label, 0.0) for s in summaries])
    reasons: Counter[str] = Counter()
    for s in summaries:
        reasons.update(s.reasons)
    result.reasons = dict(reasons.most_common())
    result.warnings = [
        f"repetition {s.repetition}: {warning}" if s.repetition else warning
        for s in summaries
        for warning in s.warnings
    ]
    return result


def averages_by_pattern(cells: Iterable[dict[str, Any]]) -> dict[str, Summary]:
    """Pattern → average over its repetitions, from summary.json's cell entries (`pattern`, `summary`).

    A repetition cut short by the cell time limit (`complete` false) is left out: its counts are partial.
    """
    by_pattern: dict[str, list[Summary]] = {}
    for cell in cells:
        if not cell.get("complete", True):
            continue
        by_pattern.setdefault(cell["pattern"], []).append(Summary.from_dict(cell["summary"]))
    return {pattern: average(items) for pattern, items in by_pattern.items()}


def split_runs(samples: Iterable[Sample]) -> dict[tuple[str, int], list[Sample]]:
    """Group a run's samples (e.g. all of samples.csv) by (pattern, repetition), in order of appearance."""
    groups: dict[tuple[str, int], list[Sample]] = {}
    for sample in samples:
        groups.setdefault((sample.pattern, sample.repetition), []).append(sample)
    return groups


def _peak_tps(ends: array, origin: float) -> float:
    if not ends:
        return 0.0
    counts = Counter(int((end - origin) // PEAK_INTERVAL_S) for end in ends)
    return max(counts.values()) / PEAK_INTERVAL_S


def _mean(values: list[float]) -> float:
    return math.fsum(values) / len(values) if values else 0.0


def _warnings(s: Summary, clamped: int) -> list[str]:
    """Plain sentences for figures a reader should not lean on."""
    out: list[str] = []
    n = int(s.successes)
    if not s.tests:
        out.append("No measured journeys: every figure is empty.")
        return out
    if s.errors:
        share = 100.0 * s.errors / s.tests
        out.append(
            f"{int(s.errors)} of {int(s.tests)} journeys failed ({share:.1f}%); times, percentiles and TPS "
            "count successful journeys only."
        )
    if not n:
        out.append("No successful journeys: no times or percentiles.")
        return out
    for label, needed in SAMPLES_FOR_PERCENTILE.items():
        if n < needed:
            out.append(f"{label} rests on {n} samples (fewer than {needed}); treat it as a rough figure.")
    if s.duration_s <= 0:
        out.append("The measured phase has no length: TPS is reported as 0.")
    elif s.duration_s < PEAK_MIN_INTERVALS * PEAK_INTERVAL_S:
        out.append(f"Peak TPS rests on fewer than {PEAK_MIN_INTERVALS} whole {PEAK_INTERVAL_S:g} s intervals (the "
                   f"measured phase lasted {s.duration_s:.1f} s): it counts journeys, it is not a rate.")
    if clamped:
        out.append(
            f"{clamped} journeys took longer than {HISTOGRAM_HIGHEST_US / 3.6e9:.0f} h; percentiles count them "
            "at that limit."
        )
    return out
