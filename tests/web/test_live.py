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


def test_progress_of_a_rate_plan_is_never_negative_nor_past_its_bound():
    """Issue 26: during a search the page read "136 of 20 measured journeys", "cell 4 of 1" and "about -1h -1m
    left". Progress of a level plan comes from its levels' lengths and the search's step bound instead."""
    from authbench.openmodel.capacity import step_bound
    from authbench.openmodel.rates import Level, LevelPlan, Search, parse_slo
    from authbench.openmodel.runner import OpenCellResult
    from authbench.web.live_open import OpenView

    knobs = Search(start=4.0, growth=4.0, precision=0.5, max_rate=200.0, hold=2.0, warmup=0.0)
    level = Level("low", 5.0, 10.0, 2.0)
    plan = LevelPlan((level,), repeat=2, search=knobs, slo=parse_slo("p99<2s"))
    view, bound, now = OpenView(plan), step_bound(knobs), 1000.0
    assert bound == 10  # 4, 16, 64 and 200/s up, three halvings of a ×4 bracket to 50%, a confirmation and two more
    assert view.progress(now, True) == {"share": 0.0, "text": "level 0 of 2, capacity step 0 of at most 10",
                                        "left_s": 2 * 12.0 + 10 * 2.0, "left_is_bound": True}

    def cell(pattern, repetition=1, **record):
        return OpenCellResult(pattern, repetition, [], True,
                              open={"sustained": True, "slo_met": True, "slo": "p99<2000ms", **record})

    for repetition in (1, 2):
        view.on_cell_start(level, repetition, now)
        now += 100.0  # far longer than planned: nothing goes past the plan
        progress = view.progress(now, True)
        assert progress["text"].startswith(f"level {repetition} of 2") and progress["left_s"] >= 0
        view.on_cell_stop(cell(level, repetition, target_rate=5.0, achieved_rate=5.0, late=0, dropped=0))
    rates = [4.0, 16.0, 64.0, 40.0, 28.0, 22.0, 16.0, 4.0, 4.0, 4.0, 4.0, 4.0]  # more steps than the bound
    for number, rate in enumerate(rates, 1):
        step = Level(f"max-{number}-grow@{rate:g}/s", rate, knobs.hold, knobs.warmup)
        view.on_cell_start(step, 1, now)
        now += 50.0
        progress = view.progress(now, True)
        done, of = (int(word) for word in progress["text"].split("capacity step ")[1].split(" of at most "))
        assert done <= of == bound and progress["left_s"] >= 0 and 0 <= progress["share"] <= 1, progress
        held = number % 2 == 0
        view.on_cell_stop(cell(step, sustained=held, not_sustained_because=[] if held else ["3 starts dropped"]))
    snapshot = view.snapshot(None, False, now, True)
    assert [row["label"] for row in snapshot["levels"]] == ["low", "low"] and snapshot["search"]["answer"] is None
    assert snapshot["search"]["steps"][0] == {"step": 1, "rate": 4.0, "stage": "grow", "passed": False,
                                              "why": "not sustained: 3 starts dropped", "label": "max-1-grow@4/s"}
    assert snapshot["search"]["steps"][1]["why"] == "sustained, SLO p99<2000ms met"
    view.found = {"answer": 16.0, "confirmed": True, "last_pass": 16.0, "first_fail": 22.0, "slo": "p99<2000ms",
                  "steps": [], "ceiling_reached": False, "steps_exhausted": False, "precision_reached": True,
                  "max_rate": 200.0}
    done = view.snapshot(None, False, now, False)
    assert done["progress"]["share"] == 1 and done["progress"]["left_s"] == 0
    assert done["search"]["answer"]["text"] == "16/s (SLO p99<2000ms, confirmed)"
