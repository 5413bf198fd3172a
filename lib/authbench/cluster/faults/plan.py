"""Fault plans: what to break, and when, during a measured phase (`--fault 'at=30s stop idp-a; at=90s start idp-a'`).

A plan is parsed and checked before any load, so a typo costs one line and exit 2, not a run: a bad
time, an unknown lab component or a malformed action is refused with what to write instead.

Grammar, per `;`-separated item: `at=DURATION ACTION`, where ACTION is
- `stop COMPONENT` / `start COMPONENT`: a component of the embedded lab (`idp-a`, `memcached-a`,
  `redis-primary`, `lb`, or a full name such as `memcached/idp-b`);
- `[timeout=DURATION] run=COMMAND`: a command for a real cluster (`run=kubectl delete pod idp-0`),
  split like a shell would split it but run without a shell; the rest of the item is the command
  (a `;` inside quotes stays in it: `run=sh -c 'a; b'`).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ...embedded_lab import node_component
from ...errors import AuthbenchError
from ...patterns import PlanError, parse_duration

STOP, START, RUN = "stop", "start", "run"
LAB_ACTIONS = (STOP, START)
DEFAULT_RUN_TIMEOUT = 60.0  # seconds a run=COMMAND may take before it is killed
MAX_AT = 24 * 3600.0  # a fault a day after the start is a typo
MAX_RUN_TIMEOUT = 3600.0
EXAMPLE = "e.g. 'at=30s stop idp-a; at=90s start idp-a' or 'at=30s run=kubectl delete pod idp-0'"


class FaultError(AuthbenchError, ValueError):
    """A fault plan that cannot be run; the message is one line naming the item and the fix."""


@dataclass(frozen=True)
class Fault:
    at: float  # seconds after the start of the measured phase
    action: str  # STOP, START or RUN
    target: str  # the lab component, or the command line as given
    timeout: float = DEFAULT_RUN_TIMEOUT  # RUN only

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.target)

    def describe(self) -> str:
        what = f"run={self.target}" if self.action == RUN else f"{self.action} {self.target}"
        return f"at={self.at:g}s {what}"


def parse_faults(texts: Iterable[str]) -> list[Fault]:
    """Every `--fault` option's items, in time order (items at the same time keep their written order)."""
    faults = [parse_item(item.strip()) for text in texts for item in split_items(text) if item.strip()]
    return sorted(faults, key=lambda fault: fault.at)


def split_items(text: str) -> list[str]:
    """Split at each `;` outside single or double quotes."""
    items, current, quote = [], [], ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == ";":
            items.append("".join(current))
            current = []
            continue
        current.append(char)
    return [*items, "".join(current)]


def parse_item(item: str) -> Fault:
    head, _, rest = item.partition(" ")
    if not head.startswith("at="):
        raise FaultError(f"--fault {item!r}: begin with at=TIME ({EXAMPLE})")
    at = _duration(head[3:], item, "at")
    if at > MAX_AT:
        raise FaultError(f"--fault {item!r}: at={head[3:]} is more than a day after the start")
    rest = rest.strip()
    timeout = DEFAULT_RUN_TIMEOUT
    if rest.startswith("timeout="):
        value, _, rest = rest.partition(" ")
        timeout = _duration(value[len("timeout="):], item, "timeout")
        if not 0 < timeout <= MAX_RUN_TIMEOUT:
            raise FaultError(f"--fault {item!r}: timeout must be more than 0 and at most {MAX_RUN_TIMEOUT:g}s")
        rest = rest.strip()
        if not rest.startswith("run="):
            raise FaultError(f"--fault {item!r}: timeout= belongs to a run=COMMAND action")
    if rest.startswith("run="):
        command = rest[len("run="):].strip()
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise FaultError(f"--fault {item!r}: cannot split the command: {exc}") from None
        if not argv:
            raise FaultError(f"--fault {item!r}: run= needs a command")
        return Fault(at, RUN, command, timeout)
    words = rest.split()
    if len(words) != 2 or words[0] not in LAB_ACTIONS:
        raise FaultError(f"--fault {item!r}: the action must be 'stop COMPONENT', 'start COMPONENT' or "
                         f"'run=COMMAND' ({EXAMPLE})")
    return Fault(at, words[0], words[1])


def _duration(text: str, item: str, what: str) -> float:
    try:
        return parse_duration(text)
    except PlanError:
        raise FaultError(f"--fault {item!r}: {what}={text!r} is not a time like 30s, 1.5m or 500ms") from None


def resolve_components(faults: list[Fault], known: Iterable[str], backend: str | None) -> list[Fault]:
    """Lab actions with full component names (`idp-a` → `<backend>/idp-a`); FaultError for an unknown one.

    A node named as either IdP names it (`idp-b`, `keycloak-b`) is node B of the cluster measured, so one plan
    stops the right node in a `compare` over the reference IdP's and Keycloak's clusters."""
    known = list(known)
    resolved = []
    for fault in faults:
        if fault.action in LAB_ACTIONS:
            name = fault.target
            if backend and (node := node_component(backend, name)) in known:
                name = node
            elif name not in known and backend and f"{backend}/{name}" in known:
                name = f"{backend}/{name}"
            if name not in known:
                raise FaultError(f"--fault '{fault.describe()}': the lab has no component {fault.target!r}; "
                                 f"valid: {', '.join(short_names(known, backend))}")
            fault = Fault(fault.at, fault.action, name, fault.timeout)
        resolved.append(fault)
    return resolved


def short_names(known: list[str], backend: str | None) -> list[str]:
    """The names to suggest: the target cluster's without its prefix, then the shared ones."""
    mine = [name.split("/", 1)[1] for name in known if backend and name.startswith(backend + "/")]
    return mine + [name for name in known if "/" not in name]


def measured_lengths(plan: Any) -> list[tuple[str, float]]:
    """(cell, measured seconds) of the cells whose length is known before the run: arrival-rate levels and the
    capacity search's steps. A pattern's (closed model) depends on the target's speed: none."""
    from ...openmodel.rates import LevelPlan

    if not isinstance(plan, LevelPlan):
        return []
    known = [(f"level {level.label}", level.duration) for level in plan.levels]
    return known + ([("each capacity step", plan.search.hold)] if plan.search is not None else [])


def check_reach(faults: list[Fault], plan: Any) -> None:
    """Refuse a `start` that cannot fall inside a measured phase of known length (FaultError): it would only be
    played when the cell ends, after an outage measured to the end. Where the length is not known, a `start`
    the cell does not reach is played at its end, with a warning (execute.py)."""
    for fault in faults:
        if fault.action != START:
            continue
        for cell, seconds in measured_lengths(plan):
            if fault.at >= seconds:
                raise FaultError(f"--fault '{fault.describe()}': {cell} measures {seconds:g} s, so this start "
                                 f"would fall after it and leave {fault.target} stopped to the end; start it "
                                 f"before {seconds:g}s")


def needs_lab(faults: list[Fault]) -> bool:
    return any(fault.action in LAB_ACTIONS for fault in faults)
