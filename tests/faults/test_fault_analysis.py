"""The failover analysis on samples written out by hand: windows, recovery, re-authentication, Test 4."""

from __future__ import annotations

from authbench.cluster.faults.analysis import analyse, reauthenticated, recovery_seconds, verdict
from authbench.journeys.returning import FRESH, LOST, REUSED
from authbench.results.sample import ERROR, MEASURED, OK, Sample

T0 = 1_000_000.0


def journey(user: int, start: float, ok: bool = True, session: str = REUSED, ms: float = 100.0) -> Sample:
    return Sample(start=T0 + start, duration_ms=ms, user=user, iteration=0, outcome=OK if ok else ERROR,
                  reason="" if ok else "connection error", phase=MEASURED, pattern="2x10", repetition=1,
                  session=session)


def timeline() -> list[Sample]:
    """Two users, one journey a second; a fault at 3 s: user 1 fails twice, then logs in again."""
    samples = [journey(0, 0, session=FRESH), journey(1, 0, session=FRESH)]
    samples += [journey(0, t) for t in range(1, 8)]
    samples += [journey(1, 1), journey(1, 2), journey(1, 3, ok=False), journey(1, 4, ok=False),
                journey(1, 5, session=LOST, ms=900), journey(1, 6), journey(1, 7)]
    return samples


def test_windows_split_at_the_fault_by_journey_end():
    faults = [{"fault": "at=3s stop idp-a", "time": T0 + 3.05}]
    section = analyse(timeline(), faults, T0)
    before, after = section["windows"]
    assert (before["journeys"], before["errors"], before["sso_lost"]) == (6, 0, 0)
    assert (after["journeys"], after["errors"], after["sso_lost"], after["sso_reused"]) == (10, 2, 1, 7)
    assert after["max_ms"] == 900.0 and before["max_ms"] == 100.0  # the latency spike
    [fault] = section["faults"]
    assert (fault["logged_in_users"], fault["reauthenticated_users"], fault["test4"]) == (2, 1, "△")
    assert fault["recovery_s"] == 2.0  # seconds 0 and 1 after the fault hold an error each, then none


def test_recovery_is_none_while_errors_last_and_zero_without_errors():
    samples = [journey(0, t, ok=False) for t in range(10)]
    assert recovery_seconds(samples, T0, T0 + 10) is None
    assert recovery_seconds([journey(0, t) for t in range(10)], T0, T0 + 10) == 0.0
    assert recovery_seconds([], T0, T0 + 10) is None  # no journey ended: nothing recovered


def test_only_users_logged_in_before_the_fault_count():
    samples = [journey(0, 0, session=FRESH), journey(1, 5, session=FRESH), journey(0, 6, session=LOST)]
    assert reauthenticated(samples, T0 + 3, T0 + 10) == (1, 1)
    assert reauthenticated(samples, T0 + 3, T0 + 5.5) == (1, 0)  # the lost journey began after `until`


def test_verdicts():
    assert [verdict(0, 0), verdict(4, 0), verdict(4, 1), verdict(4, 4)] == ["-", "○", "△", "×"]


def test_sessions_lost_after_the_restart_are_charged_to_the_stop():
    samples = [journey(0, 0, session=FRESH), journey(1, 0, session=FRESH), journey(0, 1), journey(1, 1)]
    samples += [journey(u, t, ok=False) for u in (0, 1) for t in (3, 4)]  # the store is down: every journey fails
    samples += [journey(u, 6, session=LOST) for u in (0, 1)] + [journey(u, 7) for u in (0, 1)]  # back, empty
    faults = [{"fault": "at=2s stop redis-primary", "action": "stop", "time": T0 + 2.5},
              {"fault": "at=5s start redis-primary", "action": "start", "time": T0 + 5.5}]
    section = analyse(samples, faults, T0)
    assert len(section["windows"]) == 3 and section["windows"][2]["sso_lost"] == 2
    [stop] = section["faults"]
    assert (stop["reauthenticated_users"], stop["test4"], stop["recovery_s"]) == (2, "×", 3.0)


def test_a_fault_that_never_ran_opens_no_window():
    section = analyse(timeline(), [{"fault": "at=30s stop idp-a", "time": None}], T0)
    assert [w["window"] for w in section["windows"]] == ["before"] and section["faults"] == []


def test_an_error_page_instead_of_sso_costs_the_user_as_much_as_a_password():
    """An IdP that cannot read its session store may show an error page, not the login form: the returning
    users it fails lost SSO as surely as those asked for their password (the SimpleSAMLphp case, issue 26)."""
    samples = [journey(u, 0, session=FRESH) for u in range(4)] + [journey(u, 1) for u in range(4)]
    samples += [journey(0, 3, ok=False, session=""), journey(1, 3, ok=False, session="")]  # error pages only
    samples += [journey(2, 3, ok=False, session=""), journey(2, 4)]  # a failed journey, then SSO: session kept
    samples += [journey(3, 3)]  # served by the node whose store still answers
    [fault] = analyse(samples, [{"fault": "at=2s stop memcached-a", "time": T0 + 2.5}], T0)["faults"]
    assert (fault["reauthenticated_users"], fault["failed_users"], fault["affected_users"]) == (0, 2, 2)
    assert fault["test4"] == "△"
