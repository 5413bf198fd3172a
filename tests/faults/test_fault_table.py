"""The Test 4 table from cells' failover sections: repetitions pooled, starts without a row."""

from __future__ import annotations

from authbench.cluster.faults.table import format_test4, shown, verdict_rows


def cell(users: int, lost: int, recovery: float | None, errors: int, backend: str = "local", old: bool = False) -> dict:
    ended = {} if old else {"ended_at_s": 5.0, "ended_by": f"start {backend}/idp-a"}
    return {"failover": {
        "windows": [{"window": "before", "errors": 0, "journeys": 10, "max_ms": 90.0},
                    {"window": f"after at=2s stop {backend}/idp-a", "errors": errors, "journeys": 10, "max_ms": 900.0},
                    {"window": f"after at=5s start {backend}/idp-a", "errors": 0, "journeys": 10, "max_ms": 95.0}],
        "faults": [{"fault": f"at=2s stop {backend}/idp-a", "logged_in_users": users, "reauthenticated_users": lost,
                    "recovery_s": recovery, **ended}]}}


def test_repetitions_are_pooled_and_the_cluster_prefix_dropped():
    rows = verdict_rows({"local": [cell(4, 2, 3.0, 1), cell(4, 1, 5.0, 2)],
                         "stateless": [cell(4, 0, 0.0, 0, "stateless")]})
    assert rows == [("local", "at=2s stop idp-a", "△", "3 of 8", "3 of 20", "5", "900"),
                    ("stateless", "at=2s stop idp-a", "○", "0 of 4", "0 of 10", "0", "900")]
    assert verdict_rows({"local": [cell(4, 4, None, 10)]})[0][2:6] == ("×", "4 of 4", "10 of 10", "never")


def test_recovery_counts_from_the_fault_end_and_older_results_say_theirs_did_not():
    assert "recovery s (from fault end)" in format_test4({"local": [cell(4, 0, 0.0, 0)]})
    assert verdict_rows({"local": [cell(4, 1, 3.0, 1, old=True), cell(4, 1, 2.0, 1)]})[0][5] == \
        "3 (from the fault's beginning)"
    assert verdict_rows({"local": [cell(4, 1, None, 1, old=True)]})[0][5] == "never (from the fault's beginning)"


def test_no_fault_plan_no_table():
    assert format_test4({"local": [{"summary": {}}]}) == ""
    assert "○ no logged-in user" in format_test4({"local": [cell(4, 0, 0.0, 0)]})


def test_a_command_is_shown_by_its_program_only():
    assert shown("at=3s run=curl -H 'Authorization: Bearer s3cret' https://x", "local") == "at=3s run=curl …"
    assert shown("at=3s run=reboot", "local") == "at=3s run=reboot"
    assert shown("at=3s stop local/idp-a", "local") == "at=3s stop idp-a"
    assert shown("at=3s stop memcached/idp-a", "lab:memcached") == "at=3s stop idp-a"  # a run named as its target
