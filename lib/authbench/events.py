"""authbench's own events, beside Locust's: what a run is doing, for results, the web UI and /metrics.

Like Locust's `environment.events`, listeners are added with `add_listener` and never subclassed in.
One `RunEvents` lives on the run's `RunContext` (`environment.authbench.events`); in a distributed run
the master fires them for every worker's journeys, so a listener sees the whole run wherever it runs.
"""

from __future__ import annotations

from locust.event import EventHook


class RunEvents:
    sample: EventHook
    """(sample: Sample) a journey finished, warm-up or measured (results.sample.Sample)."""

    cell_start: EventHook
    """(pattern: Pattern, repetition: int, warmup_s: float) a pattern × repetition begins its warm-up."""

    measuring: EventHook
    """(pattern: Pattern, repetition: int) the warm-up is over: from now on journeys are measured."""

    cell_stop: EventHook
    """(cell: runner.CellResult) a pattern × repetition ended, complete or cut short."""

    failure: EventHook
    """(evidence: results.failures.Evidence) one of the first failing journeys of its reason, to keep."""

    fault: EventHook
    """(record: dict) a fault of the run's fault plan was acted on (faults.execute: fault, time, ok, status)."""

    verdicts: EventHook
    """(verdicts: dict) summary.json was written with these verdicts (results.verdicts): as each cell ends."""

    def __init__(self) -> None:
        for name in ("sample", "cell_start", "measuring", "cell_stop", "failure", "fault", "verdicts"):
            setattr(self, name, EventHook())
