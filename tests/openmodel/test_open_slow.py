"""Open-model runs against a server of known speed: what a slow server does to the two latencies,
late and dropped starts, and whether a level is sustained."""

from __future__ import annotations

import json

from sleepy_server import SleepyServer, SleepyUser

from authbench import headless
from authbench.openmodel.rates import Arrivals, Level, LevelPlan
from authbench.report import write_report
from authbench.results.recorder import read_samples

DELAY = 0.05  # seconds the server sleeps per request: one user serves at most 20 journeys a second


def run(tmp_path, port: int, plan: LevelPlan, run_id: str) -> tuple[dict, list[str]]:
    lines: list[str] = []
    report = headless.execute(plan, SleepyUser, port, config={"target": "sleepy"}, results_base=tmp_path,
                              run_id=run_id, say=lines.append)
    headless.print_report(report, lines.append)
    return json.loads((tmp_path / run_id / "summary.json").read_text()), "\n".join(lines).splitlines()


def test_a_server_that_keeps_up_is_sustained(tmp_path):
    with SleepyServer(DELAY) as server:
        document, lines = run(tmp_path, server.port, LevelPlan((Level("easy", 10.0, 2.0, 0.3),),
                                                               Arrivals(max_users=5)), "easy")
    cell = document["cells"][0]
    record = cell["open"]
    assert record["planned"] == record["started"] == cell["summary"]["tests"] == 20
    assert record["dropped"] == 0 and record["sustained"] and record["not_sustained_because"] == []
    assert record["response_ms"]["p50"] >= record["service_ms"]["p50"] >= DELAY * 1000 * 0.9
    assert not any("not sustained" in line for line in lines)
    measured = [s for s in read_samples(tmp_path / "easy" / "samples.csv") if s.phase == "measured"]
    assert len(measured) == 20 and len({s.iteration for s in measured}) == 20


def test_a_slow_server_grows_latency_from_intended_start_not_service_time(tmp_path):
    # 40 starts a second into one user that can do 20: the backlog grows, every start after the first ones is
    # late, and what a user waits grows with the backlog while the server's own time does not.
    with SleepyServer(DELAY) as server:
        document, lines = run(tmp_path, server.port, LevelPlan((Level("overload", 40.0, 2.0),),
                                                               Arrivals(max_users=1, queue_for=30.0)), "slow")
    record = document["cells"][0]["open"]
    assert record["planned"] == record["started"] == 80 and record["dropped"] == 0  # queued, not dropped
    assert record["late"] >= 40
    assert record["achieved_rate"] < 0.98 * record["target_rate"] and not record["sustained"]
    assert "achieved" in record["not_sustained_because"][0]
    assert record["response_ms"]["p99"] > 5 * record["service_ms"]["p99"]
    assert record["service_ms"]["p99"] < 20 * DELAY * 1000  # the server's time stays near its delay
    assert any("overload #1 (not sustained)" in line for line in lines)
    assert any(line.rstrip().endswith("NO") for line in lines)  # the levels table
    write_report(tmp_path / "slow")
    report = (tmp_path / "slow" / "report.md").read_text()
    assert "overload #1 (not sustained)" in report and "**Load levels**" in report and "| NO |" in report


def test_max_users_drops_are_counted(tmp_path):
    with SleepyServer(DELAY) as server:
        document, lines = run(tmp_path, server.port, LevelPlan((Level("capped", 40.0, 2.0),),
                                                               Arrivals(max_users=1, queue_for=0.0)), "drops")
    record = document["cells"][0]["open"]
    assert record["dropped"] > 0 and record["started"] + record["dropped"] == record["planned"] == 80
    assert document["cells"][0]["summary"]["tests"] == record["started"]  # a dropped start is not a test
    assert not record["sustained"] and any("dropped" in reason for reason in record["not_sustained_because"])
    assert any(f"{record['dropped']} dropped" in line for line in lines)


def test_metrics_show_the_levels_rates_and_starts(tmp_path):
    from authbench.metrics import install
    from authbench.runner import create_environment

    environment = create_environment(SleepyUser, 0)
    environment.create_local_runner()
    registry = install(environment).registry
    assert registry.get_sample_value("authbench_level_target_rate") == 0  # no level yet
    with SleepyServer(DELAY) as server:
        environment.authbench.settings = server.port
        headless.execute(LevelPlan((Level("capped", 40.0, 1.0),), Arrivals(max_users=1, queue_for=0.0)), SleepyUser,
                         server.port, config={}, results_base=tmp_path, run_id="m", say=lambda _: None,
                         environment=environment)
    record = json.loads((tmp_path / "m" / "summary.json").read_text())["cells"][0]["open"]
    assert registry.get_sample_value("authbench_level_target_rate") == 40.0
    assert registry.get_sample_value("authbench_level_starts_dropped") == record["dropped"] > 0
    assert registry.get_sample_value("authbench_level_starts_late") == record["late"]
    assert registry.get_sample_value("authbench_level_achieved_rate") == record["achieved_rate"]
    assert registry.get_sample_value("authbench_cell_journeys_done") == record["started"]
    environment.runner.quit()
