"""One finished journey: the unit every statistic and report is computed from.

One place defines it and one place (the recorder) writes it, so a report can always be rebuilt from
`results/<run-id>/samples.csv`.
"""

from __future__ import annotations

from dataclasses import dataclass

WARMUP = "warmup"
MEASURED = "measured"
OK = "ok"
ERROR = "error"


@dataclass(frozen=True)
class Sample:
    start: float  # epoch seconds when the journey began
    duration_ms: float  # wall time of the whole journey
    user: int  # index of the Locust user (0-based) within its pattern
    iteration: int  # the user's n-th journey within the phase (0-based)
    outcome: str  # OK or ERROR
    reason: str  # failure category ("" when OK): see authbench.journeys.saml reasons
    phase: str  # WARMUP or MEASURED
    pattern: str  # "10x200"; "" for plain Locust runs
    repetition: int  # 1-based repetition of the pattern; 0 for plain Locust runs
    account: str = ""  # the user name logged in with (never a password)
    detail: str = ""  # a failure's step and page (results.failures.short_detail), never a secret
    worker: str = ""  # distributed: the worker that ran it (Locust's client id); "" when local
    session: str = ""  # --reuse-session: fresh, reused, lost or sp-session (journeys.returning); else ""
    journey: str = ""  # --mix: the journey's name in the mix; "" for a run of one journey

    @property
    def end(self) -> float:
        return self.start + self.duration_ms / 1000
