"""The live view follows authbench's events alone: cells, averages, phases, reasons, per-user counts."""

from __future__ import annotations

import json

from test_runner import CountingUser

from authbench.patterns import parse_plan
from authbench.results.sample import MEASURED, OK, Sample
from authbench.runner import run_plan_locally
from authbench.web.live import LiveRun


def test_snapshot_of_a_plan_with_failures_and_repetitions():
    live = LiveRun()
    seen = []
    plan = parse_plan("3x10,2x5", "0.2s", 2)
    live.begin("r", "nowhere", plan)

    def listen(context) -> None:
        live.attach(context.events)
        # what the page shows as each cell ends (added after LiveRun's own listener)
        context.events.cell_stop.add_listener(lambda cell: seen.append(live.snapshot()))

    run_plan_locally(plan, CountingUser, None, cell_time_limit=60, listen=listen)
    snapshot = live.snapshot()
    json.dumps(snapshot)
    labels = [(row["label"], row["kind"]) for row in snapshot["rows"]]
    assert labels == [("3x10 #1", "cell"), ("3x10 #2", "cell"), ("2x5 #1", "cell"), ("2x5 #2", "cell"),
                      ("3x10 average", "average"), ("2x5 average", "average")]
    assert [row["summary"]["tests"] for row in snapshot["rows"]] == [30, 30, 10, 10, 30, 10]
    assert snapshot["running"] is None and snapshot["current"]["phase"] == ""
    assert snapshot["journeys"]["measured"] == snapshot["journeys"]["planned"] == 80
    assert snapshot["journeys"]["warmup"] > 0
    errors = sum(row["summary"]["errors"] for row in snapshot["rows"] if row["kind"] == "cell")
    reasons = {r["reason"]: r for r in snapshot["reasons"]}
    assert set(reasons) == {"injected"} and reasons["injected"]["measured"] == errors > 0
    total = snapshot["journeys"]["measured"] + snapshot["journeys"]["warmup"]
    assert [len(s["rows"]) for s in seen] == [1, 3, 4, 6]  # each cell's row (and average) as it ends
    last_cell = snapshot["current"]
    assert last_cell["pattern"] == "2x5" and [u["measured"] for u in last_cell["per_user"]] == [5, 5]
    series = live.timeline_view()["series"]  # the whole run's timeline, every journey in it
    assert sum(series["ok_per_s"]) * series["width_s"] + sum(series["errors_per_s"]) * series["width_s"] == total
    assert sum(series["warmup"]) > 0 and [m["what"] for m in live.marks].count("start") == 4


def test_the_live_timeline_covers_the_whole_run_not_its_last_minutes():
    live = LiveRun()
    live.begin("r", "nowhere", parse_plan("1x1", "0s", 1))
    start = 1_700_000_000.0
    for second in range(7200):  # two hours, one journey a second: wider buckets, every journey kept
        live.on_sample(Sample(start + second, 50.0, 0, second, OK, "", MEASURED, "1x1", 1))
    series = live.timeline_view()["series"]
    assert series["t"][0] == start and series["width_s"] == 2.0 and len(series["t"]) <= 3600
    assert sum(series["ok_per_s"]) * series["width_s"] == 7200
