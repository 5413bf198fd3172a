"""The open-model options of `authbench run` (--rate, --levels, …) and the `authbench capacity` command.

`capacity` is `run` with the capacity search as its last level: the same target, journey and results
options, and an SLO it cannot do without.
"""

from __future__ import annotations

import argparse
import secrets
from typing import Any

from ..errors import AuthbenchError

DEFAULT_MAX_USERS = "1000"
SEED_BITS = 31  # a Poisson run without --seed draws one and records it, so it can be replayed


def add_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("open model (arrival rates instead of --pattern)")
    group.add_argument("--rate", help="start journeys at this rate, e.g. 100/s or 6000/min (with --duration)")
    group.add_argument("--duration", help="how long --rate is measured, e.g. 10m (after --warmup)")
    group.add_argument("--levels", help="NAME=RATE:DURATION[:WARMUP][,…][,max], e.g. typical=20/s:10m,peak=100/s:10m;"
                       " max runs the capacity search last (needs --slo)")
    group.add_argument("--arrivals", choices=("constant", "poisson"), default="constant",
                       help="constant spacing (default) or Poisson arrivals, seeded by --seed "
                       "(without it a seed is drawn and recorded)")
    group.add_argument("--max-users", default=DEFAULT_MAX_USERS,
                       help=f"at most this many journeys in flight (default {DEFAULT_MAX_USERS})")
    group.add_argument("--queue-for", default="1s",
                       help="a start due while --max-users are busy waits this long, then is dropped (default 1s)")
    group.add_argument("--late-after", default="10ms",
                       help="a start this much after its intended time counts as late (default 10ms)")
    group.add_argument("--slo", help="e.g. 'p99<500ms,errors<1%%' (latency from the intended start)")
    search = parser.add_argument_group("capacity search (--levels …,max or `authbench capacity`)")
    search.add_argument("--start-rate", default="10/s", help="first step (default 10/s)")
    search.add_argument("--growth", type=float, default=2.0, help="each step up multiplies the rate (default 2)")
    search.add_argument("--precision", default="5%", help="refine until the bracket is this narrow (default 5%%)")
    search.add_argument("--max-rate", default="2000/s", help="never step above this rate (default 2000/s)")
    search.add_argument("--step-duration", default="30s", help="measured time of each step (default 30s)")
    search.add_argument("--step-warmup", default="5s", help="warm-up before each step (default 5s)")
    parser.set_defaults(open_pattern_default=parser.get_default("pattern"), capacity=False)


def wanted(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "rate", None) or getattr(args, "levels", None) or getattr(args, "capacity", False))


def plan_text(args: argparse.Namespace, plan: Any) -> str:
    describe = getattr(plan, "describe", None)
    return describe() if describe else args.pattern


def _percent(text: str) -> float:
    from ..patterns import PlanError

    try:
        value = float(text[:-1]) / 100 if text.strip().endswith("%") else float(text)
    except ValueError:
        raise PlanError(f"--precision {text!r} is not a share like 5% or 0.05") from None
    if not 0 < value <= 0.5:
        raise PlanError(f"--precision {text!r} must be more than 0 and at most 50%")
    return value


def level_plan(args: argparse.Namespace, warmup: float, repeat: int) -> Any:
    """The LevelPlan the options ask for; AuthbenchError (exit 2) on any bad or contradictory value."""
    from ..patterns import PlanError

    try:
        return _level_plan(args, warmup, repeat)
    except PlanError as exc:
        raise AuthbenchError(str(exc)) from None


def _level_plan(args: argparse.Namespace, warmup: float, repeat: int) -> Any:
    from ..openmodel import rates
    from ..patterns import MAX_USERS, PlanError, parse_duration

    if args.pattern != args.open_pattern_default:
        raise PlanError("give --pattern (closed model) or --rate/--levels (open model), not both")
    if args.rate and args.levels:
        raise PlanError("give --rate with --duration, or --levels, not both")
    if bool(args.rate) != bool(args.duration):
        raise PlanError("--rate and --duration go together (e.g. --rate 100/s --duration 10m)")
    rates.check_repeat(repeat)
    levels: tuple = ()
    wants_max = args.capacity
    if args.rate:
        duration = parse_duration(args.duration)
        if duration <= 0:
            raise PlanError("--duration must be more than 0")
        rate = rates.parse_rate(args.rate)
        levels = (rates.Level(rates.format_rate(rate), rate, duration, warmup),)
    elif args.levels:
        levels, listed_max = rates.parse_levels(args.levels, warmup)
        wants_max = wants_max or listed_max
    slo = rates.parse_slo(args.slo) if args.slo else None
    try:
        users = int(args.max_users)
    except ValueError:
        raise PlanError(f"--max-users {args.max_users!r} is not a whole number") from None
    if not 1 <= users <= MAX_USERS:
        raise PlanError(f"--max-users must be 1..{MAX_USERS}")
    seed = args.seed if args.seed is not None or args.arrivals != rates.POISSON else secrets.randbits(SEED_BITS)
    arrivals = rates.Arrivals(args.arrivals, seed, users, parse_duration(args.queue_for),
                              parse_duration(args.late_after))
    if wants_max and slo is None:
        raise PlanError("the capacity search (max) needs --slo, e.g. --slo 'p99<500ms,errors<1%'")
    search = _search(args) if wants_max else None
    return rates.LevelPlan(levels, arrivals, repeat, search, slo)


def _search(args: argparse.Namespace) -> Any:
    from ..openmodel import rates
    from ..patterns import PlanError, parse_duration

    start, ceiling = rates.parse_rate(args.start_rate), rates.parse_rate(args.max_rate)
    if start > ceiling:
        raise PlanError(f"--start-rate {args.start_rate} is above --max-rate {args.max_rate}")
    if not 1 < args.growth <= 10:
        raise PlanError(f"--growth {args.growth:g} must be more than 1 and at most 10")
    hold = parse_duration(args.step_duration)
    if hold <= 0:
        raise PlanError("--step-duration must be more than 0")
    return rates.Search(start, args.growth, _percent(args.precision), ceiling, hold, parse_duration(args.step_warmup))
