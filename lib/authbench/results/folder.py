"""Claiming a results folder: written by one run, once (docs/results-layout.md, "One writer").

A named folder that exists already is refused unless the caller continues it (`--resume`) or moves
it aside (`--overwrite`: renamed to `<name>.replaced-<time>`, never deleted); the folder is then
locked for as long as the claim is held, so a second writer is refused even when both resume.
"""

from __future__ import annotations

import time
from pathlib import Path

from ..errors import AuthbenchError
from ..names import safe_name
from .lock import LOCK_FILE, FolderLock
from .recorder import RUN_ID_TIME_FORMAT, results_dir

NEW = "new"  # the folder must not exist
RESUME = "resume"  # the folder must exist: its run continues
OVERWRITE = "overwrite"  # an existing folder is moved aside first
ASIDE_SUFFIX = ".replaced-"


class FolderExists(AuthbenchError, ValueError):
    """A named results folder exists and the caller neither resumes nor overwrites it."""


def check_name(base: Path, name: str | None, *, what: str, existing: str = NEW, hint: str = "") -> None:
    """Refuse now (before any lab or load) what `claim` would refuse later; creates nothing."""
    if name is None:
        return
    path = Path(base) / safe_name(name, what)
    if existing == NEW and path.exists():
        raise FolderExists(f"{what} {name!r}: {path} exists already (written by an earlier run){hint}")
    if existing == RESUME and not path.is_dir():
        raise FolderExists(f"{what} {name!r}: {path} does not exist; there is nothing to resume")


def claim(base: Path, name: str | None, *, what: str = "run id", existing: str = NEW,
          hint: str = "") -> tuple[Path, FolderLock]:
    """Create (or reopen, with RESUME) `base/name` and lock it; a generated name when `name` is None.

    Raises FolderExists, FolderBusy (another process writes there), UnsafeName or OSError.
    """
    base = Path(base)
    if name is None:
        path = results_dir(base)
        return path, FolderLock(path).acquire()
    check_name(base, name, what=what, existing=existing, hint=hint)
    base.mkdir(parents=True, exist_ok=True)
    path = base / name
    if existing == OVERWRITE and path.exists():
        _move_aside(path)
    try:
        path.mkdir()
    except FileExistsError:
        if existing != RESUME:  # another run created it since check_name
            raise FolderExists(f"{what} {name!r}: {path} was just created by another run{hint}") from None
    return path, FolderLock(path).acquire()


def _move_aside(path: Path) -> Path:
    """Rename a finished folder to `<name>.replaced-<UTC time>`; refused while its writer runs."""
    with FolderLock(path):
        aside = path.with_name(path.name + ASIDE_SUFFIX + time.strftime(RUN_ID_TIME_FORMAT, time.gmtime()))
        n = 1
        while aside.exists():
            n += 1
            aside = aside.with_name(f"{aside.name.split('~')[0]}~{n}")
        path.rename(aside)
    return aside


def resume_mismatch(path: Path, plan: dict, target: str) -> str | None:
    """Why a run folder cannot be continued with this plan and target, or None.

    Resume may only add the cells the folder lacks, measured the same way: same target, same
    patterns, warm-up and repetitions. Anything else would mix two experiments under one summary.
    """
    import json

    from .recorder import SAMPLES_FILE, SUMMARY_FILE, header_problem

    try:
        document = json.loads((Path(path) / SUMMARY_FILE).read_text())
        stored_plan, stored_target = document["plan"], document["config"].get("target")
    except FileNotFoundError:
        return f"{path} holds no {SUMMARY_FILE}; there is nothing to resume"
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return f"{path / SUMMARY_FILE} is not a run summary ({type(exc).__name__}: {exc}); resume a run folder"
    if stored_target != target:
        return f"{path} measured {stored_target}, not {target}; resume with the same --target"
    if stored_plan != plan:
        return (f"{path} was run with {stored_plan}, not {plan}; resume with the same --pattern, --warmup "
                "and --repeat")
    return header_problem(Path(path) / SAMPLES_FILE)


def abandon(path: Path, lock: FolderLock) -> None:
    """Give a claim up before anything was measured: a folder holding nothing but its lock goes."""
    lock.release()
    path = Path(path)
    if {entry.name for entry in path.iterdir()} <= {LOCK_FILE}:
        (path / LOCK_FILE).unlink(missing_ok=True)
        path.rmdir()
