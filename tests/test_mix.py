"""The arithmetic of a --mix (authbench.mix): exact, deterministic, the same in every process."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from authbench.kinds import KINDS
from authbench.mix import JOURNEY_NAME, MixError, parse_mix, slot_sequence, split_users
from authbench.patterns import Pattern
from authbench.phases import PhaseController


@pytest.mark.parametrize(("users", "weights", "split"), [
    (10, [20, 80], [2, 8]), (7, [1, 1, 1], [3, 2, 2]), (6, [1, 3], [2, 4]), (4, [1, 3], [1, 3]),
    (3, [1, 5], [1, 2]), (2, [1, 9], [0, 2]), (1, [1, 1], [1, 0]), (100, [1, 5], [17, 83])])
def test_users_split_by_largest_remainder(users, weights, split):
    assert split_users(users, weights) == split


@pytest.mark.parametrize("weights", [[1, 5], [20, 80], [3, 2, 7], [1, 1]])
def test_slots_by_smooth_round_robin_hold_every_prefix_within_one(weights):
    sequence = slot_sequence(weights)
    total = sum(weights)
    assert len(sequence) == total // math.gcd(*weights)  # one period: the sequence repeats
    for n in range(1, 3 * len(sequence) + 1):
        slots = [sequence[i % len(sequence)] for i in range(n)]
        for position, weight in enumerate(weights):
            assert abs(slots.count(position) - n * weight / total) < 1, (n, position)


def test_a_user_joins_among_its_journeys_indexes():
    controller = PhaseController(Pattern(5, 1), 1, 0.0, split=[2, 3])
    assert [controller.join(1), controller.join(0), controller.join(1), controller.join(0), controller.join(0)] == [
        2, 0, 3, 1, -1]


@pytest.mark.parametrize(("text", "message"), [
    ("", "--mix is empty"), ("a=1,a=1", "names 'a' twice"), ("a=1.5", "give a whole number"),
    ("A=1", "is not NAME=WEIGHT"), ("a=0", "add up to 0"), ("a=10001", "0..10000")])
def test_bad_mixes(text, message):
    with pytest.raises(MixError, match=message):
        parse_mix(text)


def test_a_weight_of_zero_leaves_the_journey_out():
    assert [part.name for part in parse_mix("a=0,b=2")] == ["b"]


@pytest.mark.parametrize("kind", KINDS, ids=[kind.name for kind in KINDS])
def test_every_kinds_variants_override_its_own_options(kind):
    """The contract of Kind.variants: names --mix accepts, each overriding fields of the kind's options only."""
    own = set(kind.option_names())
    for name, overrides in kind.variants.items():
        assert JOURNEY_NAME.match(name), name
        assert set(overrides) <= own, (name, set(overrides) - own)
        assert kind.variant(kind.options(), name) == replace(kind.options(), **overrides)
