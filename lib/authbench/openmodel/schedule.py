"""Intended starts: when each journey of a level should begin, fixed before the first one runs.

Constant spacing puts slot k at k / rate; Poisson arrivals draw exponential gaps from a seeded
random generator, so the same seed gives the same schedule. Warm-up slots come first, then exactly
round(rate × duration) measured slots at constant spacing.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..results.sample import MEASURED, WARMUP
from .rates import CONSTANT, POISSON


@dataclass(frozen=True)
class Slot:
    index: int  # 0-based over the whole level, warm-up included
    offset: float  # seconds after the level's epoch
    phase: str  # WARMUP or MEASURED


def constant_offsets(rate: float, duration: float) -> list[float]:
    return [k / rate for k in range(round(rate * duration))]


def poisson_offsets(rate: float, duration: float, rng: random.Random) -> list[float]:
    offsets, at = [], rng.expovariate(rate)
    while at < duration:
        offsets.append(at)
        at += rng.expovariate(rate)
    return offsets


@dataclass(frozen=True)
class Schedule:
    slots: list[Slot]
    measured_begin: float  # offset where the measured phase begins (the warm-up's end)

    @property
    def planned(self) -> int:
        """Measured slots."""
        return sum(1 for slot in self.slots if slot.phase == MEASURED)


def make_schedule(rate: float, duration: float, warmup: float, kind: str = CONSTANT,
                  seed: int | None = None) -> Schedule:
    """Every slot of one level: warm-up ones (phase WARMUP) then measured ones, in time order."""
    if kind == POISSON:
        rng = random.Random(seed)
        warm, measured = poisson_offsets(rate, warmup, rng), poisson_offsets(rate, duration, rng)
        begin = warmup
    else:
        warm, measured = constant_offsets(rate, warmup), constant_offsets(rate, duration)
        begin = len(warm) / rate  # the measured slots go on at the same spacing
    timeline = [(offset, WARMUP) for offset in warm] + [(begin + offset, MEASURED) for offset in measured]
    return Schedule([Slot(index, offset, phase) for index, (offset, phase) in enumerate(timeline)], begin)
