"""Intended starts: exact counts at constant spacing, Poisson arrivals reproducible from their seed."""

from __future__ import annotations

import pytest

from authbench.openmodel.rates import POISSON
from authbench.openmodel.schedule import Schedule
from authbench.results.sample import MEASURED, WARMUP


@pytest.mark.parametrize(("rate", "duration"), [(100.0, 10.0), (7.0, 3.0), (1 / 60, 600.0), (33.3, 1.0)])
def test_constant_spacing_hits_the_count(rate, duration):
    schedule = Schedule(rate, duration, warmup=2.0)
    measured = [slot.offset for slot in schedule if slot.phase == MEASURED]
    assert abs(len(measured) - rate * duration) <= 1 and schedule.planned == len(measured)
    gaps = {round(b - a, 9) for a, b in zip(measured, measured[1:], strict=False)}
    assert gaps <= {round(1 / rate, 9)}  # evenly spaced, continuing the warm-up's spacing
    warm = [slot for slot in schedule if slot.phase == WARMUP]
    assert len(warm) == round(rate * 2.0) and all(slot.offset < schedule.measured_begin for slot in warm)
    assert [slot.index for slot in schedule] == list(range(len(warm) + len(measured)))


def test_poisson_is_reproducible_from_its_seed():
    first = Schedule(50.0, 20.0, 1.0, POISSON, seed=7)
    again = Schedule(50.0, 20.0, 1.0, POISSON, seed=7)
    other = Schedule(50.0, 20.0, 1.0, POISSON, seed=8)
    assert list(first) == list(again) and list(first) != list(other)
    measured = [slot.offset - first.measured_begin for slot in first if slot.phase == MEASURED]
    assert first.planned == len(measured)
    assert min(measured) >= 0 and max(measured) < 20.0
    assert 800 <= len(measured) <= 1200  # 1000 expected; 6 standard deviations either side
    gaps = sorted(b - a for a, b in zip(measured, measured[1:], strict=False))
    assert gaps[len(gaps) // 2] == pytest.approx(0.693 / 50, rel=0.25)  # exponential gaps: median ln 2 / rate
