"""A --mix as one journey for the run path: each named journey prepared by its own kind, side by side.

Each journey of the mix is a kind's journey (a variant of the run's kind, or a plan file's [journey.NAME]
with its own target, kind and options) and gets a user class of its own: its kind's user class under the
journey's name, with its own settings and weight (user.JourneyUser's `mix_*`). The run path then runs
the classes together: users split by weight in a pattern, slots by weight at a rate (mix.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import AuthbenchError
from .base import CommonOptions, Journey, Kind
from .preflight import PREFLIGHT_FILE


@dataclass(frozen=True)
class MixEntry:
    """One journey of a mix, its options final (the variant's overrides applied)."""

    name: str
    weight: int
    kind: Kind
    common: CommonOptions
    options: Any
    variant: str = ""  # the kind's variant it is, if any


def prepare(entries: list[MixEntry]) -> Journey:
    """Each entry's journey by its kind, then one Journey of them all (the first one's settings as the run's)."""
    journeys = [entry.kind.prepare(entry.common, entry.options) for entry in entries]
    classes = tuple(_user_class(position, entry, journey)
                    for position, (entry, journey) in enumerate(zip(entries, journeys, strict=True)))
    first = journeys[0]
    backends = {journey.backend for journey in journeys if journey.backend}
    if len(backends) > 1:
        raise AuthbenchError(f"--mix loads several lab clusters ({', '.join(sorted(backends))}); a run loads one "
                             "cluster at a time: give the journeys one lab:BACKEND")
    described = [{"name": entry.name, "weight": entry.weight, "kind": entry.kind.name, "variant": entry.variant,
                  **journey.record} for entry, journey in zip(entries, journeys, strict=True)]
    record = {**first.record, "journey": "mix", "mix": described}
    lab = next((journey for journey in journeys if journey.backend), None) or first
    return Journey(
        classes[0], first.settings, record, first.target, first.load_key,
        lambda: MixCheck([(entry.name, journey.preflight()) for entry, journey in zip(entries, journeys,
                                                                                   strict=True)]),
        lab_dir=lab.lab_dir or next((journey.lab_dir for journey in journeys if journey.lab_dir), ""),
        backend=lab.backend, sampled=tuple(dict.fromkeys(name for journey in journeys for name in journey.sampled)),
        churn_port=next((journey.churn_port for journey in journeys if journey.churn_port), None),
        summary_line="; ".join(f"{entry.name}: {journey.summary_line}" for entry, journey
                               in zip(entries, journeys, strict=True) if journey.summary_line),
        user_classes=classes, also_loads=tuple(journey.load_key for journey in journeys[1:]))


def _user_class(position: int, entry: MixEntry, journey: Journey) -> type:
    """The kind's user class as the mix's journey `entry`: named for Locust (unique, the same in every worker
    process) and for the statistics, with its own settings."""
    base = journey.user_class
    name = f"{base.__name__}_{position}_{re.sub(r'[^A-Za-z0-9]', '_', entry.name)}"
    # its statistics entry: the kind's with the journey's name, apart from any step's (a step may be called "bind")
    return type(name, (base,), {"__module__": base.__module__, "journey_name": f"{base.journey_name} ({entry.name})",
                                "mix_journey": entry.name, "mix_weight": entry.weight, "mix_position": position,
                                "mix_settings": journey.settings, "fixed_count": 0})


@dataclass
class MixCheck:
    """Every journey's preflight, each line under its name; the first problem is the run's."""

    checks: list[tuple[str, Any]]

    @property
    def keep_on_failure(self) -> bool:
        return any(check.keep_on_failure for _, check in self.checks)

    def lines(self) -> list[str]:
        return [f"[{name}] {line}" for name, check in self.checks for line in check.lines()]

    def problem(self, saved: Path | None = None) -> str | None:
        for name, check in self.checks:
            problem = check.problem(saved)
            if problem:
                return f"--mix journey {name}: {problem}"
        return None

    def save(self, folder: Path) -> Path:
        """preflight.txt of every journey, one after the other under its name."""
        parts = []
        for name, check in self.checks:
            parts.append(f"== {name}\n" + check.save(folder).read_text(encoding="utf-8"))
        path = folder / PREFLIGHT_FILE
        path.write_text("\n".join(parts), encoding="utf-8")
        return path
