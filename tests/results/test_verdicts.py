"""The verdict panel from a summary.json document alone: each check's pass or fail and the figure behind it."""

from __future__ import annotations

from authbench.results.verdicts import FAIL, INFO, PASS, compute, criteria_failed, lines


def _cell(pattern: str, tests: int = 100, errors: int = 0, **more) -> dict:
    return {"pattern": pattern, "repetition": 1, "complete": True,
            "summary": {"tests": tests, "errors": errors}, **more}


def _level(rate: float, achieved: float, p99: float, limit: float = 40.0, dropped: int = 0, late: int = 0) -> dict:
    met = p99 < limit
    sustained = dropped == 0 and achieved >= 0.98 * rate
    return {"target_rate": rate, "achieved_rate": achieved, "late": late, "dropped": dropped,
            "sustained": sustained, "not_sustained_because": [] if sustained else [f"{dropped} dropped"],
            "slo": f"p99<{limit:g}ms", "slo_met": met,
            "slo_failures": [] if met else [f"p99 {p99:.1f} ms ≥ {limit:g} ms"],
            "slo_checks": [{"term": f"p99<{limit:g}ms", "metric": "p99", "limit": limit, "unit": "ms",
                            "value": p99, "met": met}]}


def _by(panel: dict, check: str) -> list[dict]:
    return [c for c in panel["checks"] if c["check"] == check]


def test_each_level_gets_its_slo_and_rate_with_the_deciding_figure():
    document = {"config": {}, "cells": [_cell("10/s", open=_level(10, 9.9, 31.2)),
                                        _cell("40/s", open=_level(40, 30.0, 56.0, dropped=12, late=3))]}
    panel = compute(document)
    slo = _by(panel, "slo")
    assert [(c["level"], c["passed"], c["mark"]) for c in slo] == [("10/s #1", True, PASS), ("40/s #1", False, FAIL)]
    assert slo[0]["figure"] == "p99 31.2 ms < 40 ms" and slo[1]["figure"] == "p99 56.0 ms ≥ 40 ms"
    held = _by(panel, "sustained")
    assert [c["passed"] for c in held] == [True, False]
    assert (held[1]["late"], held[1]["dropped"]) == (3, 12)
    assert "achieved 30/s of 40/s, 3 late, 12 dropped" in held[1]["figure"]
    assert panel["passed"] is False
    assert [c["level"] for c in criteria_failed(panel)] == ["40/s #1"]  # a missed SLO fails the run (exit 3)


def test_the_capacity_answer_with_its_steps_and_no_level_rows_for_them():
    steps = [{"rate": 5.0, "stage": "grow", "passed": True}, {"rate": 10.0, "stage": "grow", "passed": True},
             {"rate": 20.0, "stage": "grow", "passed": False}, {"rate": 10.0, "stage": "confirm", "passed": True}]
    labels = ["s1", "s2", "s3", "s4"]
    found = {"steps": steps, "step_labels": labels, "answer": 10.0, "last_pass": 10.0, "first_fail": 20.0,
             "confirmed": True, "slo": "p99<40ms", "ceiling_reached": False}
    cells = [_cell(label, open=_level(s["rate"], s["rate"], 30.0 if s["passed"] else 90.0))
             for label, s in zip(labels, steps, strict=True)]
    panel = compute({"config": {}, "cells": cells, "capacity": found})
    assert not _by(panel, "slo") and not _by(panel, "sustained")  # the steps are the capacity's, not levels
    (capacity,) = _by(panel, "capacity")
    assert capacity["passed"] is True and capacity["answer"] == 10.0
    assert capacity["figure"].startswith("10/s confirmed (SLO p99<40ms, first failing 20/s)")
    assert [s["passed"] for s in capacity["steps"]] == [True, True, False, True]
    assert capacity["steps"][2]["why"] == "p99 90.0 ms ≥ 40 ms"
    assert "20/s grow ✗" in capacity["figure"]
    unconfirmed = compute({"config": {}, "cells": cells, "capacity": {**found, "answer": None, "confirmed": False}})
    assert _by(unconfirmed, "capacity")[0]["passed"] is False


def test_the_error_share_is_judged_only_against_max_error_pct():
    cells = [_cell("2x10", tests=20, errors=4)]
    unjudged = compute({"config": {}, "cells": cells})
    (errors,) = _by(unjudged, "errors")
    assert (errors["passed"], errors["mark"], errors["pct"]) == (None, INFO, 20.0)
    assert unjudged["passed"] is None
    judged = compute({"config": {"max_error_pct": 5}, "cells": cells})
    assert _by(judged, "errors")[0]["figure"] == ("20.00% of 20 measured journeys failed (4), more than "
                                                  "--max-error-pct 5")
    assert judged["passed"] is False
    assert compute({"config": {"max_error_pct": 25}, "cells": cells})["passed"] is True


def test_test4_per_fault_counts_users_asked_for_the_password_or_failed():
    failover = {"windows": [{"window": "after stop memcached-a", "errors": 32, "journeys": 60}],
                "faults": [{"fault": "stop memcached-a", "test4": "△", "logged_in_users": 6, "affected_users": 4,
                            "reauthenticated_users": 0, "failed_users": 4, "recovery_s": 3.0,
                            "verdict_text": "stop memcached-a: 4 of 6 logged-in users lost single sign-on"}]}
    panel = compute({"config": {}, "cells": [_cell("8x44", failover=failover)]})
    (test4,) = _by(panel, "test4")
    assert (test4["mark"], test4["passed"], test4["affected_users"], test4["errors"]) == ("△", False, 4, 32)
    assert test4["figure"].startswith("stop memcached-a: 4 of 6")
    assert panel["passed"] is False
    kept = {**failover, "faults": [{**failover["faults"][0], "test4": "○", "affected_users": 0, "failed_users": 0}]}
    assert _by(compute({"config": {}, "cells": [_cell("8x44", failover=kept)]}), "test4")[0]["passed"] is True


def test_cut_and_interrupted_runs_say_their_figures_are_partial():
    document = {"config": {}, "cells": [_cell("2x10", complete=False)],
                "interrupted": {"cell": {"pattern": "4x10", "repetition": 1}}}
    partial = _by(compute(document), "complete")
    assert [c["passed"] for c in partial] == [False, False]
    assert partial[1]["figure"] == "interrupted during 4x10 #1"


def test_the_printed_panel_is_one_line_per_check():
    panel = compute({"config": {"max_error_pct": 1}, "cells": [_cell("1x8", tests=8, errors=0)]})
    assert lines(panel) == ["Verdicts: all passed",
                            f"  {PASS} errors: 0.00% of 8 measured journeys failed (0), within --max-error-pct 1"]
    assert lines({}) == []


def test_results_written_before_faults_had_sentences_get_one_without_a_commands_arguments():
    failover = {"windows": [], "faults": [{"fault": "at=2s run=curl -H 'Bearer s3cret' x", "test4": "-",
                                           "logged_in_users": 0, "reauthenticated_users": 0, "recovery_s": 4.0}]}
    (test4,) = _by(compute({"config": {}, "cells": [_cell("8x44", failover=failover)]}), "test4")
    assert test4["figure"] == "at=2s run=…: 0 of 0 logged-in users lost single sign-on; recovered after 4 s"
    assert test4["passed"] is None  # no returning users: not judged
