"""Exact patterns on Locust: counts, warm-up exclusion and repetitions, with a journey that needs no server."""

from __future__ import annotations

import gevent

from authbench.patterns import parse_plan
from authbench.results.sample import MEASURED, WARMUP
from authbench.runner import run_plan_locally
from authbench.user import JourneyOutcome, JourneyUser

FAIL_EVERY = 7


class CountingUser(JourneyUser):
    """A journey that takes ~1 ms and fails every 7th time, so counts are checked with failures in."""

    journey_name = "counting journey"
    calls = 0

    def journey(self) -> JourneyOutcome:
        CountingUser.calls += 1
        gevent.sleep(0.001)
        if CountingUser.calls % FAIL_EVERY == 0:
            return JourneyOutcome(ok=False, reason="injected", account="x")
        return JourneyOutcome(ok=True, account="x")


def _collect(context, samples: list, cells: list) -> None:
    context.events.sample.add_listener(lambda sample: samples.append(sample))
    context.events.cell_stop.add_listener(lambda cell: cells.append(cell))


def _run(patterns: str, warmup: str = "0", repeat: int = 1):
    samples, cells = [], []
    results = run_plan_locally(parse_plan(patterns, warmup, repeat), CountingUser, settings=None,
                               cell_time_limit=60, listen=lambda c: _collect(c, samples, cells))
    return results, samples, cells


def test_pattern_gives_exactly_users_times_runs_tests_with_failures_injected():
    results, samples, _ = _run("2x1000")
    (cell,) = results
    assert cell.complete and len(cell.samples) == 2000
    assert sum(s.outcome == "error" for s in cell.samples) > 0  # failures count as tests too
    per_user = {u: sorted(s.iteration for s in cell.samples if s.user == u) for u in (0, 1)}
    assert per_user == {0: list(range(1000)), 1: list(range(1000))}
    assert cell.steps["counting journey"]["requests"] == 2000


def test_pattern_list_runs_one_after_another_and_repeats():
    results, _, cells = _run("3x5,4x2", repeat=2)
    assert [(r.pattern.label, r.repetition, len(r.samples)) for r in results] == [
        ("3x5", 1, 15), ("3x5", 2, 15), ("4x2", 1, 8), ("4x2", 2, 8)]
    assert cells == results  # reported as each cell ends


def test_warmup_samples_are_marked_and_excluded_by_time():
    results, samples, _ = _run("3x20", warmup="0.3s")
    warm = [s for s in samples if s.phase == WARMUP]
    measured = [s for s in samples if s.phase == MEASURED]
    assert warm and len(measured) == 60 and results[0].samples == measured
    warmup_end = min(s.start for s in measured)
    assert all(s.start < warmup_end for s in warm)
    assert max(s.start for s in warm) - min(s.start for s in warm) < 0.5


class CrashingUser(JourneyUser):
    """A journey that raises every third time: the ticket still becomes a counted, failed test."""

    calls = 0

    def journey(self) -> JourneyOutcome:
        CrashingUser.calls += 1
        if CrashingUser.calls % 3 == 0:
            raise RuntimeError("boom")
        return JourneyOutcome(ok=True)


def test_a_journey_that_raises_is_still_one_test():
    samples: list = []
    (cell,) = run_plan_locally(parse_plan("2x15"), CrashingUser, settings=None, cell_time_limit=30,
                               listen=lambda c: _collect(c, samples, []))
    assert len(cell.samples) == 30
    assert {s.reason for s in cell.samples if s.outcome == "error"} == {"unexpected error"}
