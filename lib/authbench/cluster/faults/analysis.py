"""What a fault did to the users: windows aligned to the fault times, recovery, and lost SSO sessions.

Journeys are placed by the moment their outcome was known (their end), so a journey cut by a fault
counts after it. Per window: journeys, errors, SSO sessions lost and reused, and latency of the
successful journeys (the spike). Per fault: the time to recover — from the fault to the first second
from which the error share stays at or below RECOVERY_ERROR_SHARE for RECOVERY_SECONDS — and the share
of the users logged in at the fault who lost SSO in a journey begun before the next fault — asked for their
password again, or still shown errors at the end (Test 4: ○ none, △ some, × all of them). A `start` ends
an outage rather than beginning one, so it gets no verdict of its own and does not end the one before it: sessions a
restarted store comes back without are charged to the stop that lost them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ...journeys.returning import LOST, REUSED
from ...results.sample import OK, Sample
from .plan import START

RECOVERY_ERROR_SHARE = 0.05  # at most this share of a second's journeys may fail once recovered
RECOVERY_SECONDS = 3  # … for this many seconds in a row (each with at least one journey)
NONE_LOST, SOME_LOST, ALL_LOST, NOT_MEASURED = "○", "△", "×", "-"


def _percentile(values: list[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, math.ceil(share * len(ordered)) - 1)], 1)


def window(samples: Sequence[Sample]) -> dict[str, Any]:
    """Counts and latency of the journeys that ended in one window."""
    ok_ms = [s.duration_ms for s in samples if s.outcome == OK]
    return {
        "journeys": len(samples), "errors": sum(s.outcome != OK for s in samples),
        "sso_lost": sum(s.session == LOST for s in samples),
        "sso_reused": sum(s.session == REUSED and s.outcome == OK for s in samples),
        "mean_ms": round(sum(ok_ms) / len(ok_ms), 1) if ok_ms else None,
        "p95_ms": _percentile(ok_ms, 0.95), "max_ms": round(max(ok_ms), 1) if ok_ms else None,
    }


def recovery_seconds(samples: Sequence[Sample], fault_time: float, until: float) -> float | None:
    """Seconds from the fault until errors stay low (module docstring); None when not within [fault, until)."""
    bins: dict[int, list[int]] = {}
    for sample in samples:
        if fault_time <= sample.end < until:
            counts = bins.setdefault(int(sample.end - fault_time), [0, 0])
            counts[0] += 1
            counts[1] += sample.outcome != OK
    span = math.ceil(until - fault_time)  # a window shorter than RECOVERY_SECONDS is judged on what it has
    for first in range(span):
        seconds = [bins.get(i) for i in range(first, min(first + RECOVERY_SECONDS, span))]
        if all(c is not None and c[1] <= RECOVERY_ERROR_SHARE * c[0] for c in seconds):
            return float(first)
    return None


def reauthenticated(samples: Sequence[Sample], fault_time: float, until: float) -> tuple[int, int]:
    """(users logged in at the fault, how many of them were asked for their password again before `until`)."""
    logged_in, lost, _failed = affected(samples, fault_time, until)
    return len(logged_in), len(lost)


def affected(samples: Sequence[Sample], fault_time: float,
             until: float) -> tuple[set[int], set[int], set[int]]:
    """(users logged in at the fault, those of them asked for their password again, those whose last journey
    still failed) in journeys begun before `until`. A returning user shown only error pages (an IdP that cannot read
    its session store) lost as much as one asked for the password; one whose journey failed while the balancer
    noticed a dead node, and who then got SSO, kept its session."""
    logged_in = {s.user for s in samples if s.outcome == OK and s.end <= fault_time}
    after = sorted((s for s in samples if fault_time <= s.start < until and s.user in logged_in),
                   key=lambda s: s.start)
    last = {s.user: s for s in after}  # each user's last journey of the window
    return (logged_in, {s.user for s in after if s.session == LOST},
            {user for user, s in last.items() if s.outcome != OK})


def verdict(logged_in: int, lost: int) -> str:
    if not logged_in:
        return NOT_MEASURED
    return NONE_LOST if lost == 0 else ALL_LOST if lost >= logged_in else SOME_LOST


def analyse(samples: Sequence[Sample], faults: Sequence[dict[str, Any]], begin: float) -> dict[str, Any]:
    """The failover section of a cell: `faults` are executed fault records (`time`: when each began)."""
    measured = sorted(samples, key=lambda s: s.end)
    end = max((s.end for s in measured), default=begin) + 1e-6
    times = [f["time"] for f in faults if f.get("time") is not None]
    bounds = [begin, *times, end]
    windows = []
    for i, (low, high) in enumerate(zip(bounds, bounds[1:], strict=False)):
        name = "before" if i == 0 else f"after {faults_described(faults)[i - 1]}"
        inside = [s for s in measured if low <= s.end < high]
        windows.append({"window": name, "from_s": round(low - begin, 3), "to_s": round(high - begin, 3),
                        **window(inside)})
    per_fault = []
    returning = any(s.session for s in measured)  # else no journey could tell a kept session from a lost one
    played = [f for f in faults if f.get("time") is not None]
    for i, fault in enumerate(played):
        if fault.get("action") == START:
            continue  # the end of an outage, judged with the fault that began it
        until = next((f["time"] for f in played[i + 1:] if f.get("action") != START), end)
        logged_in, lost, failed = affected(measured, fault["time"], until) if returning else (set(), set(), set())
        users, hit = len(logged_in), len(lost | failed)
        recovery = recovery_seconds(measured, fault["time"], until)
        per_fault.append({"fault": fault["fault"], "at_s": round(fault["time"] - begin, 3),
                          "recovery_s": recovery, "logged_in_users": users, "reauthenticated_users": len(lost),
                          "failed_users": len(failed), "affected_users": hit,
                          "reauthenticated_share": round(len(lost) / users, 3) if users else None,
                          "test4": verdict(users, hit)})
    return {"windows": windows, "faults": per_fault, "returning_users": returning}


def affected_users(fault: dict[str, Any]) -> int:
    """Users the fault cost SSO; results written before errors counted hold the re-authenticated only."""
    return fault.get("affected_users", fault["reauthenticated_users"])


def faults_described(faults: Sequence[dict[str, Any]]) -> list[str]:
    return [f["fault"] for f in faults if f.get("time") is not None]


def lines(section: dict[str, Any]) -> list[str]:
    """The failover section as a few printed lines."""
    out = []
    returning = section.get("returning_users", True)
    for w in section["windows"]:
        latency = f", mean {w['mean_ms']} ms, max {w['max_ms']} ms" if w["mean_ms"] is not None else ""
        sso = f", {w['sso_lost']} SSO lost, {w['sso_reused']} SSO reused" if returning else ""
        out.append(f"  {w['window']} ({w['from_s']:g}–{w['to_s']:g} s): {w['journeys']} journeys, "
                   f"{w['errors']} errors{sso}{latency}")
    for f in section["faults"]:
        recovery = "not within the run" if f["recovery_s"] is None else f"{f['recovery_s']:g} s"
        if not section.get("returning_users", True):
            out.append(f"  {f['fault']}: recovered after {recovery} (no SSO sessions measured: returning users "
                       "are a SAML run's --reuse-session)")
            continue
        out.append(f"  Test 4 {f['test4']} {f['fault']}: {affected_users(f)} of {f['logged_in_users']} logged-in users "
                   f"lost SSO ({f['reauthenticated_users']} asked for their password again, "
                   f"{f.get('failed_users', 0)} still shown errors); recovered after {recovery}")
    return out
