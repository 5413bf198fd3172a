"""Rates, levels and SLOs as typed: what they parse into, and one line naming the mistake otherwise."""

from __future__ import annotations

import pytest

from authbench.openmodel.rates import LevelPlan, PlanError, parse_levels, parse_rate, parse_slo


@pytest.mark.parametrize(("text", "per_second"), [("100/s", 100.0), ("6000/min", 100.0), ("3600/h", 1.0),
                                                  ("2.5/s", 2.5), (" 30 / m ", 0.5)])
def test_rates(text, per_second):
    assert parse_rate(text) == pytest.approx(per_second)


@pytest.mark.parametrize(("text", "named"), [("100", "'100'"), ("100/d", "'d'"), ("0/s", "more than 0"),
                                             ("fast", "'fast'"), ("1e9/s", "'1e9/s'")])
def test_bad_rates(text, named):
    with pytest.raises(PlanError, match=named):
        parse_rate(text)


def test_levels_with_own_warmups_and_max_last():
    levels, wants_max = parse_levels("typical=20/s:10m,peak=100/s:10m:1m,max", warmup=30.0)
    assert [(lv.name, lv.rate, lv.duration, lv.warmup) for lv in levels] == [
        ("typical", 20.0, 600.0, 30.0), ("peak", 100.0, 600.0, 60.0)]
    assert wants_max and levels[0].tests == 12000
    plan = LevelPlan(levels, repeat=2)
    assert [(lv.name, rep) for lv, rep in plan.cells()] == [("typical", 1), ("typical", 2), ("peak", 1), ("peak", 2)]


@pytest.mark.parametrize(("text", "named"), [
    ("typical", "NAME=RATE:DURATION"), ("typical=20/s", "NAME=RATE:DURATION"), ("a=1/s:1m,,b=2/s:1m", "empty"),
    ("max,a=1/s:1m", "last item"), ("a=1/s:1m,a=2/s:1m", "twice"), ("a=1/s:0s", "more than 0"),
    ("a b=1/s:1m", "level name"), ("a=1/s:1m:1m:1m", "NAME=RATE"), ("a=1/x:1m", "unknown unit"),
    ("a=1/s:soon", "duration"),
])
def test_bad_levels(text, named):
    with pytest.raises(PlanError, match=named):
        parse_levels(text, warmup=0.0)


def test_slo_terms():
    slo = parse_slo("p99<500ms, p99.9<2s,mean<100ms,median<80ms,errors<1%")
    assert [(t.metric, t.limit, t.percentile) for t in slo.terms] == [
        ("p99", 500.0, 99.0), ("p99.9", 2000.0, 99.9), ("mean", 100.0, None), ("median", 80.0, 50.0),
        ("errors", 1.0, None)]
    assert slo.describe() == "p99<500ms,p99.9<2000ms,mean<100ms,median<80ms,errors<1%"


@pytest.mark.parametrize(("text", "named"), [("p99>500ms", "METRIC<LIMIT"), ("errors<1", "in %"),
                                             ("p99<5%", "latency"), ("p200<1s", "percentile"),
                                             ("latency<5ms", "METRIC<LIMIT"), ("", "METRIC<LIMIT")])
def test_bad_slo(text, named):
    with pytest.raises(PlanError, match=named):
        parse_slo(text)
