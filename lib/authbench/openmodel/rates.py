"""Arrival rates, load levels and SLOs as typed on the command line, parsed into data.

`--rate 100/s --duration 10m` is one level; `--levels typical=20/s:10m,peak=100/s:10m:1m,max` a plan
(name=RATE:DURATION[:WARMUP], and `max` — the capacity search — last). Every parse error is a
PlanError whose message names the bad text and the expected form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..patterns import MAX_REPEAT, PlanError, parse_duration

MAX_RATE = 100_000.0  # journeys per second: far beyond one generator, a bound against typos
RATE_UNITS = {"s": 1.0, "sec": 1.0, "min": 1 / 60, "m": 1 / 60, "h": 1 / 3600}
CONSTANT = "constant"
POISSON = "poisson"
ARRIVALS = (CONSTANT, POISSON)
MAX_LEVEL = "max"  # the levels-list item that runs the capacity search
_RATE = re.compile(r"^(\d+(?:\.\d+)?)\s*/\s*([a-z]+)$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_SLO_TERM = re.compile(r"^(p\d+(?:\.\d+)?|median|mean|max|errors)\s*<\s*(\d+(?:\.\d+)?)\s*(ms|s|%)?$")
SLO_ALIASES = {"median": 50.0, "max": 100.0}


def parse_rate(text: str) -> float:
    """Journeys per second from "100/s", "6000/min" or "3600/h"."""
    cleaned = text.strip().lower()
    match = _RATE.match(cleaned)
    if not match:
        raise PlanError(f"rate {text.strip()!r} is not a number per unit (e.g. 100/s or 6000/min)")
    if match[2] not in RATE_UNITS:
        raise PlanError(f"rate {text.strip()!r}: unknown unit {match[2]!r}; use /s, /min or /h")
    rate = float(match[1]) * RATE_UNITS[match[2]]
    if not 0 < rate <= MAX_RATE:
        raise PlanError(f"rate {text.strip()!r} must be more than 0 and at most {MAX_RATE:g}/s")
    return rate


def format_rate(rate: float) -> str:
    return f"{rate:.4g}/s"


def slo_check_text(check: dict) -> str:
    """One SLO term's result as words (runner.slo_checks): 'p99 31.2 ms < 40 ms', 'errors 2.10% ≥ 1%'."""
    if check["value"] is None:
        return f"{check['metric']}: no successful journey"
    side = "<" if check["met"] else "≥"
    if check["unit"] == "%":
        return f"{check['metric']} {check['value']:.2f}% {side} {check['limit']:g}%"
    return f"{check['metric']} {check['value']:.1f} ms {side} {check['limit']:g} ms"


@dataclass(frozen=True)
class Level:
    """One arrival rate held for a duration after its own warm-up (a cell, like a pattern)."""

    name: str
    rate: float  # journeys per second
    duration: float  # measured seconds
    warmup: float = 0.0

    @property
    def label(self) -> str:
        return self.name

    @property
    def tests(self) -> int:
        """Planned measured starts at constant spacing (Poisson arrivals vary around it)."""
        return round(self.rate * self.duration)


@dataclass(frozen=True)
class Search:
    """The capacity search's knobs: geometric steps from `start`, then halving to `precision`."""

    start: float = 10.0
    growth: float = 2.0
    precision: float = 0.05  # stop refining when (first failing - last passing) / last passing is below it
    max_rate: float = 2000.0  # the search never asks for more
    hold: float = 30.0  # measured seconds per step
    warmup: float = 5.0
    max_steps: int = 20


@dataclass(frozen=True)
class Arrivals:
    kind: str = CONSTANT
    seed: int | None = None
    max_users: int = 1000  # journeys in flight at once
    queue_for: float = 1.0  # seconds a start due while all users are busy waits before it is dropped
    late_after: float = 0.010  # a start later than this after its slot counts as late


@dataclass(frozen=True)
class SLOTerm:
    metric: str  # "p99", "mean", "errors"
    limit: float  # ms, or % for errors
    percentile: float | None = None  # for pNN, median, max

    def describe(self) -> str:
        return f"{self.metric}<{self.limit:g}{'%' if self.metric == 'errors' else 'ms'}"


@dataclass(frozen=True)
class SLO:
    terms: tuple[SLOTerm, ...]

    def describe(self) -> str:
        return ",".join(term.describe() for term in self.terms)


@dataclass(frozen=True)
class LevelPlan:
    """What `run` executes instead of patterns: levels, each repeated, and maybe a capacity search."""

    levels: tuple[Level, ...]
    arrivals: Arrivals = field(default_factory=Arrivals)
    repeat: int = 1
    search: Search | None = None
    slo: SLO | None = None
    skip: frozenset[tuple[str, int]] = frozenset()

    @property
    def patterns(self) -> tuple[Level, ...]:  # headless records `plan.patterns` labels
        return self.levels

    @property
    def warmup(self) -> float:
        return max((level.warmup for level in self.levels), default=0.0)

    def cells(self) -> list[tuple[Level, int]]:
        return [(level, rep) for level in self.levels for rep in range(1, self.repeat + 1)
                if (level.label, rep) not in self.skip]

    def record(self) -> dict:
        """As patterns.Plan.record: what summary.json holds and --resume compares (levels by their labels)."""
        return {"patterns": [level.label for level in self.levels], "warmup_s": self.warmup, "repeat": self.repeat}

    def describe(self) -> str:
        parts = [f"{level.name}={format_rate(level.rate)}:{level.duration:g}s" for level in self.levels]
        if self.search is not None:
            parts.append(f"max (SLO {self.slo.describe() if self.slo else '-'})")
        return f"levels {','.join(parts)}, {self.arrivals.kind} arrivals, at most {self.arrivals.max_users} users"


def parse_level(text: str, warmup: float) -> Level:
    name, sep, rest = text.strip().partition("=")
    if not sep or not rest:
        raise PlanError(f"level {text.strip()!r} is not NAME=RATE:DURATION[:WARMUP] (e.g. typical=20/s:10m)")
    if not _NAME.match(name):
        raise PlanError(f"level name {name!r}: use letters, digits, '.', '_' and '-'")
    if name == MAX_LEVEL:
        raise PlanError("level name 'max' is the capacity search; give it alone, as the last item")
    parts = rest.split(":")
    if len(parts) not in (2, 3):
        raise PlanError(f"level {text.strip()!r} is not NAME=RATE:DURATION[:WARMUP] (e.g. typical=20/s:10m)")
    duration = parse_duration(parts[1])
    if duration <= 0:
        raise PlanError(f"level {text.strip()!r}: its duration must be more than 0")
    return Level(name, parse_rate(parts[0]), duration, parse_duration(parts[2]) if len(parts) == 3 else warmup)


def parse_levels(text: str, warmup: float) -> tuple[tuple[Level, ...], bool]:
    """(levels, whether `max` ends the list)."""
    items = [item.strip() for item in text.split(",")]
    if not any(items) or not all(items):
        raise PlanError(f"levels {text.strip()!r}: give NAME=RATE:DURATION[,…][,max] with no empty item")
    wants_max = items[-1] == MAX_LEVEL
    if wants_max:
        items.pop()
    if MAX_LEVEL in items:
        raise PlanError("levels: 'max' (the capacity search) must be the last item")
    levels = tuple(parse_level(item, warmup) for item in items)
    names = [level.name for level in levels]
    doubled = sorted({name for name in names if names.count(name) > 1})
    if doubled:
        raise PlanError(f"levels: name {doubled[0]!r} is given twice; every level needs its own name")
    return levels, wants_max


def parse_slo(text: str) -> SLO:
    """'p99<500ms,errors<1%' → SLO; latencies in ms (or s), errors in %."""
    terms = []
    for item in text.split(","):
        match = _SLO_TERM.match(item.strip().lower())
        if not match:
            raise PlanError(f"SLO term {item.strip()!r} is not METRIC<LIMIT (e.g. p99<500ms, mean<200ms, errors<1%)")
        metric, limit, unit = match[1], float(match[2]), match[3]
        if metric == "errors":
            if unit != "%":
                raise PlanError(f"SLO term {item.strip()!r}: give the error limit in % (e.g. errors<1%)")
            if not 0 < limit <= 100:  # errors<0% can never pass, errors<150% can never fail
                raise PlanError(f"SLO term {item.strip()!r}: the error limit must be more than 0% and at most 100%")
            terms.append(SLOTerm(metric, limit))
            continue
        if unit == "%":
            raise PlanError(f"SLO term {item.strip()!r}: give a latency in ms or s (e.g. {metric}<500ms)")
        if limit <= 0:
            raise PlanError(f"SLO term {item.strip()!r}: a latency limit of 0 can never pass; give more than 0")
        percentile = SLO_ALIASES.get(metric) if metric in SLO_ALIASES else (
            float(metric[1:]) if metric.startswith("p") else None)
        if percentile is not None and not 0 < percentile <= 100:
            raise PlanError(f"SLO term {item.strip()!r}: the percentile must be more than 0 and at most 100")
        terms.append(SLOTerm(metric, limit * (1000.0 if unit == "s" else 1.0), percentile))
    return SLO(tuple(terms))


def check_repeat(repeat: int) -> None:
    if not 1 <= repeat <= MAX_REPEAT:
        raise PlanError(f"repeat {repeat} must be 1..{MAX_REPEAT}")
