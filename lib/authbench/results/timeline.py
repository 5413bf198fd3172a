"""A whole run as time series: journeys/s, errors/s, p50/p95/p99, users in flight and warm-up per bucket.

One accumulator serves the live page (fed sample by sample) and the report (fed samples.csv), so both
draw the same figures. Memory is bounded for any run length: when the run spans more than `MAX_POINTS`
buckets, the bucket width doubles and neighbours merge; percentiles come from a sparse log histogram
(bins `BIN_GROWTH` apart), which merges by adding counts and is exact to within half a bin.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from .sample import MEASURED, OK, WARMUP, Sample
from .table import run_label

MAX_POINTS = 3600  # buckets kept: one hour at 1 s; a longer run gets 2 s, 4 s… buckets
BASE_WIDTH_S = 1.0
BIN_GROWTH = 1.01  # percentile bins 1 % apart: a quoted p99 is within 0.5 % of the exact one
FLOOR_MS = 0.01  # durations below this share the lowest bin
PERCENTILES = (("p50_ms", 50.0), ("p95_ms", 95.0), ("p99_ms", 99.0))
DIGITS = 3  # rounding of the served figures (keeps the JSON short)
START, MEASURING, END, LEVEL, FAULT = "start", "measured", "end", "level", "fault"  # annotation kinds


class _Bucket:
    __slots__ = ("ok", "errors", "warmup", "measured", "busy_s", "bins", "quantiles")

    def __init__(self) -> None:
        self.ok = self.errors = self.warmup = self.measured = 0
        self.busy_s = 0.0  # journey-seconds spent in flight inside the bucket
        self.bins: Counter[int] = Counter()  # log bin -> ok journeys that ended here
        self.quantiles: list[float | None] | None = None  # PERCENTILES of bins, until a journey changes them

    def merge(self, other: _Bucket) -> None:
        self.ok += other.ok
        self.errors += other.errors
        self.warmup += other.warmup
        self.measured += other.measured
        self.busy_s += other.busy_s
        self.bins.update(other.bins)
        self.quantiles = None

    def percentiles(self) -> list[float | None]:
        """PERCENTILES, computed once per change (the live page asks every second for every bucket)."""
        if self.quantiles is None:
            values = (percentile(self.bins, pct) for _, pct in PERCENTILES)
            self.quantiles = [None if v is None else round(v, DIGITS) for v in values]
        return self.quantiles


def _bin(ms: float) -> int:
    return math.floor(math.log(max(ms, FLOOR_MS)) / math.log(BIN_GROWTH))


def _bin_value(index: int) -> float:
    """The middle of a bin (geometric): at most half a bin from any duration in it."""
    return BIN_GROWTH ** (index + 0.5)


def percentile(bins: Counter[int], pct: float) -> float | None:
    """Nearest-rank percentile of a histogram's durations (ms), None when it is empty."""
    total = sum(bins.values())
    if not total:
        return None
    rank, seen = max(1, math.ceil(pct / 100 * total)), 0
    for index in sorted(bins):
        seen += bins[index]
        if seen >= rank:
            return _bin_value(index)
    return None  # unreachable: the ranks add up to total


class Timeline:
    """Buckets of a run, keyed by their index from `origin` (an epoch second); fed with `add`."""

    def __init__(self, max_points: int = MAX_POINTS, width_s: float = BASE_WIDTH_S) -> None:
        self.max_points = max(2, max_points)
        self.width_s = width_s
        self.origin: float | None = None
        self._buckets: dict[int, _Bucket] = {}
        self._low = self._high = 0  # the lowest and highest index held (valid once a bucket is)

    def __len__(self) -> int:
        return len(self._buckets)

    def _index(self, t: float) -> int:
        return math.floor((t - (self.origin or 0.0)) / self.width_s)

    def _widen(self) -> None:
        """Double the bucket width, merging neighbours (index i and i+1 of an even i become i // 2)."""
        merged: dict[int, _Bucket] = {}
        for index, bucket in self._buckets.items():
            merged.setdefault(index // 2, _Bucket()).merge(bucket)
        self._buckets, self.width_s = merged, self.width_s * 2
        self._low, self._high = self._low // 2, self._high // 2

    def add(self, sample: Sample) -> None:
        if self.origin is None:
            self.origin = float(math.floor(sample.start))
        while True:  # widen until the run so far, this journey included, fits in max_points buckets
            first, last = self._index(sample.start), self._index(sample.end)
            low, high = (min(first, self._low), max(last, self._high)) if self._buckets else (first, last)
            if high - low + 1 <= self.max_points:
                break
            self._widen()
        self._low, self._high = low, high
        for index in range(first, last + 1):  # the journey's time in flight, spread over the buckets it crossed
            lo = self.origin + index * self.width_s
            overlap = min(sample.end, lo + self.width_s) - max(sample.start, lo)
            if overlap > 0:
                self._buckets.setdefault(index, _Bucket()).busy_s += overlap
        bucket = self._buckets.setdefault(last, _Bucket())  # counted where it ended
        if sample.outcome == OK:
            bucket.ok += 1
            bucket.bins[_bin(sample.duration_ms)] += 1
            bucket.quantiles = None
        else:
            bucket.errors += 1
        if sample.phase == WARMUP:
            bucket.warmup += 1
        elif sample.phase == MEASURED:
            bucket.measured += 1

    def series(self) -> dict[str, Any]:
        """Columns for a chart (uPlot's layout): every bucket from the first to the last, empty ones included.

        `t` is each bucket's start (epoch s); rates are per second; `in_flight` is the mean number of journeys
        in flight over the bucket; `warmup` is 1 where most journeys ending in it were warm-up ones.
        """
        out: dict[str, Any] = {"width_s": self.width_s, "t": [], "ok_per_s": [], "errors_per_s": [],
                               **{name: [] for name, _ in PERCENTILES}, "in_flight": [], "warmup": []}
        if not self._buckets:
            return out
        width, origin = self.width_s, self.origin or 0.0
        for index in range(self._low, self._high + 1):
            bucket = self._buckets.get(index) or _Bucket()
            out["t"].append(round(origin + index * width, DIGITS))
            out["ok_per_s"].append(round(bucket.ok / width, DIGITS))
            out["errors_per_s"].append(round(bucket.errors / width, DIGITS))
            for (name, _), value in zip(PERCENTILES, bucket.percentiles(), strict=True):
                out[name].append(value)
            out["in_flight"].append(round(bucket.busy_s / width, DIGITS))
            out["warmup"].append(1 if bucket.warmup > bucket.measured else 0)
        return out


def build(samples: Iterable[Sample], max_points: int = MAX_POINTS) -> Timeline:
    timeline = Timeline(max_points)
    for sample in samples:
        timeline.add(sample)
    return timeline


def annotations(samples: Iterable[Sample], document: dict[str, Any],
                show: Callable[[str], str] = str) -> list[dict[str, Any]]:
    """The marks of a finished run, as the live page makes them: each cell's start (a level's, for the open
    model), its measured phase and its end, from its samples; each played fault, from summary.json, named
    by `show` (cluster.faults.table.shown hides a command's arguments)."""
    spans: dict[tuple[str, int], list[float]] = {}  # cell -> [first start, first measured start, last end]
    for s in samples:
        span = spans.setdefault((s.pattern, s.repetition), [s.start, math.inf, s.end])
        span[0], span[2] = min(span[0], s.start), max(span[2], s.end)
        if s.phase == MEASURED:
            span[1] = min(span[1], s.start)
    cells = document.get("cells") or []
    levels = {(str(c.get("pattern")), c.get("repetition")): c["open"] for c in cells if c.get("open")}
    marks: list[dict[str, Any]] = []
    for (pattern, repetition), (start, measured, end) in spans.items():
        label = run_label(pattern, repetition)
        level = levels.get((pattern, repetition))
        rate = f"{level['target_rate']:g}/s" if level and level.get("target_rate") is not None else ""
        if rate and rate not in pattern:  # a named level: its rate beside the name
            label += f" ({rate})"
        marks.append({"t": start, "what": LEVEL if level else START, "label": label})
        if measured < math.inf:
            marks.append({"t": measured, "what": MEASURING, "label": label})
        marks.append({"t": end, "what": END, "label": label})
    for cell in cells:
        for fault in cell.get("faults") or []:
            if fault.get("time") is not None:
                marks.append(fault_mark(fault, show))
    return sorted(marks, key=lambda m: m["t"])


def fault_mark(record: dict[str, Any], show: Callable[[str], str] = str) -> dict[str, Any]:
    """A played fault as a mark: its action as `show` names it, without `at=…`, and whether it failed."""
    label = show(str(record["fault"])).split(" ", 1)[-1] + ("" if record.get("ok", True) else " (failed)")
    return {"t": record["time"], "what": FAULT, "label": label}
