"""The capacity search's logic over a measure function with a known threshold (its rates, its bracket)."""

from __future__ import annotations

import pytest

from authbench.errors import AuthbenchError
from authbench.openmodel.capacity import CONFIRM, GROW, REFINE, search
from authbench.openmodel.rates import Search


def threshold(limit: float, flaky_confirm: bool = False, confirm_limit: float | None = None):
    asked: list[tuple[float, str]] = []

    def measure(rate: float, stage: str) -> bool:
        asked.append((rate, stage))
        if stage == CONFIRM and confirm_limit is not None:
            return rate <= confirm_limit
        return rate <= limit and not (flaky_confirm and stage == CONFIRM)

    return measure, asked


@pytest.mark.parametrize("limit", [13.0, 57.0, 150.0, 640.0])
def test_converges_within_precision_below_the_threshold(limit):
    measure, asked = threshold(limit)
    result = search(measure, Search(start=10.0, growth=2.0, precision=0.03, max_rate=1000.0))
    assert result.confirmed and result.answer == result.last_pass
    assert result.last_pass <= limit < result.first_fail
    assert (result.first_fail - result.last_pass) / result.last_pass <= 0.03
    assert result.precision_reached
    stages = [stage for _, stage in asked]
    assert stages[0] == GROW and stages[-1] == CONFIRM and set(stages) <= {GROW, REFINE, CONFIRM}
    grown = [rate for rate, stage in asked if stage == GROW]
    assert grown == [min(10.0 * 2 ** k, 1000.0) for k in range(len(grown))]  # geometric, capped at max_rate
    assert [step.rate for step in result.steps] == [rate for rate, _ in asked]  # every step kept


def test_ceiling_start_failure_and_failed_confirmation():
    measure, _ = threshold(5000.0)
    ceiling = search(measure, Search(start=10.0, max_rate=100.0))
    assert ceiling.ceiling_reached and ceiling.answer == 100.0 and ceiling.first_fail is None
    measure, asked = threshold(5.0)
    none = search(measure, Search(start=10.0))
    assert none.answer is None and none.last_pass is None and len(asked) == 1
    measure, _ = threshold(57.0, flaky_confirm=True)
    unconfirmed = search(measure, Search(start=10.0))
    assert unconfirmed.answer is None and unconfirmed.last_pass is not None and not unconfirmed.confirmed
    measure, asked = threshold(57.0, confirm_limit=50.0)  # the best rate fails its confirmation, a lower one holds
    fallback = search(measure, Search(start=10.0, precision=0.03))
    confirms = [rate for rate, stage in asked if stage == CONFIRM]
    assert fallback.confirmed and fallback.answer == confirms[-1] <= 50.0 < confirms[0]
    assert fallback.first_fail == confirms[-2] and len(confirms) <= 3 and not fallback.precision_reached


def test_step_limit_is_a_bound():
    measure, asked = threshold(57.0)
    result = search(measure, Search(start=10.0, precision=0.0001, max_steps=6))
    assert len(asked) <= 7 and result.steps_exhausted and asked[-1][1] == CONFIRM


@pytest.mark.parametrize("measured_before", [1, 3, 6])
def test_an_interrupted_search_continues_from_its_steps(measured_before):
    knobs = Search(start=10.0, precision=0.03)
    whole = search(threshold(57.0)[0], knobs)
    measure, asked = threshold(57.0)
    continued = search(measure, knobs, done=whole.steps[:measured_before])
    assert continued.steps == whole.steps and continued.answer == whole.answer  # the same search …
    assert asked == [(s.rate, s.stage) for s in whole.steps[measured_before:]]  # … measuring only what it lacked


def test_a_replay_that_does_not_fit_the_plan_is_refused():
    whole = search(threshold(57.0)[0], Search(start=10.0))
    with pytest.raises(AuthbenchError, match="step 1 .10/s grow. is not the one this plan asks for .20/s grow"):
        search(threshold(57.0)[0], Search(start=20.0), done=whole.steps)


def test_a_step_that_cannot_be_judged_ends_the_search_unconfirmed():
    asked, seen = [], []

    def measure(rate: float, stage: str) -> bool | None:
        asked.append(rate)
        return None if len(asked) == 3 else True  # the third step ran on a cluster that was not whole

    result = search(measure, Search(start=10.0), on_step=lambda partial: seen.append(len(partial.steps)))
    assert result.stopped and not result.confirmed and result.answer is None
    assert asked == [10.0, 20.0, 40.0] and seen == [1, 2, 3] and not result.steps[-1].passed


@pytest.mark.parametrize("knobs", [Search(start=10.0, precision=0.03), Search(start=2.0, max_rate=4.0),
                                   Search(start=1.0, growth=1.5, precision=0.5, max_rate=2000.0),
                                   Search(start=5.0, growth=3.0, precision=0.0001, max_rate=1e5, max_steps=6),
                                   Search(start=50.0, max_rate=10.0), Search(start=1.0, growth=2.0, precision=0.25)])
def test_step_bound_holds_whatever_the_steps_judge(knobs):
    """The web UI says "step N of at most step_bound": no run of outcomes may take more steps."""
    import math
    import random

    from authbench.openmodel.capacity import step_bound

    chance = random.Random(26)
    bound = step_bound(knobs)
    longest, top = 0, math.log(knobs.max_rate / knobs.start, knobs.growth) + 1
    for trial in range(600):
        limit = knobs.start * knobs.growth ** chance.uniform(-1, top)
        flaky = trial % 3 == 0
        result = search(lambda rate, stage, limit=limit, flaky=flaky:
                        rate <= limit and not (flaky and stage == CONFIRM and chance.random() < .6), knobs)
        longest = max(longest, len(result.steps))
    assert longest <= bound <= longest + 3  # a bound, and not a loose one
