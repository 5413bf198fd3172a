"""The maximum-capacity search: geometric steps up, binary refinement, one confirmation.

Pure logic over a `measure(rate, stage) -> passed` function, so the search is the same whatever a
step runs (the runner measures a level at that rate and checks the SLO). The answer is the highest
rate that passed and was confirmed (when a confirmation fails, the next lower passing rate is
confirmed instead, at most CONFIRM_FALLBACKS times); every step is kept, in order.

The search is a function of its steps' outcomes, so an interrupted one continues by replaying the steps
it measured (`done`) and measuring from the first one it lacks. A step that cannot be judged (`measure`
returns None: the cluster under test was not whole) ends the search unconfirmed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import AuthbenchError
from .rates import Search

GROW = "grow"
REFINE = "refine"
CONFIRM = "confirm"
CONFIRM_FALLBACKS = 2  # lower passing rates tried when a confirmation fails


@dataclass
class Step:
    rate: float
    stage: str  # GROW, REFINE or CONFIRM
    passed: bool


@dataclass
class CapacityResult:
    steps: list[Step] = field(default_factory=list)
    last_pass: float | None = None
    first_fail: float | None = None
    confirmed: bool = False
    ceiling_reached: bool = False  # every step up to Search.max_rate passed: the capacity is above it
    steps_exhausted: bool = False
    precision_reached: bool = False  # the knee is bracketed within Search.precision
    stopped: bool = False  # a step could not be judged (measure gave None): the search ended there

    @property
    def answer(self) -> float | None:
        """The highest sustained rate meeting the SLO, once confirmed."""
        return self.last_pass if self.confirmed else None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "answer": self.answer}

    def bracket(self) -> float | None:
        """(first failing - last passing) / last passing: how precisely the knee is known."""
        if self.first_fail is None or not self.last_pass:
            return None
        return (self.first_fail - self.last_pass) / self.last_pass


class _Stop(Exception):
    """A step that cannot be judged: the search ends, unconfirmed."""


def search(measure: Callable[[float, str], bool | None], knobs: Search, done: Sequence[Step] = (),
           on_step: Callable[[CapacityResult], None] | None = None) -> CapacityResult:
    """The search; `done` are the steps an interrupted search measured (replayed, not measured again), `on_step`
    sees the result after every step measured now."""
    result = CapacityResult()

    def step(rate: float, stage: str) -> bool:
        index = len(result.steps)
        if index < len(done):
            before = done[index]
            if before.stage != stage or not math.isclose(before.rate, rate, rel_tol=1e-9):
                raise AuthbenchError(f"--resume: the stored search's step {index + 1} ({before.rate:g}/s "
                                     f"{before.stage}) is not the one this plan asks for ({rate:g}/s {stage})")
            result.steps.append(before)
            return before.passed
        passed = measure(rate, stage)
        result.steps.append(Step(rate, stage, bool(passed)))
        result.stopped = passed is None
        if on_step is not None:
            on_step(result)
        if passed is None:
            raise _Stop
        return passed

    try:
        return _search(step, knobs, result)
    except _Stop:
        result.confirmed = False
        return result


def _search(step: Callable[[float, str], bool], knobs: Search, result: CapacityResult) -> CapacityResult:
    rate = min(knobs.start, knobs.max_rate)
    while len(result.steps) < knobs.max_steps:
        if not step(rate, GROW):
            result.first_fail = rate
            break
        result.last_pass = rate
        if rate >= knobs.max_rate:
            result.ceiling_reached = True
            break
        rate = min(rate * knobs.growth, knobs.max_rate)
    if result.first_fail is None and not result.ceiling_reached:
        result.steps_exhausted = True
    if result.last_pass is None:
        return result  # even the start rate fails the SLO
    while (result.first_fail is not None and len(result.steps) < knobs.max_steps - 1
           and (result.first_fail - result.last_pass) / result.last_pass > knobs.precision):
        middle = (result.last_pass + result.first_fail) / 2
        if step(middle, REFINE):
            result.last_pass = middle
        else:
            result.first_fail = middle
    if (result.bracket() or 0.0) > knobs.precision:
        result.steps_exhausted = True
    result.confirmed = step(result.last_pass, CONFIRM)
    for _ in range(CONFIRM_FALLBACKS):  # a failed confirmation: the next lower passing rate must confirm instead
        lower = [s.rate for s in result.steps if s.passed and s.stage != CONFIRM and s.rate < result.last_pass]
        if result.confirmed or not lower:
            break
        result.first_fail, result.last_pass = result.last_pass, max(lower)
        result.confirmed = step(result.last_pass, CONFIRM)
    result.precision_reached = result.first_fail is not None and (result.bracket() or 0.0) <= knobs.precision
    return result


def step_bound(knobs: Search) -> int:
    """The most steps a search with these knobs can take: its growth steps up to `max_rate`, the halvings that
    bring a growth bracket within `precision`, a confirmation and its fallbacks (bounded by `max_steps`
    as the search is). Progress is "step N of at most this", never more."""
    grown, rate = 1, min(knobs.start, knobs.max_rate)
    while rate < knobs.max_rate and grown < knobs.max_steps:
        rate, grown = min(rate * knobs.growth, knobs.max_rate), grown + 1
    refined, bracket = 0, knobs.growth - 1  # a failed growth step leaves at most this bracket, halved by each refine
    while bracket >= knobs.precision * (1 - 1e-9) and refined < knobs.max_steps:  # an exact tie: one more
        bracket, refined = bracket / 2, refined + 1
    refined = min(refined, max(0, knobs.max_steps - 1 - grown)) if grown > 1 else 0  # one step: pass or fail
    return grown + refined + 1 + CONFIRM_FALLBACKS


def estimate_s(knobs: Search) -> float:
    """The longest a search can take: every step it may measure, each its warm-up and hold (cool-downs aside)."""
    return step_bound(knobs) * (knobs.warmup + knobs.hold)
