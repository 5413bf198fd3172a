"""Grinder-style run patterns: exactly N users × M journeys each, warm-up first, repeated.

Locust has none of this (its users run until told to stop), so the plan is parsed here and kept
exact by the runner's phase controller.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import AuthbenchError

MAX_USERS = 10_000
MAX_RUNS = 10_000_000
MAX_REPEAT = 100
MAX_DURATION_S = 7 * 24 * 3600.0  # a week: longer is a typo (99999999999h), not a plan
# ASCII digits only: \d would accept full-width and other scripts' digits, which look alike but are not.
_PATTERN = re.compile(r"^([0-9]+)x([0-9]+)$")
_DURATION = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)?$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


class PlanError(AuthbenchError, ValueError):
    """Bad pattern, duration or repeat count; the message names the bad value and the expected form."""

DEFAULT_CELL_TIME_LIMIT = 3600.0  # seconds one pattern × repetition may take before it is cut short

@dataclass(frozen=True)
class Pattern:
    users: int
    runs: int  # journeys per user

    @property
    def label(self) -> str:
        return f"{self.users}x{self.runs}"

    @property
    def tests(self) -> int:
        return self.users * self.runs


@dataclass(frozen=True)
class Plan:
    patterns: tuple[Pattern, ...]
    warmup: float = 0.0  # seconds of load before each measured pattern × repetition
    repeat: int = 1
    skip: frozenset[tuple[str, int]] = frozenset()  # (pattern label, repetition) done before: a resumed run

    def cells(self) -> list[tuple[Pattern, int]]:
        """(pattern, repetition) in the order they run; repetitions are 1-based like 2012's T1-1…T1-3."""
        return [(pattern, rep) for pattern in self.patterns for rep in range(1, self.repeat + 1)
                if (pattern.label, rep) not in self.skip]

    def record(self) -> dict:
        """The plan as summary.json holds it (and --resume compares it)."""
        return {"patterns": [p.label for p in self.patterns], "warmup_s": self.warmup, "repeat": self.repeat}

    def describe(self) -> str:
        return ",".join(p.label for p in self.patterns)


def parse_pattern(text: str) -> Pattern:
    match = _PATTERN.match(text.strip())
    if not match:
        raise PlanError(f"pattern {text.strip()!r} is not USERSxRUNS (e.g. 10x200)")
    users, runs = int(match[1]), int(match[2])
    if not 1 <= users <= MAX_USERS:
        raise PlanError(f"pattern {text.strip()!r}: users must be 1..{MAX_USERS}")
    if not 1 <= runs <= MAX_RUNS:
        raise PlanError(f"pattern {text.strip()!r}: runs must be 1..{MAX_RUNS}")
    return Pattern(users, runs)


def parse_patterns(text: str) -> tuple[Pattern, ...]:
    """Each pattern once: a cell is named by pattern × repetition, so a second 2x400 would share the
    first one's name in samples.csv, summary.json and --resume (use --repeat to measure one twice)."""
    items = [item for item in text.split(",") if item.strip()]
    if not items:
        raise PlanError("pattern list is empty; give USERSxRUNS[,USERSxRUNS…] (e.g. 2x1000,10x200)")
    patterns = tuple(parse_pattern(item) for item in items)
    labels = [p.label for p in patterns]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise PlanError(f"pattern {', '.join(twice)} is given more than once; list each pattern once "
                        "and use --repeat to measure it again")
    return patterns


def parse_duration(text: str) -> float:
    """Seconds from "60s", "2m", "500ms", "1h" or a bare number of seconds."""
    match = _DURATION.match(text.strip().lower())
    if not match:
        raise PlanError(f"duration {text.strip()!r} is not a number with an optional unit ms, s, m or h")
    seconds = float(match[1]) * _UNITS[match[2]]
    if seconds > MAX_DURATION_S:
        raise PlanError(f"duration {text.strip()!r} is longer than a week; give at most {MAX_DURATION_S / 3600:g}h")
    return seconds


def check_cell_limit(plan: Plan, cell_time_limit: float) -> None:
    """The limit bounds each cell's measured phase after its warm-up; a warm-up longer than it is a slip."""
    if cell_time_limit <= 0:
        raise PlanError("--cell-time-limit must be more than 0")
    if plan.warmup > cell_time_limit:
        raise PlanError(f"warm-up {plan.warmup:g} s is longer than the cell time limit {cell_time_limit:g} s; "
                        "shorten --warmup or raise --cell-time-limit")


def parse_plan(patterns: str, warmup: str = "0", repeat: int = 1) -> Plan:
    if not 1 <= repeat <= MAX_REPEAT:
        raise PlanError(f"repeat {repeat} must be 1..{MAX_REPEAT}")
    return Plan(parse_patterns(patterns), parse_duration(warmup), repeat)
