"""The phase controller: keeps a pattern exact while Locust's users run free.

Every user asks for a ticket before each journey. During warm-up tickets are handed out until the
warm-up time is over; then the measured phase begins for everyone at once, and each user gets exactly
`runs` measured tickets, after which it is told to stop. A journey's phase is fixed by its ticket, so
no measured journey starts before the warm-up ended, and failures count as tests like successes.

Distributed, each worker has a controller of its own for the users the master gave it: `indexes` are
those users' global indexes and `warmup_end` the epoch time the master chose, so every worker switches
to the measured phase at the same moment and each user still does exactly `runs` measured journeys.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gevent.event import Event

from .mix import owner_of
from .patterns import Pattern
from .results.sample import MEASURED, WARMUP, Sample


@dataclass(frozen=True)
class Ticket:
    phase: str
    iteration: int  # 0-based within the phase, per user


class PhaseController:
    def __init__(self, pattern: Pattern, repetition: int, warmup: float,
                 on_measured: Callable[[], None] | None = None, clock: Callable[[], float] = time.time, *,
                 indexes: Sequence[int] | None = None, warmup_end: float | None = None,
                 on_finished: Callable[[int], None] | None = None, split: Sequence[int] | None = None) -> None:
        self.pattern = pattern
        self.repetition = repetition
        self._clock = clock
        self._on_measured = on_measured
        self._on_finished = on_finished
        self.indexes = list(range(pattern.users) if indexes is None else indexes)  # the users this process runs
        # --mix: users per journey over the whole pattern (mix.split_users); a user joins among its journey's
        self._owner = owner_of(split) if split else None
        self._free: dict[int, list[int]] = {}
        for index in reversed(self.indexes):
            self._free.setdefault(self._owner[index] if self._owner else -1, []).append(index)
        self.warmup_end = clock() + warmup if warmup_end is None else warmup_end
        self.phase = WARMUP if self.warmup_end > clock() else MEASURED
        if self.phase == MEASURED:
            self._begin_measured()
        self._counts: dict[int, dict[str, int]] = {}
        self.finished: set[int] = set()
        self.done = Event()
        self.samples: list[Sample] = []  # measured and warm-up, in completion order

    def _begin_measured(self) -> None:
        self.phase = MEASURED
        if self._on_measured:
            self._on_measured()

    def join(self, position: int = -1) -> int:
        """A new user: its index within the pattern, or -1 when this process already has all its users (of the
        journey at `position` of a --mix: its users' indexes are that journey's)."""
        free = self._free.get(position if self._owner else -1)
        if not free:
            return -1
        index = free.pop()
        self._counts[index] = {WARMUP: 0, MEASURED: 0}
        return index

    def ticket(self, user: int) -> Ticket | None:
        """The user's next journey, or None: it has done its share and must stop."""
        if user < 0:
            return None
        if self.phase == WARMUP and self._clock() >= self.warmup_end:
            self._begin_measured()
        counts = self._counts[user]
        if self.phase == MEASURED and counts[MEASURED] >= self.pattern.runs:
            if user not in self.finished:
                self.finished.add(user)
                if self._on_finished:
                    self._on_finished(user)
                if len(self.finished) == len(self.indexes):
                    self.done.set()
            return None
        ticket = Ticket(self.phase, counts[self.phase])
        counts[self.phase] += 1
        return ticket

    def has_ticket(self, user: int) -> bool:
        """Whether the user's next `ticket` gives it a journey: False once it has done its share, so it stops at
        once instead of waiting out a pace after its last journey."""
        counts = self._counts.get(user)
        if counts is None:
            return False
        if self.phase == WARMUP:
            return True  # measured tickets follow the warm-up
        return counts[MEASURED] < self.pattern.runs

    def record(self, sample: Sample) -> None:
        self.samples.append(sample)

    def measured_samples(self) -> list[Sample]:
        return [sample for sample in self.samples if sample.phase == MEASURED]
