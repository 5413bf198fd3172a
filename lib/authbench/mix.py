"""Traffic mixes: journeys run side by side with weights, exactly and deterministically (docs/running.md).

`--mix login=20,returning-sso=80` names journeys (a kind's variants, or a plan file's [journey.NAME]
tables) and their weights. What the weights mean is fixed here, so the counts can be asserted:

- a pattern USERSxRUNS splits its USERS by weight with largest-remainder rounding (ties to the journey
  named first); users 0..n0-1 run the first journey, the next n1 the second, …; each user does RUNS
  journeys of its own kind, so journey i has exactly n_i × RUNS tests. A journey left without a user
  is refused.
- an arrival rate gives its slots to the journeys by smooth weighted round robin over the slot index
  (nginx's): every window of W slots (W = the weights' sum over their common divisor) holds exactly
  w_i/gcd slots of journey i, and any first n slots hold n·w_i/W of them, give or take one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import AuthbenchError

MAX_WEIGHT = 10_000
MAX_JOURNEYS = 16
JOURNEY_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
MIX_HINT = "give NAME=WEIGHT[,NAME=WEIGHT…], e.g. --mix login=20,returning-sso=80"


class MixError(AuthbenchError):
    """A --mix that cannot run; the message names the fix."""


@dataclass(frozen=True)
class Part:
    name: str
    weight: int


def parse_mix(text: str) -> tuple[Part, ...]:
    """NAME=WEIGHT,… into parts, each name once, whole weights 0..MAX_WEIGHT with a total above 0."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise MixError(f"--mix is empty; {MIX_HINT}")
    parts: list[Part] = []
    for item in items:
        name, equals, weight = (piece.strip() for piece in item.partition("="))
        if not equals or not JOURNEY_NAME.match(name):
            raise MixError(f"--mix entry {item!r} is not NAME=WEIGHT; {MIX_HINT}")
        if not weight.isascii() or not weight.isdigit() or int(weight) > MAX_WEIGHT:
            raise MixError(f"--mix weight of {name!r} is {weight!r}; give a whole number 0..{MAX_WEIGHT}")
        if any(part.name == name for part in parts):
            raise MixError(f"--mix names {name!r} twice; give each journey once")
        parts.append(Part(name, int(weight)))
    if len(parts) > MAX_JOURNEYS:
        raise MixError(f"--mix names {len(parts)} journeys; give at most {MAX_JOURNEYS}")
    if not sum(part.weight for part in parts):
        raise MixError(f"--mix weights add up to 0; give at least one journey a weight above 0 ({MIX_HINT})")
    return tuple(part for part in parts if part.weight)


def split_users(users: int, weights: Sequence[int]) -> list[int]:
    """USERS split by weight, largest remainder first (ties to the earlier journey); sums to `users`."""
    total = sum(weights)
    exact = [users * weight / total for weight in weights]
    counts = [math.floor(share) for share in exact]
    order = sorted(range(len(weights)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in order[:users - sum(counts)]:
        counts[i] += 1
    return counts


def slot_sequence(weights: Sequence[int]) -> list[int]:
    """One period of smooth weighted round robin: the journey (position) of each arrival slot."""
    divisor = math.gcd(*weights)
    reduced = [weight // divisor for weight in weights]
    total = sum(reduced)
    current = [0] * len(reduced)
    sequence = []
    for _ in range(total):
        for i, weight in enumerate(reduced):
            current[i] += weight
        chosen = max(range(len(reduced)), key=lambda i: (current[i], -i))
        current[chosen] -= total
        sequence.append(chosen)
    return sequence


def owner_of(split: Sequence[int]) -> list[int]:
    """Per user index of a pattern, the position of the journey it runs (users split in order)."""
    return [position for position, count in enumerate(split) for _ in range(count)]


def weights_of(user_classes: Sequence[type]) -> list[int] | None:
    """The mix weights of an environment's user classes, or None when it runs one journey."""
    weights = [getattr(cls, "mix_weight", 0) for cls in user_classes]
    return weights if len(user_classes) > 1 or any(weights) else None


def split_classes(user_classes: Sequence[Any], users: int) -> list[int] | None:
    """A pattern's users per class (set as Locust's fixed_count, so its dispatcher spawns exactly them); None for
    one journey."""
    weights = weights_of(user_classes)
    if weights is None:
        return None
    split = split_users(users, weights)
    for cls, count in zip(user_classes, split, strict=True):
        cls.fixed_count = count
    return split


def check_patterns(parts: Sequence[Part], patterns: Sequence[Any]) -> None:
    """Refuse a pattern whose users leave a journey of the mix without a user (it would not run at all)."""
    weights = [part.weight for part in parts]
    for pattern in patterns:
        split = split_users(pattern.users, weights)
        empty = [part.name for part, count in zip(parts, split, strict=True) if not count]
        if empty:
            need = math.ceil(sum(weights) / min(weights))
            raise MixError(f"pattern {pattern.label} leaves {', '.join(empty)} of --mix without a user (users are "
                           f"split by weight); give more users ({need} always do) or weights closer together")


def describe(parts: Sequence[Part]) -> str:
    return ",".join(f"{part.name}={part.weight}" for part in parts)
