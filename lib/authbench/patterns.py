"""Grinder-style run patterns: exactly N users × M journeys each, warm-up first, repeated.

Locust has none of this (its users run until told to stop), so the plan is parsed here and kept
exact by the runner's phase controller.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_USERS = 10_000
MAX_RUNS = 10_000_000
MAX_REPEAT = 100
_PATTERN = re.compile(r"^(\d+)x(\d+)$")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)?$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


class PlanError(ValueError):
    """Bad pattern, duration or repeat count; the message names the bad value and the expected form."""


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
    items = [item for item in text.split(",") if item.strip()]
    if not items:
        raise PlanError("pattern list is empty; give USERSxRUNS[,USERSxRUNS…] (e.g. 2x1000,10x200)")
    return tuple(parse_pattern(item) for item in items)


def parse_duration(text: str) -> float:
    """Seconds from "60s", "2m", "500ms", "1h" or a bare number of seconds."""
    match = _DURATION.match(text.strip().lower())
    if not match:
        raise PlanError(f"duration {text.strip()!r} is not a number with an optional unit ms, s, m or h")
    return float(match[1]) * _UNITS[match[2]]


def parse_plan(patterns: str, warmup: str = "0", repeat: int = 1) -> Plan:
    if not 1 <= repeat <= MAX_REPEAT:
        raise PlanError(f"repeat {repeat} must be 1..{MAX_REPEAT}")
    return Plan(parse_patterns(patterns), parse_duration(warmup), repeat)
