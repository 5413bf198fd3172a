"""The base of every authbench Locust user: one journey per iteration, timed, recorded, counted.

Subclasses implement `journey()`; this class asks the phase controller for a ticket, times the
journey, reports it to Locust as one more statistics entry (the Grinder "test") and hands the sample
to the recorder. Without authbench's runner (plain `locust -f …`) there is no controller: every
iteration counts as measured and the user runs until Locust stops it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from locust import User, task
from locust.exception import StopUser

from .events import RunEvents
from .phases import PhaseController
from .results.failures import Evidence, FailureBudget, short_detail
from .results.sample import ERROR, MEASURED, OK, WARMUP, Sample


@dataclass
class JourneyOutcome:
    ok: bool
    reason: str = ""
    detail: str = ""  # the page or answer that ended a failed journey
    account: str = ""
    step: str = ""  # the step a failed journey stopped at
    evidence: Evidence | None = None  # built only when the run's FailureBudget wants an example
    session: str = ""  # returning users: journeys.returning's class (fresh, reused, lost, …)


UNEXPECTED_ERROR = "unexpected error"  # the journey itself raised: a bug or an unforeseen answer


class JourneyFailed(Exception):
    """What Locust's failures table shows for a failed journey: its reason category."""


@dataclass
class RunContext:
    """What the runner (or the locustfile's options) attaches to the Locust environment as `authbench`."""

    settings: Any  # journey-specific settings, read by the user class
    controller: PhaseController | None = None  # the current pattern × repetition; None under plain Locust
    events: RunEvents = field(default_factory=RunEvents)
    coordinator: Any = None  # distributed.master.Coordinator on a master
    failures: FailureBudget = field(default_factory=FailureBudget)  # examples still wanted, per reason
    metrics: Any = None  # metrics.Metrics once /metrics is installed
    level: Any = None  # openmodel.driver.LevelOutcome of the arrival-rate level running (or last run)
    writes: Any = None  # results.writes.WriteGuard of the run in progress: its writers report refused writes
    cluster_marks: Any = None  # () → what the cluster under test lost during the cell (prepared's lab watcher)


class OwnSettings:
    """A mix journey's view of the run's RunContext: everything the run's, the settings its own."""

    def __init__(self, context: RunContext, settings: Any) -> None:
        self._context = context
        self.settings = settings

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


class JourneyUser(User):
    abstract = True
    journey_name = "journey"  # the statistics entry of the whole journey
    request_type = "JOURNEY"
    # --mix (kinds.mixed): the journey's name, weight and place in the mix, and its own settings
    mix_journey = ""
    mix_weight = 0
    mix_position = -1
    mix_settings: Any = None

    def on_start(self) -> None:
        context = self.environment.authbench
        # not `context`: Locust's User has that
        self.run_context: RunContext = context if self.mix_settings is None else OwnSettings(context, self.mix_settings)
        controller = self.run_context.controller
        self.index = controller.join(self.mix_position) if controller else id(self) % 1_000_000
        self.free_iteration = 0
        self.journey_phase = MEASURED
        self.began = time.monotonic()

    def wait_time(self) -> float:
        """Back to back, as Grinder threads; with --pace (a `pace` in the journey's settings) the next journey
        starts `pace` seconds after this one started (at once when it took longer), so a fault run measures
        time, not journeys."""
        pace = getattr(self.run_context.settings, "pace", 0.0)
        if not pace:
            return 0.0
        controller = self.run_context.controller
        if controller is not None and not controller.has_ticket(self.index):
            return 0.0  # its last journey is done: it stops now, and its cell ends with its journeys
        return max(0.0, pace - (time.monotonic() - self.began))

    @property
    def settings(self) -> Any:
        """The run's journey settings: for a journey of your own a `journeys.settings.WebSettings` (the target,
        the accounts, TLS, the login options)."""
        return self.run_context.settings

    def report_request(self, name: str, method: str, url: str, status: int, elapsed_ms: float, length: int,
                       exception: BaseException | None) -> None:
        """One request as a step in Locust's statistics (FastBrowser's `on_request`); left out for a warm-up
        journey that runs on after the measured phase began."""
        if self.in_step_stats:
            self.environment.events.request.fire(request_type=method, name=name, response_time=elapsed_ms,
                                                 response_length=length, exception=exception, context={}, url=url)

    @property
    def in_step_stats(self) -> bool:
        """False for a warm-up journey still running after the measured phase began: Locust's statistics were
        reset then, and its requests would count there as measured ones."""
        controller = self.run_context.controller
        return not (self.journey_phase == WARMUP and controller is not None and controller.phase == MEASURED)

    def journey(self) -> JourneyOutcome:  # pragma: no cover - subclasses implement it
        raise NotImplementedError

    @task
    def iterate(self) -> None:
        controller = self.run_context.controller
        if controller is not None:
            ticket = controller.ticket(self.index)
            if ticket is None:
                raise StopUser()
            phase, iteration = ticket.phase, ticket.iteration
        else:
            phase, iteration = MEASURED, self.free_iteration
            self.free_iteration += 1
        self.journey_phase = phase
        self.began = time.monotonic()
        start = time.time()
        timer = time.perf_counter()
        try:
            outcome = self.journey()
        except Exception as exc:  # a ticket taken is a test counted, whatever happens in the journey
            outcome = JourneyOutcome(False, UNEXPECTED_ERROR, f"{type(exc).__name__}: {exc}")
        elapsed_ms = (time.perf_counter() - timer) * 1000
        if self.in_step_stats:
            self.environment.events.request.fire(
                request_type=self.request_type, name=self.journey_name, response_time=elapsed_ms, response_length=0,
                exception=None if outcome.ok else JourneyFailed(outcome.reason), context={}, url=None,
            )
        sample = Sample(
            start=start, duration_ms=elapsed_ms, user=self.index, iteration=iteration,
            outcome=OK if outcome.ok else ERROR, reason=outcome.reason, phase=phase,
            pattern=controller.pattern.label if controller else "",
            repetition=controller.repetition if controller else 0, account=outcome.account,
            detail="" if outcome.ok else short_detail(outcome.step, outcome.detail), session=outcome.session,
            journey=self.mix_journey,
        )
        if controller is not None:
            controller.record(sample)
        events = self.run_context.events
        events.sample.fire(sample=sample)
        if outcome.evidence is not None:
            events.failure.fire(evidence=outcome.evidence)
