"""What a fault did to the users: windows aligned to the fault times, recovery, and lost SSO sessions.

Journeys are placed by the moment their outcome was known (their end), so a journey cut by a fault
counts after it. Per window: journeys, errors, SSO sessions lost and reused, and latency of the
successful journeys (the spike).

Per fault (a `stop` or a `run=` command):
- **Its end** (`ended_at_s`, `ended_by`): the `start` of the same target played later in the plan; a stop no
  start undoes, and a command, end when their own action ended (the record's time + seconds).
- **Recovery** (`recovery_s`): seconds from the fault's end to the first window of WINDOW_SECONDS in which
  returning users get SSO again without errors. Only journeys begun after the fault's end count (one in flight
  through the outage proves nothing), placed by their end: the window holds at least one, none failed, and —
  when the run has returning users and some had logged in before the fault — at least one such user's
  journey reused its SSO session (`reused` and OK). Without returning users: the first window with a
  journey and no error. None when no such window begins before the next stop (or command), or the end of
  the measured phase.
- **Affected users**: of the users logged in at the fault (a journey of theirs succeeded before it, in the
  warm-up too), those who lost SSO in a journey begun before
  the next fault — asked for their password again, or whose last journey still failed (an IdP that cannot
  read its session store may show an error page instead of the login form) — Test 4: ○ none, △ some,
  × all of them.
- **verdict_text**: the same in one plain sentence.

A `start` ends an outage rather than beginning one, so it gets no verdict of its own and does not end the one
before it: sessions a restarted store comes back without are charged to the stop that lost them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from ...journeys.returning import LOST, REUSED
from ...results.sample import OK, Sample
from .plan import RUN, START, STOP

WINDOW_SECONDS = 1.0  # recovery is found in windows this long, counted from the fault's end
NONE_LOST, SOME_LOST, ALL_LOST, NOT_MEASURED = "○", "△", "×", "-"
ENDED_BY_STOP = "the stop itself"  # a stop no later start undoes ends when its own action ended
ENDED_BY_COMMAND = "the command itself"  # a run=COMMAND fault ends when its command ended


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


def recovery_seconds(samples: Sequence[Sample], ended_at: float, until: float,
                     returning: set[int] | None = None) -> float | None:
    """Seconds from the fault's end to the first window with journeys begun after it, no error and, given the users
    logged in before the fault (`returning`), one of them served by SSO; None when none begins before `until`."""
    bins: dict[int, list[Sample]] = {}
    for sample in samples:
        if ended_at <= sample.start and sample.end < until:
            bins.setdefault(int((sample.end - ended_at) // WINDOW_SECONDS), []).append(sample)
    for index in range(max(0, math.ceil((until - ended_at) / WINDOW_SECONDS))):
        inside = bins.get(index, [])
        if not inside or any(s.outcome != OK for s in inside):
            continue
        if returning and not any(s.user in returning and s.session == REUSED for s in inside):
            continue
        return round(index * WINDOW_SECONDS, 3)
    return None


def reauthenticated(samples: Sequence[Sample], fault_time: float, until: float) -> tuple[int, int]:
    """(users logged in at the fault, how many of them were asked for their password again before `until`)."""
    logged_in, lost, _failed = affected(samples, fault_time, until)
    return len(logged_in), len(lost)


def affected(samples: Sequence[Sample], fault_time: float, until: float,
             warmed: Iterable[int] = ()) -> tuple[set[int], set[int], set[int]]:
    """(users logged in at the fault, those of them asked for their password again, those whose last journey
    still failed) in journeys begun before `until`. A returning user shown only error pages (an IdP that cannot read
    its session store) lost as much as one asked for the password; one whose journey failed while the balancer
    noticed a dead node, and who then got SSO, kept its session. `warmed`: users who logged in during the warm-up."""
    logged_in = {s.user for s in samples if s.outcome == OK and s.end <= fault_time} | set(warmed)
    after = sorted((s for s in samples if fault_time <= s.start < until and s.user in logged_in),
                   key=lambda s: s.start)
    last = {s.user: s for s in after}  # each user's last journey of the window
    return (logged_in, {s.user for s in after if s.session == LOST},
            {user for user, s in last.items() if s.outcome != OK})


def verdict(logged_in: int, lost: int) -> str:
    if not logged_in:
        return NOT_MEASURED
    return NONE_LOST if lost == 0 else ALL_LOST if lost >= logged_in else SOME_LOST


def action_of(record: dict[str, Any]) -> tuple[str, str]:
    """(action, target) of a fault record; records written before `target` was kept are read from their text."""
    text = record["fault"].partition(" ")[2]  # without `at=…`
    if text.startswith("timeout=") or text.startswith("run="):
        return RUN, text.partition("run=")[2]
    action, _, target = text.partition(" ")
    return record.get("action", action), record.get("target", target)


def plain(record: dict[str, Any]) -> str:
    """A fault in words: `stop memcached-a`, or a command by its program only (its arguments may hold a token)."""
    action, target = action_of(record)
    if action != RUN:
        return f"{action} {target}"
    words = target.split()
    return f"run={words[0] if words else ''}" + (" …" if len(words) > 1 else "")


def fault_end(played: Sequence[dict[str, Any]], index: int) -> tuple[float, str]:
    """(when the fault at `index` ended, what ended it): a later played `start` of its target, else its own action."""
    fault = played[index]
    action, target = action_of(fault)
    if action == STOP:
        for later in played[index + 1:]:
            if action_of(later) == (START, target):
                return later["time"], plain(later)
    return fault["time"] + (fault.get("seconds") or 0.0), ENDED_BY_STOP if action == STOP else ENDED_BY_COMMAND


def sentence(entry: dict[str, Any], returning: bool, cut_by: str = "") -> str:
    """A fault's verdict in one sentence a manager reads; `cut_by` names what ended the search for a recovery
    ("" for the end of the run)."""
    users, failed = entry["logged_in_users"], entry.get("failed_users", 0)
    parts = []
    if returning and users:
        parts.append(f"{affected_users(entry)} of {users} logged-in users lost single sign-on "
                     f"({entry['reauthenticated_users']} asked for their password again, {failed} shown errors)")
    elif returning:
        parts.append("no user had logged in before it, so no lost session could be seen")
    what = "SSO worked again" if returning and users else "journeys succeeded again without errors"
    recovery, ended_by = entry.get("recovery_s"), entry.get("ended_by")
    if ended_by is None:  # results written before recovery counted from the fault's end
        parts.append(f"errors stayed low {recovery:g} s after it began" if recovery is not None
                     else "errors did not stay low again before the next fault or the run's end")
    elif recovery is not None:
        after = {ENDED_BY_STOP: "the stop ended (no start followed it)",
                 ENDED_BY_COMMAND: "the command ended"}.get(ended_by, ended_by)
        parts.append(f"{what} {recovery:g} s after {after}")
    else:
        what = "SSO did not work again" if returning and users else "journeys did not succeed without errors again"
        parts.append(f"{what} before " + (f"the next fault ({cut_by})" if cut_by else "the run ended"))
    return f"{plain(entry)}: {'; '.join(parts)}."


def analyse(samples: Sequence[Sample], faults: Sequence[dict[str, Any]], begin: float,
            warmed: Iterable[int] = ()) -> dict[str, Any]:
    """The failover section of a cell: `faults` are executed fault records (`time`: when each began), `warmed`
    the users who logged in during the cell's warm-up."""
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
    keepers, warmed = measured, set(warmed)
    if any(s.journey for s in measured):  # a --mix: only its returning users' journeys keep or lose a session
        keeping = {s.journey for s in measured if s.session}  # the journeys classed fresh, reused, lost…
        keepers = [s for s in measured if s.journey in keeping]
        warmed &= {s.user for s in keepers}
    played = [f for f in faults if f.get("time") is not None]
    for i, fault in enumerate(played):
        if action_of(fault)[0] == START:
            continue  # the end of an outage, judged with the fault that began it
        following = next((f for f in played[i + 1:] if action_of(f)[0] != START), None)
        until = following["time"] if following is not None else end
        nobody: tuple[set[int], set[int], set[int]] = (set(), set(), set())
        logged_in, lost, failed = affected(keepers, fault["time"], until, warmed) if returning else nobody
        users, hit = len(logged_in), len(lost | failed)
        ended_at, ended_by = fault_end(played, i)
        entry = {"fault": fault["fault"], "at_s": round(fault["time"] - begin, 3),
                 "ended_at_s": round(ended_at - begin, 3), "ended_by": ended_by,
                 "recovery_s": recovery_seconds(measured, ended_at, until, logged_in),
                 "logged_in_users": users, "reauthenticated_users": len(lost),
                 "failed_users": len(failed), "affected_users": hit,
                 "reauthenticated_share": round(len(lost) / users, 3) if users else None,
                 "test4": verdict(users, hit)}
        entry["verdict_text"] = sentence(entry, returning, plain(following) if following is not None else "")
        per_fault.append(entry)
    return {"windows": windows, "faults": per_fault, "returning_users": returning}


def affected_users(fault: dict[str, Any]) -> int:
    """Users the fault cost SSO; results written before errors counted hold the re-authenticated only."""
    return fault.get("affected_users", fault["reauthenticated_users"])


def faults_described(faults: Sequence[dict[str, Any]]) -> list[str]:
    return [f["fault"] for f in faults if f.get("time") is not None]


def lines(section: dict[str, Any]) -> list[str]:
    """The failover section as a few printed lines (results written before `verdict_text` too)."""
    out = []
    returning = section.get("returning_users", True)
    for w in section["windows"]:
        latency = f", mean {w['mean_ms']} ms, max {w['max_ms']} ms" if w["mean_ms"] is not None else ""
        sso = f", {w['sso_lost']} SSO lost, {w['sso_reused']} SSO reused" if returning else ""
        out.append(f"  {w['window']} ({w['from_s']:g}–{w['to_s']:g} s): {w['journeys']} journeys, "
                   f"{w['errors']} errors{sso}{latency}")
    for f in section["faults"]:
        text = f.get("verdict_text") or sentence(f, returning)
        if returning:
            out.append(f"  Test 4 {f['test4']} {text}")
        else:
            out.append(f"  {text} (no SSO sessions measured: returning users are a SAML run's --reuse-session)")
    return out
