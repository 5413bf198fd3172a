"""The failover analysis on samples written out by hand: windows, recovery, re-authentication, Test 4."""

from __future__ import annotations

from authbench.cluster.faults.analysis import ENDED_BY_STOP, analyse, lines, reauthenticated, recovery_seconds, verdict
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
    assert (fault["ended_at_s"], fault["ended_by"]) == (3.05, ENDED_BY_STOP)  # no start: the stop's own end
    assert fault["recovery_s"] == 2.0  # seconds 0 and 1 after the fault hold an error each, then none


def test_recovery_is_none_while_errors_last_and_zero_without_errors():
    samples = [journey(0, t, ok=False) for t in range(10)]
    assert recovery_seconds(samples, T0, T0 + 10) is None
    assert recovery_seconds([journey(0, t) for t in range(10)], T0, T0 + 10) == 0.0
    assert recovery_seconds([], T0, T0 + 10) is None  # no journey ended: nothing recovered
    assert recovery_seconds([journey(0, t) for t in range(10)], T0 + 10, T0 + 8) is None  # ended after `until`


def test_recovery_of_returning_users_needs_one_of_them_served_by_sso():
    """A window with no error but only password logins (the store came back empty) is not SSO working again."""
    samples = [journey(0, 1, session=LOST), journey(1, 1, session=FRESH), journey(0, 2, session=REUSED)]
    assert recovery_seconds(samples, T0 + 0.5, T0 + 10, returning={0}) == 1.0
    assert recovery_seconds(samples, T0 + 0.5, T0 + 10, returning={1}) is None  # user 1 never reused a session
    assert recovery_seconds(samples, T0 + 0.5, T0 + 10) == 0.0  # no returning users: no error is enough


def test_a_journey_in_flight_through_the_outage_proves_no_recovery():
    """One that read its session before the store stopped and ended after the stop's own end is not SSO again."""
    samples = [journey(0, 0, session=FRESH), journey(0, 2.9, ms=1500), journey(0, 5, ok=False, session="")]
    faults = [{"fault": "at=3s stop memcached-a", "time": T0 + 3.0, "seconds": 0.8}]
    [stop] = analyse(samples, faults, T0)["faults"]
    assert (stop["ended_at_s"], stop["recovery_s"], stop["test4"]) == (3.8, None, "×")


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
    assert (stop["reauthenticated_users"], stop["test4"]) == (2, "×")
    assert (stop["ended_at_s"], stop["ended_by"]) == (5.5, "start redis-primary")
    assert stop["recovery_s"] == 1.0  # from the start: at 6 s both log in again (no SSO), at 7 s SSO again


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


def simplesamlphp_like(back_after: float | None) -> list[Sample]:
    """Five returning users, one journey a second; memcached-a stops at 2.5 s and starts at 5.5 s. The IdP cannot
    read its session store: it shows its error page ("Cannot retrieve session data", HTTP 500) to users 0-2,
    never the login form, until `back_after` seconds after the start (None: to the end); users 3 and 4 are on
    the other memcached and keep SSO throughout."""
    samples = [journey(u, 0, session=FRESH) for u in range(5)] + [journey(u, 1) for u in range(5)]
    for t in range(3, 16):
        for u in range(5):
            broken = u < 3 and (back_after is None or t < 5.5 + back_after)
            samples.append(journey(u, t, ok=False, session="") if broken else journey(u, t))
    return samples


STOP_START = [{"fault": "at=2.5s stop memcached-a", "action": "stop", "target": "memcached-a", "time": T0 + 2.5,
               "seconds": 0.1},
              {"fault": "at=5.5s start memcached-a", "action": "start", "target": "memcached-a", "time": T0 + 5.5,
               "seconds": 0.2}]


def test_the_simplesamlphp_case_error_pages_to_the_end_lose_sso_and_never_recover():
    """Error pages instead of the login form, during and after the fault: 3 of 5 lost SSO (△), no recovery, and
    the sentence says so in plain words (issue 26: it read ○ and "recovered after not within the run")."""
    section = analyse(simplesamlphp_like(None), STOP_START, T0)
    [stop] = section["faults"]
    assert (stop["logged_in_users"], stop["reauthenticated_users"], stop["failed_users"]) == (5, 0, 3)
    assert (stop["affected_users"], stop["test4"], stop["recovery_s"]) == (3, "△", None)
    assert (stop["at_s"], stop["ended_at_s"], stop["ended_by"]) == (2.5, 5.5, "start memcached-a")
    assert stop["verdict_text"] == ("stop memcached-a: 3 of 5 logged-in users lost single sign-on (0 asked for "
                                    "their password again, 3 shown errors); SSO did not work again before the "
                                    "run ended.")
    printed = "\n".join(lines(section))
    assert "Test 4 △ stop memcached-a: 3 of 5" in printed and "not within the run" not in printed


def test_the_simplesamlphp_case_when_every_user_is_on_the_dead_store():
    samples = [s for s in simplesamlphp_like(None) if s.user < 3]
    [stop] = analyse(samples, STOP_START, T0)["faults"]
    assert (stop["affected_users"], stop["logged_in_users"], stop["test4"], stop["recovery_s"]) == (3, 3, "×", None)


def test_sso_back_three_seconds_after_the_start_recovers_in_three_seconds():
    """Errors until 3 s after the start, SSO from then on: recovery counts from the start, not from the stop."""
    [stop] = analyse(simplesamlphp_like(3.0), STOP_START, T0)["faults"]
    assert stop["recovery_s"] == 3.0 and stop["affected_users"] == 0 and stop["test4"] == "○"
    assert stop["verdict_text"].endswith("SSO worked again 3 s after start memcached-a.")


def test_a_stop_without_a_start_ends_with_its_own_action_and_the_next_stop_ends_the_search():
    samples = simplesamlphp_like(None)
    faults = [{**STOP_START[0], "seconds": 1.5},
              {"fault": "at=9s stop idp-a", "action": "stop", "target": "idp-a", "time": T0 + 9.0, "seconds": 0.1}]
    first, second = analyse(samples, faults, T0)["faults"]
    assert (first["ended_at_s"], first["ended_by"], first["recovery_s"]) == (4.0, ENDED_BY_STOP, None)
    assert first["verdict_text"].endswith("SSO did not work again before the next fault (stop idp-a).")
    assert second["ended_by"] == ENDED_BY_STOP


def test_without_returning_users_recovery_is_the_first_second_without_errors():
    samples = [journey(0, t, session="", ok=not 3 <= t < 8) for t in range(12)]
    faults = [{"fault": "at=2.5s stop ldap", "time": T0 + 2.5}, {"fault": "at=4s start ldap", "time": T0 + 4.0}]
    section = analyse(samples, faults, T0)
    [stop] = section["faults"]
    assert (stop["test4"], stop["ended_by"], stop["recovery_s"]) == ("-", "start ldap", 4.0)
    assert stop["verdict_text"] == "stop ldap: journeys succeeded again without errors 4 s after start ldap."
    assert lines(section)[-1].startswith("  stop ldap: journeys succeeded")


def test_results_written_before_the_fault_end_was_kept_still_print():
    old = {"windows": [], "returning_users": True,
           "faults": [{"fault": "at=2s stop idp-a", "at_s": 2.0, "recovery_s": None, "logged_in_users": 4,
                       "reauthenticated_users": 1, "test4": "△"}]}
    [line] = lines(old)
    assert line.startswith("  Test 4 △ stop idp-a: 1 of 4 logged-in users lost single sign-on")
    assert "not within the run" not in line and "recovered after" not in line


def test_users_who_logged_in_during_the_warm_up_are_logged_in_at_the_fault():
    """A slow IdP: the first measured journeys end after the fault, yet the warm-up had logged every user in."""
    samples = [journey(u, 3, ok=False, session="", ms=2000) for u in range(3)] + [journey(u, 6) for u in range(3)]
    faults = [{"fault": "at=1s stop memcached-a", "time": T0 + 1.0, "seconds": 0.5}]
    assert analyse(samples, faults, T0)["faults"][0]["test4"] == "-"  # nobody seen logged in
    [stop] = analyse(samples, faults, T0, warmed={0, 1, 2})["faults"]
    assert (stop["logged_in_users"], stop["affected_users"], stop["test4"], stop["recovery_s"]) == (3, 0, "○", 4.0)


def test_a_mix_counts_only_its_returning_users_as_logged_in():
    """--mix login=1,returning-sso=2: user 0 logs in afresh every journey (no session to lose), users 1 and 2
    return; user 2's journeys fail after the fault (error pages: no session class) — it is affected, user 0 is
    not counted at all."""
    def mixed(user: int, start: float, **more: object) -> Sample:
        sample = journey(user, start, **more)
        return Sample(**{**sample.__dict__, "journey": "login" if user == 0 else "returning-sso"})

    samples = [mixed(0, t, session="") for t in range(5)]
    samples += [mixed(u, 0, session=FRESH) for u in (1, 2)] + [mixed(u, t) for u in (1, 2) for t in (1, 2)]
    samples += [mixed(1, 3), mixed(2, 3, ok=False, session=""), mixed(2, 4, ok=False, session="")]
    [fault] = analyse(samples, [{"fault": "at=2s stop idp-a", "time": T0 + 2.5}], T0, warmed={0})["faults"]
    assert (fault["logged_in_users"], fault["failed_users"], fault["test4"]) == (2, 1, "△")
