"""Pattern, duration and plan parsing: the forms the 2012 report used, and clear refusals."""

from __future__ import annotations

import pytest

from authbench.patterns import Pattern, PlanError, parse_duration, parse_patterns, parse_plan


def test_2012_patterns():
    assert parse_patterns("2x1000,10x200,20x200") == (Pattern(2, 1000), Pattern(10, 200), Pattern(20, 200))
    assert Pattern(10, 200).tests == 2000 and Pattern(10, 200).label == "10x200"


@pytest.mark.parametrize("bad", ["2x", "0x10", "ax3", "10x-1", "10x0", "x5", "10*200", "10x200x3", " "])
def test_malformed_patterns_are_named(bad):
    with pytest.raises(PlanError) as error:
        parse_patterns(bad)
    message = str(error.value)
    assert ("USERSxRUNS" in message or "must be" in message or "empty" in message) and "\n" not in message


def test_empty_list_is_refused():
    with pytest.raises(PlanError, match="empty"):
        parse_patterns(",")


@pytest.mark.parametrize(("text", "seconds"), [("60s", 60), ("2m", 120), ("500ms", 0.5), ("0", 0), ("1.5", 1.5),
                                               ("1h", 3600)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["", "s", "-1s", "5 minutes", "1d"])
def test_bad_durations(bad):
    with pytest.raises(PlanError, match="duration"):
        parse_duration(bad)


def test_plan_cells_in_order_and_repeat_bounds():
    plan = parse_plan("2x3,4x5", "5s", 2)
    assert [(p.label, r) for p, r in plan.cells()] == [("2x3", 1), ("2x3", 2), ("4x5", 1), ("4x5", 2)]
    with pytest.raises(PlanError, match="repeat"):
        parse_plan("2x3", "0", 0)
