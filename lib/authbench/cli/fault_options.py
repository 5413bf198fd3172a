"""`authbench run --fault … --pace …`: the options of a failover run, checked before any load."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from . import CliError

if TYPE_CHECKING:
    from ..cluster.faults.plan import Fault

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


def pace(args: argparse.Namespace) -> float:
    from ..patterns import PlanError, parse_duration

    if args.pace is None:
        return DEFAULT_FAULT_PACE if args.fault else 0.0
    try:
        value = parse_duration(args.pace)
    except PlanError as exc:
        raise CliError(f"--pace: {exc}") from None
    return value


def faults(args: argparse.Namespace, backend: str | None, lab_run_dir: str) -> list[Fault]:
    """The fault plan, lab components resolved against the running lab; CliError (exit 2) when it cannot run."""
    from ..cluster.faults.plan import FaultError, needs_lab, parse_faults, resolve_components

    try:
        plan = parse_faults(args.fault)
        if needs_lab(plan):
            from authbench_lab import lab

            state = lab.read_state(lab_run_dir)
            if state is None:
                raise CliError(f"--fault stop/start act on the embedded lab, and no lab is in {lab_run_dir}; "
                               "start it with 'authbench lab up', or give run=COMMAND for another cluster")
            plan = resolve_components(plan, state["components"], backend)
    except FaultError as exc:
        raise CliError(str(exc)) from None
    return plan


def apply(args: argparse.Namespace, settings: Any, config: dict[str, Any]) -> tuple[list[Fault], str]:
    """For a journey without clusters (LDAP, database, privacyIDEA): the checked --fault plan and --pace put
    into its settings and its record; (faults, the lab folder they act on — "" when none is needed)."""
    plan = faults(args, None, args.lab_dir)
    settings.pace = pace(args)
    config.update({"pace_s": settings.pace, "faults": [fault.describe() for fault in plan]})
    return plan, args.lab_dir if plan else ""
