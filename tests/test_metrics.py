"""/metrics scraped during a local run agrees with the run's summary; the web UI route serves the same."""

from __future__ import annotations

import contextlib
import json
import re
import urllib.request
from pathlib import Path

import gevent
import pytest
from test_runner import CountingUser

from authbench import metrics
from authbench.headless import execute
from authbench.metrics import MetricsError, attach_metrics
from authbench.patterns import parse_plan
from authbench.runner import create_environment

from ports import DISTRIBUTED, LOCUST_WEB

METRICS_PORT = DISTRIBUTED + 30  # this file's ports: +30..+39
WEB_PORT = LOCUST_WEB


def scrape(url: str) -> dict[str, float]:
    return parse(urllib.request.urlopen(url, timeout=5).read().decode())


def parse(text: str) -> dict[str, float]:
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


def test_scraped_counters_match_the_summary(tmp_path):
    url = f"http://127.0.0.1:{METRICS_PORT}/metrics"
    seen: list[dict[str, float]] = []
    running = [True]

    def scraper() -> None:
        while running[0]:
            with contextlib.suppress(OSError):  # not up yet
                seen.append(scrape(url))
            gevent.sleep(0.05)

    environment = create_environment(CountingUser, None)
    environment.create_local_runner()
    watcher = gevent.spawn(scraper)
    try:
        report = execute(parse_plan("3x150,2x100", "0.3s"), CountingUser, None, config={}, results_base=tmp_path,
                         run_id="m", say=lambda _: None, metrics_port=METRICS_PORT, environment=environment)
    finally:
        running[0] = False
        watcher.join(timeout=5)
        environment.runner.quit()
    assert seen, "never scraped during the run"
    assert any(s.get('authbench_phase{authbench_phase="warmup"}') == 1 for s in seen)
    assert any(s.get('authbench_phase{authbench_phase="measured"}') == 1 for s in seen)
    assert any(s.get("authbench_users") == 3 for s in seen)
    assert all(s.get("authbench_cell_journeys_done", 0) <= s.get("authbench_cell_journeys_planned", 0) for s in seen)
    last = parse(metrics.install(environment).exposition().decode())  # what /metrics served, after the run
    cells = json.loads((report.run_dir / "summary.json").read_text())["cells"]
    tests = sum(cell["summary"]["tests"] for cell in cells)
    errors = sum(cell["summary"]["errors"] for cell in cells)
    assert tests == 650 and errors > 0
    assert last['authbench_journeys_total{outcome="ok",phase="measured",reason=""}'] == tests - errors
    assert last['authbench_journeys_total{outcome="error",phase="measured",reason="injected"}'] == errors
    assert last['authbench_journey_duration_seconds_count{phase="measured"}'] == tests
    assert last['authbench_journey_duration_seconds_bucket{le="0.005",phase="measured"}'] > 0
    assert last["authbench_cell_journeys_planned"] == 200  # the last cell, 2x100
    assert last['authbench_workers'] == 1
    assert not any("account" in name or "pw-" in name for name in last)


def test_busy_metrics_port_is_a_clear_error(tmp_path):
    environment = create_environment(CountingUser, None)
    server = metrics.serve(environment, METRICS_PORT + 2)
    try:
        with pytest.raises(MetricsError, match=f"cannot serve /metrics on 127.0.0.1:{METRICS_PORT + 2}"):
            metrics.serve(create_environment(CountingUser, None), METRICS_PORT + 2)
    finally:
        server.shutdown()
        server.server_close()


def test_web_ui_route_serves_the_registry(monkeypatch):
    monkeypatch.setattr("sys.argv", ["locust"])  # Locust's web UI reads its options from the command line
    environment = create_environment(CountingUser, None)
    environment.create_local_runner()
    web_ui = environment.create_web_ui(host="127.0.0.1", port=WEB_PORT)
    try:
        attach_metrics(environment)
        gevent.sleep(0.2)
        values = scrape(f"http://127.0.0.1:{WEB_PORT}/metrics")
    finally:
        web_ui.stop()
        environment.runner.quit()
    assert values['authbench_phase{authbench_phase="idle"}'] == 1 and values["authbench_users"] == 0


def test_grafana_dashboard_asks_only_for_metrics_authbench_serves():
    path = Path(__file__).resolve().parents[1] / "helm" / "authbench" / "dashboards" / "authbench.json"
    dashboard = json.loads(path.read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    names = {name for expr in exprs for name in re.findall(r"authbench_\w+", expr)}
    asked = {re.sub(r"_(bucket|total|info)$", "", name) for name in names}
    served = metrics.install(create_environment(CountingUser, None)).exposition().decode()
    assert asked and all(re.search(rf"^# TYPE {name}(_total|_info)? ", served, re.M) for name in asked), asked
