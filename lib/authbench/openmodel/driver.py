"""Runs one level on gevent: a journey starts at each slot of the schedule, whatever the server does.

The schedule loop sleeps until a slot is due and spawns its start; the start takes a free user
(at most `max_users` journeys in flight), waiting up to `queue_for` when all are busy, else it is
dropped and counted. A user is an instance of the journey's Locust user class, made on first need
and reused, so SAML and LDAP journeys (and any later one) run unchanged. Each journey's sample
starts at its intended start and lasts until it ended: the response time a user would feel. The
service time, from the actual send, goes to a histogram of its own.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gevent
from gevent.lock import BoundedSemaphore
from gevent.pool import Group
from hdrh.histogram import HdrHistogram
from locust.env import Environment

from ..mix import slot_sequence, weights_of
from ..results.failures import short_detail
from ..results.sample import ERROR, MEASURED, OK, Sample
from ..results.summary import HISTOGRAM_HIGHEST_US, HISTOGRAM_LOWEST_US, HISTOGRAM_SIGNIFICANT_DIGITS
from ..user import UNEXPECTED_ERROR, JourneyFailed, JourneyOutcome, JourneyUser
from .rates import Arrivals, Level
from .schedule import Schedule

START_LEAD = 0.05  # seconds between planning a level and its first slot, so slot 0 is not late by the setup
DRAIN_TIMEOUT = 60.0  # seconds journeys still running after the last slot may take before they are cut off
UNFINISHED = "unfinished"  # the reason of a journey cut off at the end of its level
SUMMARY_PERCENTILES = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p999": 99.9}


def _histogram() -> HdrHistogram:
    return HdrHistogram(HISTOGRAM_LOWEST_US, HISTOGRAM_HIGHEST_US, HISTOGRAM_SIGNIFICANT_DIGITS)


@dataclass
class Latencies:
    """An HDR histogram of milliseconds (stored in µs), with the exact mean."""

    histogram: HdrHistogram = field(default_factory=_histogram)
    total_ms: float = 0.0

    def add(self, ms: float) -> None:
        self.total_ms += ms
        self.histogram.record_value(min(max(round(ms * 1000), 0), HISTOGRAM_HIGHEST_US))

    @property
    def count(self) -> int:
        return self.histogram.get_total_count()

    def percentile(self, percentile: float) -> float | None:
        if not self.count:
            return None
        return self.histogram.get_value_at_percentile(percentile) / 1000

    def to_dict(self) -> dict[str, float | None]:
        out: dict[str, float | None] = {"mean": self.total_ms / self.count if self.count else None}
        out.update({name: self.percentile(value) for name, value in SUMMARY_PERCENTILES.items()})
        out["max"] = self.histogram.get_max_value() / 1000 if self.count else None
        return out


@dataclass
class LevelOutcome:
    """What one level × repetition did, measured phase only (warm-up journeys are left out)."""

    level: Level
    arrivals: Arrivals
    planned: int = 0
    started: int = 0
    dropped: int = 0
    late: int = 0
    unfinished: int = 0
    not_reached: int = 0  # slots the time limit cut off before they were due
    ok: int = 0
    errors: int = 0
    first_sent: float | None = None
    last_sent: float | None = None
    measured_begin: float = 0.0  # epoch seconds
    peak_in_flight: int = 0
    finished: bool = False
    response: Latencies = field(default_factory=Latencies)  # from the intended start, successful journeys
    service: Latencies = field(default_factory=Latencies)  # from the actual send, successful journeys
    lag: Latencies = field(default_factory=Latencies)  # actual send - intended start, every started journey
    samples: list[Sample] = field(default_factory=list)

    @property
    def window(self) -> float:
        """Seconds the measured starts took: the level's duration, longer when they fell behind."""
        behind = (self.last_sent - self.measured_begin) if self.last_sent is not None else 0.0
        return max(self.level.duration, behind)

    @property
    def achieved_rate(self) -> float:
        return self.started / self.window if self.window > 0 else 0.0

    def live_rate(self, now: float) -> float:
        """Measured starts per second since the measured phase began (0 before it; the final rate after it)."""
        if self.finished:
            return self.achieved_rate
        elapsed = now - self.measured_begin
        return self.started / elapsed if elapsed > 0 and self.started else 0.0

    @property
    def scheduled_rate(self) -> float:
        """The schedule's own measured rate (Poisson arrivals vary around the target)."""
        return self.planned / self.level.duration

    def not_sustained_because(self, threshold: float) -> list[str]:
        reasons = []
        if self.achieved_rate < threshold * self.scheduled_rate:
            reasons.append(f"achieved {self.achieved_rate:.4g}/s < {threshold:.0%} of {self.scheduled_rate:.4g}/s")
        if self.dropped:
            reasons.append(f"{self.dropped} starts dropped")
        if self.not_reached:
            reasons.append(f"{self.not_reached} slots cut off by the time limit")
        return reasons


class LevelDriver:
    def __init__(self, environment: Environment, user_class: type[JourneyUser], level: Level, repetition: int,
                 arrivals: Arrivals, *, on_measured: Callable[[], None] | None = None,
                 on_sample: Callable[[Sample], None] | None = None,
                 on_failure: Callable[[Any], None] | None = None, clock: Callable[[], float] = time.time,
                 epoch: float | None = None, share: tuple[int, int] = (0, 1)) -> None:
        self.environment = environment
        self.user_class = user_class
        self.level = level
        self.repetition = repetition
        self.arrivals = arrivals
        self._on_measured = on_measured
        self._on_sample = on_sample
        self._on_failure = on_failure
        self._clock = clock
        self._epoch = epoch  # a distributed level: the master's epoch, the same on every worker
        self._share = share  # (k, n): this process starts the slots whose index is k modulo n
        self._slots = BoundedSemaphore(arrivals.max_users)  # in flight, over every journey of a --mix
        weights = weights_of(environment.user_classes)
        # a --mix: each slot's journey by smooth weighted round robin over its index (mix.slot_sequence)
        self._classes = list(environment.user_classes) if weights else [user_class]
        self._sequence = slot_sequence(weights) if weights else [0]
        self._idle: dict[int, list[JourneyUser]] = {position: [] for position in range(len(self._classes))}
        self._users: list[JourneyUser] = []
        self._in_flight = 0
        self.outcome = LevelOutcome(level, arrivals)

    def schedule(self) -> Schedule:
        return Schedule(self.level.rate, self.level.duration, self.level.warmup, self.arrivals.kind,
                        self.arrivals.seed)

    def run(self, time_limit: float) -> LevelOutcome:
        """Every slot of the level, then the journeys still running (bounded by DRAIN_TIMEOUT)."""
        plan = self.schedule()
        out = self.outcome
        mine, workers = self._share
        out.planned = plan.planned if workers == 1 else sum(
            1 for slot in plan if slot.phase == MEASURED and slot.index % workers == mine)
        epoch = self._clock() + START_LEAD if self._epoch is None else self._epoch
        out.measured_begin = epoch + plan.measured_begin
        deadline = epoch + time_limit
        group = Group()
        measuring = False
        try:
            slots = (slot for slot in plan if slot.index % workers == mine)
            for slot in slots:
                intended = epoch + slot.offset
                if intended > deadline:
                    out.not_reached = (slot.phase == MEASURED) + sum(1 for s in slots if s.phase == MEASURED)
                    break
                if slot.phase == MEASURED and not measuring:
                    measuring = True
                    self._sleep_until(intended)
                    if self._on_measured:
                        self._on_measured()
                self._sleep_until(intended)
                group.spawn(self._start, slot.index, intended, slot.phase)
            group.join(timeout=DRAIN_TIMEOUT)
        finally:
            out.finished = True
            group.kill(block=True, timeout=5)
            for user in self._users:
                with contextlib.suppress(Exception):  # a user that cannot close must not lose the results
                    user.on_stop()
        return out

    def _sleep_until(self, when: float) -> None:
        delay = when - self._clock()
        if delay > 0:
            gevent.sleep(delay)

    def _start(self, index: int, intended: float, phase: str) -> None:
        measured = phase == MEASURED
        out = self.outcome
        if not self._slots.acquire(timeout=max(0.0, intended + self.arrivals.queue_for - self._clock())):
            if measured:
                out.dropped += 1
            return
        position = self._sequence[index % len(self._sequence)]
        idle = self._idle[position]
        user = idle.pop() if idle else self._new_user(position)
        self._in_flight += 1
        sent = self._clock()
        finished = False
        try:
            if measured:
                out.started += 1
                out.first_sent = sent if out.first_sent is None else out.first_sent
                out.last_sent = sent if out.last_sent is None else max(out.last_sent, sent)
                out.peak_in_flight = max(out.peak_in_flight, self._in_flight)
                out.lag.add((sent - intended) * 1000)
                if sent - intended > self.arrivals.late_after:
                    out.late += 1
            outcome = self._journey(user)
            finished = True
            self._finish(user, index, intended, sent, phase, outcome)
        finally:
            if not finished and measured:  # cut off at the end of the level: a test, and a failed one
                self._finish(user, index, intended, sent, phase, JourneyOutcome(False, UNFINISHED))
                out.unfinished += 1
            self._in_flight -= 1
            idle.append(user)
            self._slots.release()

    def _new_user(self, position: int) -> JourneyUser:
        user = self._classes[position](self.environment)
        user.on_start()
        user.index = len(self._users)
        self._users.append(user)
        return user

    @staticmethod
    def _journey(user: JourneyUser) -> JourneyOutcome:
        try:
            return user.journey()
        except gevent.GreenletExit:
            raise
        except Exception as exc:  # a started journey is a test counted, whatever happens in it
            return JourneyOutcome(False, UNEXPECTED_ERROR, f"{type(exc).__name__}: {exc}")

    def _finish(self, user: JourneyUser, index: int, intended: float, sent: float, phase: str,
                outcome: JourneyOutcome) -> None:
        end = self._clock()
        response_ms, service_ms = (end - intended) * 1000, (end - sent) * 1000
        self.environment.events.request.fire(
            request_type=user.request_type, name=user.journey_name, response_time=response_ms, response_length=0,
            exception=None if outcome.ok else JourneyFailed(outcome.reason), context={}, url=None)
        sample = Sample(start=intended, duration_ms=response_ms, user=user.index, iteration=index,
                        outcome=OK if outcome.ok else ERROR, reason=outcome.reason, phase=phase,
                        pattern=self.level.label, repetition=self.repetition, account=outcome.account,
                        detail="" if outcome.ok else short_detail(outcome.step, outcome.detail),
                        journey=user.mix_journey)
        if phase == MEASURED:
            out = self.outcome
            out.samples.append(sample)
            if outcome.ok:
                out.ok += 1
                out.response.add(response_ms)
                out.service.add(service_ms)
            else:
                out.errors += 1
        if self._on_sample:
            self._on_sample(sample)
        if outcome.evidence is not None and self._on_failure:
            self._on_failure(outcome.evidence)
