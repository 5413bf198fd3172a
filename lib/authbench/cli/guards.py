"""Checks that run before the first request, and the claim of a run's results folder.

Every option is checked here or where it is parsed, so a run refuses bad input in one line (exit 2)
before it sends a login, starts a lab or writes a file (docs/results-layout.md, "One writer").
"""

from __future__ import annotations

import argparse
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from . import CliError

if TYPE_CHECKING:
    from ..patterns import Plan
    from ..results.lock import FolderLock
    from .prepared import PreparedRun

MIN_PORT, MAX_PORT = 1, 65535
RUN_ID_HINT = "; give another --run-id, --resume to continue it or --overwrite to move it aside"


def check_port(value: int | None, option: str) -> None:
    if value is not None and not MIN_PORT <= value <= MAX_PORT:
        raise CliError(f"{option} {value} is not a port; give {MIN_PORT}..{MAX_PORT}")


def check_ports(args: argparse.Namespace, *dests: str) -> None:
    for dest in dests:
        check_port(getattr(args, dest, None), "--" + dest.replace("_", "-"))


def claim_run_folder(args: argparse.Namespace, plan: Plan, target: str) -> tuple[Path, FolderLock]:
    """(folder, lock) of `run --results R --run-id ID [--resume | --overwrite]`; CliError when refused."""
    from ..names import UnsafeName
    from ..results.folder import NEW, OVERWRITE, RESUME, FolderExists, check_name, claim, resume_mismatch
    from ..results.lock import FolderBusy

    existing = RESUME if args.resume else OVERWRITE if args.overwrite else NEW
    if existing != NEW and not args.run_id:
        raise CliError(f"--{existing} needs --run-id: the run folder to {existing}")
    base = Path(args.results)
    try:
        check_name(base, args.run_id, what="--run-id", existing=existing, hint=RUN_ID_HINT)
        if existing == RESUME:
            problem = resume_mismatch(base / args.run_id, plan.record(), target)
            if problem:
                raise CliError(f"--resume: {problem}")
        return claim(base, args.run_id, what="--run-id", existing=existing, hint=RUN_ID_HINT)
    except (FolderBusy, FolderExists, UnsafeName) as exc:
        raise CliError(str(exc)) from None
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot write results under {args.results!r}: {exc}") from None


def claim_lock_and_check(args: argparse.Namespace, prepared: PreparedRun, held: ExitStack) -> Path:
    """For a journey's run (LDAP, database, privacyIDEA): claim its results folder, take the target's load lock
    (PreparedRun.load_key; --force overrides) and try one journey, in that order — all refused now, not after
    the load. Both locks are held by `held` to the end of the run; the run folder is returned, its
    preflight.txt written."""
    from ..results.folder import abandon
    from ..targets_lock import TargetBusy, target_lock

    run_dir, folder_lock = claim_run_folder(args, prepared.plan, prepared.target)
    held.callback(folder_lock.release)
    try:
        held.enter_context(target_lock(prepared.load_key, f"authbench run (results {run_dir})", force=args.force))
        check = prepared.preflight(prepared.settings)
    except TargetBusy:
        abandon(run_dir, folder_lock)
        raise
    problem = check.problem()
    if problem:
        abandon(run_dir, folder_lock)
        raise CliError(problem)
    check.save(run_dir)
    return run_dir
