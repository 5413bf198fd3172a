"""Fault plans: what parses, what is refused (one line naming the item), and lab names resolved."""

from __future__ import annotations

import pytest

from authbench.cluster.faults.plan import RUN, START, STOP, Fault, FaultError, parse_faults, resolve_components

LAB = ["ldap", "memcached-a", "memcached-b", "redis-primary", "lb", "memcached/idp-a", "memcached/idp-b",
       "local/idp-a"]


def test_items_across_options_in_time_order():
    faults = parse_faults(["at=90s start idp-a; at=30s stop idp-a", "at=1m timeout=5s run=kubectl delete pod 'idp 0'"])
    assert [(f.at, f.action, f.target) for f in faults] == [
        (30.0, STOP, "idp-a"), (60.0, RUN, "kubectl delete pod 'idp 0'"), (90.0, START, "idp-a")]
    assert faults[1].timeout == 5.0 and faults[1].argv == ["kubectl", "delete", "pod", "idp 0"]
    assert faults[0].describe() == "at=30s stop idp-a"


def test_a_quoted_semicolon_stays_in_the_command():
    [fault, after] = parse_faults(["at=1s run=sh -c 'kubectl delete pod idp-0; sleep 1'; at=2s stop lb"])
    assert fault.argv == ["sh", "-c", "kubectl delete pod idp-0; sleep 1"] and after.target == "lb"


@pytest.mark.parametrize(("text", "message"), [
    ("stop idp-a", "begin with at=TIME"),
    ("at=soon stop idp-a", "at='soon' is not a time"),
    ("at=-3s stop idp-a", "at='-3s' is not a time"),
    ("at=30s", "the action must be"),
    ("at=30s kill idp-a", "the action must be"),
    ("at=30s stop", "the action must be"),
    ("at=30s stop idp-a idp-b", "the action must be"),
    ("at=30s run=", "run= needs a command"),
    ("at=30s run=echo 'unclosed", "cannot split the command"),
    ("at=30s timeout=0s run=true", "timeout must be more than 0"),
    ("at=30s timeout=5s stop idp-a", "timeout= belongs to a run=COMMAND"),
    ("at=48h stop idp-a", "more than a day"),
])
def test_malformed_items_are_refused_naming_the_item(text, message):
    with pytest.raises(FaultError) as caught:
        parse_faults([text])
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert repr(text.strip()) in str(caught.value)


def test_bare_names_resolve_to_the_target_cluster_and_shared_names_stay():
    faults = resolve_components(parse_faults(["at=1s stop idp-a; at=2s stop memcached-a; at=3s stop local/idp-a"]),
                                LAB, "memcached")
    assert [f.target for f in faults] == ["memcached/idp-a", "memcached-a", "local/idp-a"]


def test_unknown_component_lists_the_valid_ones():
    with pytest.raises(FaultError, match=r"no component 'idp-c'; valid: idp-a, idp-b, ldap, memcached-a"):
        resolve_components(parse_faults(["at=1s stop idp-c"]), LAB, "memcached")
    with pytest.raises(FaultError, match="no component 'idp-a'"):  # no cluster to take it from
        resolve_components(parse_faults(["at=1s stop idp-a"]), LAB, None)


def test_run_actions_need_no_lab():
    faults = [Fault(1.0, RUN, "true")]
    assert resolve_components(faults, [], None) == faults


def test_a_start_after_a_known_measured_phase_is_refused():
    """Issue 25 item 2: a `start` that cannot fall inside the measured phase is refused before the load, where the
    phase's length is known (arrival-rate levels, capacity steps); a pattern's length is not known: no refusal."""
    from authbench.cluster.faults.plan import check_reach
    from authbench.openmodel.rates import Level, LevelPlan, Search
    from authbench.patterns import parse_plan

    plan = parse_faults(["at=1s stop idp-a; at=30s start idp-a"])
    check_reach(plan, parse_plan("4x6", "0", 2))
    check_reach(plan, LevelPlan((Level("long", 5.0, 60.0),)))
    with pytest.raises(FaultError) as caught:
        check_reach(plan, LevelPlan((Level("long", 5.0, 60.0), Level("short", 5.0, 10.0))))
    assert str(caught.value) == ("--fault 'at=30s start idp-a': level short measures 10 s, so this start would fall "
                                 "after it and leave idp-a stopped to the end; start it before 10s")
    with pytest.raises(FaultError, match="each capacity step measures 20 s"):
        check_reach(plan, LevelPlan((), search=Search(hold=20.0)))
    check_reach(parse_faults(["at=30s stop idp-a"]), LevelPlan((Level("short", 5.0, 10.0),)))  # never reached: said


def test_a_node_named_as_either_idp_names_it_is_the_measured_clusters():
    """Issue 27: one plan over the reference IdP's and Keycloak's clusters (`compare --backends memcached,
    keycloak-owners2`) stops node B of whichever cluster it measures; a full name stays what it says."""
    known = [*LAB, "postgres", "keycloak-a", "keycloak-b", "keycloak-sp"]
    plan = parse_faults(["at=1s stop idp-b; at=2s stop keycloak-a; at=3s stop memcached/idp-b; at=4s stop postgres"])
    assert [f.target for f in resolve_components(plan, known, "keycloak-owners2")] == [
        "keycloak-b", "keycloak-a", "memcached/idp-b", "postgres"]
    assert [f.target for f in resolve_components(plan, known, "memcached")] == [
        "memcached/idp-b", "memcached/idp-a", "memcached/idp-b", "postgres"]
    assert [f.target for f in resolve_components(parse_faults(["at=1s stop keycloak-b"]), known, None)] == [
        "keycloak-b"]
