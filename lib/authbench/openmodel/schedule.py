"""Intended starts: when each journey of a level should begin, fixed before the first one runs.

Constant spacing puts slot k at k / rate; Poisson arrivals draw exponential gaps from a seeded
random generator, so the same seed gives the same schedule. Warm-up slots come first, then exactly
round(rate × duration) measured slots at constant spacing. Slots are generated as they are needed,
so a long level at a high rate costs no memory up front.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from ..results.sample import MEASURED, WARMUP
from .rates import CONSTANT, POISSON


@dataclass(frozen=True)
class Slot:
    index: int  # 0-based over the whole level, warm-up included
    offset: float  # seconds after the level's epoch
    phase: str  # WARMUP or MEASURED


def constant_offsets(rate: float, duration: float) -> Iterator[float]:
    return (k / rate for k in range(round(rate * duration)))


def poisson_offsets(rate: float, duration: float, rng: random.Random) -> Iterator[float]:
    at = rng.expovariate(rate)
    while at < duration:
        yield at
        at += rng.expovariate(rate)


@dataclass(frozen=True)
class Schedule:
    """One level's slots: warm-up ones (phase WARMUP) then measured ones, in time order."""

    rate: float
    duration: float
    warmup: float
    kind: str = CONSTANT
    seed: int | None = None

    @property
    def measured_begin(self) -> float:
        """Offset where the measured phase begins: the warm-up's end (at constant spacing, its next slot)."""
        return self.warmup if self.kind == POISSON else round(self.rate * self.warmup) / self.rate

    def __iter__(self) -> Iterator[Slot]:
        if self.kind == POISSON:
            rng = random.Random(self.seed)
            warm = poisson_offsets(self.rate, self.warmup, rng)
            measured = poisson_offsets(self.rate, self.duration, rng)
        else:
            warm, measured = constant_offsets(self.rate, self.warmup), constant_offsets(self.rate, self.duration)
        index = 0
        for offset in warm:  # exhausted before `measured` draws: the random sequence stays in order
            yield Slot(index, offset, WARMUP)
            index += 1
        begin = self.measured_begin
        for offset in measured:
            yield Slot(index, begin + offset, MEASURED)
            index += 1

    @property
    def planned(self) -> int:
        """Measured slots."""
        if self.kind != POISSON:
            return round(self.rate * self.duration)
        return sum(1 for slot in self if slot.phase == MEASURED)

