"""`authbench run --fault … --pace …`: the options of a failover run, checked before any load."""

from __future__ import annotations

import argparse

from ..errors import AuthbenchError

DEFAULT_FAULT_PACE = 1.0  # seconds between a user's journey starts in a fault run without --pace


def add_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("faults (Test 4: failover under load, docs/failover.md)")
    group.add_argument("--fault", action="append", default=[], metavar="PLAN",
                       help="'at=30s stop idp-a; at=90s start idp-a' (lab components) or "
                       "'at=30s run=COMMAND' (real clusters); times from the start of the measured phase; "
                       "several allowed")


def add_pace_option(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--pace", metavar="DURATION",
                       help="each user starts a journey at most every DURATION, think time included, so a run "
                       f"measures time, not journeys (default: back to back; {DEFAULT_FAULT_PACE:g}s with --fault)")


def pace(args: argparse.Namespace, cell_limit: float | None = None) -> float:
    """--pace in seconds; refused (exit 2) when it is longer than `cell_limit`, the cell time limit: a user would
    wait past the end of its cell, so the run would hang until the limit cut it."""
    from ..patterns import PlanError, parse_duration

    if args.pace is None:
        return DEFAULT_FAULT_PACE if args.fault else 0.0
    try:
        value = parse_duration(args.pace)
    except PlanError as exc:
        raise AuthbenchError(f"--pace: {exc}") from None
    if cell_limit is not None and value > cell_limit:
        raise AuthbenchError(f"--pace {args.pace.strip()}: {value:g} s is longer than the cell time limit "
                             f"{cell_limit:g} s, so a user would still be waiting when its cell is cut; shorten "
                             "--pace or raise --cell-time-limit")
    return value
