"""Prometheus metrics of a run, fed by authbench's events and Locust's statistics, served at /metrics.

One registry per environment (not prometheus_client's global one), so several runs in one process
never mix. On a master the events carry every worker's journeys, and the step timings come from the
workers' statistics reports (Locust's response-time counts, bucketed here), so the master alone
serves the whole run. Labels hold outcome, reason, phase and step names only — never an account.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from locust.env import Environment
from prometheus_client import CollectorRegistry, Counter, Enum, Gauge, Histogram, Info
from prometheus_client.core import HistogramMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest, start_http_server

from .errors import AuthbenchError
from .openmodel import metrics as open_metrics
from .results.sample import MEASURED, WARMUP, Sample

# Authentication latencies: a fast IdP answers a step in a few ms, a saturated one a journey in seconds.
BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
IDLE = "idle"
DEFAULT_METRICS_HOST = "127.0.0.1"
METRICS_PATH = "/metrics"


class MetricsError(AuthbenchError, ValueError):
    """/metrics cannot be served (port taken, address not local); the message says which and what to do."""


class StepHistograms:
    """Step durations per step name as a Prometheus histogram, from (milliseconds, count) pairs.

    A custom collector because the master only gets counts per rounded millisecond from the workers:
    adding a count to a bucket costs one search, not one `observe` per journey.
    """

    def __init__(self, name: str, documentation: str) -> None:
        self.name = name
        self.documentation = documentation
        self._steps: dict[str, list[float]] = {}  # step → bucket counts (+Inf last), then the sum
        self._lock = threading.Lock()

    def add(self, step: str, milliseconds: float, count: int = 1) -> None:
        seconds = milliseconds / 1000
        with self._lock:
            row = self._steps.setdefault(step, [0.0] * (len(BUCKETS_S) + 2))
            bucket = next((i for i, bound in enumerate(BUCKETS_S) if seconds <= bound), len(BUCKETS_S))
            row[bucket] += count
            row[-1] += seconds * count

    def collect(self) -> Iterator[HistogramMetricFamily]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=["step"])
        with self._lock:
            for step, row in sorted(self._steps.items()):
                cumulative, buckets = 0.0, []
                for bound, count in zip((*BUCKETS_S, float("inf")), row[:-1], strict=True):
                    cumulative += count
                    buckets.append(("+Inf" if bound == float("inf") else repr(bound), cumulative))
                family.add_metric([step], buckets, row[-1])
        yield family


class Metrics:
    """The run's registry and the listeners that keep it current."""

    def __init__(self, environment: Environment) -> None:
        self.environment = environment
        self.registry = CollectorRegistry()
        r = self.registry
        self.journeys = Counter("authbench_journeys", "Finished journeys", ["outcome", "reason", "phase"], registry=r)
        self.journey_seconds = Histogram("authbench_journey_duration_seconds", "Journey wall time", ["phase"],
                                         buckets=BUCKETS_S, registry=r)
        self.steps = StepHistograms("authbench_step_duration_seconds", "Step (request) wall time")
        r.register(self.steps)
        self.phase = Enum("authbench_phase", "What the run is doing", states=[IDLE, WARMUP, MEASURED], registry=r)
        self.cell = Info("authbench_cell", "The pattern and repetition running (or last run)", registry=r)
        self.planned = Gauge("authbench_cell_journeys_planned", "Measured journeys the cell must do", registry=r)
        self.done = Gauge("authbench_cell_journeys_done", "Measured journeys done in the cell", registry=r)
        self.degraded = Counter("authbench_cells_degraded", "Cells that lost a worker", registry=r)
        users = Gauge("authbench_users", "Users running now", registry=r)
        users.set_function(lambda: float(getattr(environment.runner, "user_count", 0) or 0))
        workers = Gauge("authbench_workers", "Workers connected (1 for a local run)", registry=r)
        workers.set_function(lambda: float(getattr(environment.runner, "worker_count", 0) or 0))
        open_metrics.register(r, environment.authbench)  # target/achieved rate, late/dropped of a level
        self._journey_names = {getattr(cls, "journey_name", "") for cls in environment.user_classes}
        events = environment.authbench.events
        events.sample.add_listener(self._sample)
        events.cell_start.add_listener(self._cell_start)
        events.measuring.add_listener(lambda **_: self.phase.state(MEASURED))
        events.cell_stop.add_listener(self._cell_stop)
        environment.events.request.add_listener(self._request)
        environment.events.worker_report.add_listener(self._worker_report)

    def _sample(self, sample: Sample) -> None:
        self.journeys.labels(sample.outcome, sample.reason, sample.phase).inc()
        self.journey_seconds.labels(sample.phase).observe(sample.duration_ms / 1000)
        if sample.phase == MEASURED:
            self.done.inc()

    def _cell_start(self, pattern: Any, repetition: int, warmup_s: float) -> None:
        self.cell.info({"pattern": pattern.label, "repetition": str(repetition)})
        self.planned.set(pattern.tests)
        self.done.set(0)
        self.phase.state(WARMUP if warmup_s > 0 else MEASURED)

    def _cell_stop(self, cell: Any) -> None:
        self.phase.state(IDLE)
        if getattr(cell, "degraded", None):
            self.degraded.inc()

    def _request(self, name: str, response_time: float, **_: Any) -> None:
        """Local runs: every step as it ends (workers report theirs through `_worker_report`)."""
        controller = self.environment.authbench.controller
        if name not in self._journey_names and (controller is None or controller.phase == MEASURED):
            self.steps.add(name, response_time)

    def _worker_report(self, client_id: str, data: dict[str, Any]) -> None:
        for entry in data.get("stats", ()):
            if entry["name"] in self._journey_names:
                continue
            for milliseconds, count in entry["response_times"].items():
                self.steps.add(entry["name"], float(milliseconds), int(count))

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


def install(environment: Environment) -> Metrics:
    """The environment's metrics, created and subscribed on first call (idempotent)."""
    context = environment.authbench
    if context.metrics is None:
        context.metrics = Metrics(environment)
    return context.metrics


def serve(environment: Environment, port: int, host: str = DEFAULT_METRICS_HOST) -> Any:
    """/metrics on its own HTTP server (headless runs); returns the server, `shutdown()` to stop it."""
    try:
        server, _thread = start_http_server(port, addr=host, registry=install(environment).registry)
    except OSError as exc:
        raise MetricsError(f"cannot serve /metrics on {host}:{port}: {exc.strerror}; "
                           "choose another --metrics-port") from None
    return server


def attach_metrics(environment: Environment) -> Metrics:
    """/metrics as a route of Locust's web UI (its Flask app), for runs started from the browser.

    Behind the UI's login when it has one, like every other route (Prometheus can send basic auth; without
    it, a 401).
    """
    from .web.guard import protected

    metrics = install(environment)
    web_ui = environment.web_ui
    app = web_ui.app

    @protected(web_ui)
    def metrics_view() -> Any:
        return app.response_class(metrics.exposition(), content_type=CONTENT_TYPE_LATEST)

    app.add_url_rule(METRICS_PATH, "authbench_metrics", metrics_view)
    return metrics
