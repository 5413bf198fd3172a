"""Claiming a results folder: written by one run, once (docs/results-layout.md, "One writer").

A named folder that exists already is refused unless the caller continues it (`--resume`) or moves
it aside (`--overwrite`: renamed to `<name>.replaced-<time>`, never deleted); the folder is then
locked for as long as the claim is held, so a second writer is refused even when both resume.
"""

from __future__ import annotations

import json
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
    patterns or levels, warm-up, repetitions, arrivals, SLO and search. Anything else would mix two
    experiments under one summary. `plan` is the whole plan as summary.json holds it.
    """
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
    plan = json.loads(json.dumps(plan))  # tuples as lists, as the stored plan reads back
    if stored_plan != plan:
        phrases, options = plan_difference(stored_plan, plan)
        return f"{path} was run with {'; '.join(phrases)}; resume with the same {' and '.join(options)}"
    return header_problem(Path(path) / SAMPLES_FILE)


# summary.json's plan keys, as the options that set them
_CLOSED_OPTIONS = (("patterns", "--pattern"), ("warmup_s", "--warmup"), ("repeat", "--repeat"))
_OPEN_OPTIONS = (("repeat", "--repeat"), ("arrivals", "--arrivals"), ("seed", "--seed"), ("max_users", "--max-users"),
                 ("queue_for_s", "--queue-for"), ("late_after_ms", "--late-after"), ("slo", "--slo"))
_SEARCH_OPTIONS = (("start", "--start-rate"), ("growth", "--growth"), ("precision", "--precision"),
                   ("max_rate", "--max-rate"), ("hold", "--step-duration"), ("warmup", "--step-warmup"),
                   ("max_steps", "the search's step limit"))
_UNITS = {"warmup_s": "s", "queue_for_s": "s", "late_after_ms": "ms", "start": "/s", "max_rate": "/s", "hold": "s",
          "warmup": "s"}


def plan_difference(stored: dict, wanted: dict) -> tuple[list[str], list[str]]:
    """(phrases "--slo p99<1s, not p99<2s", the options named) of two plans as summary.json holds them."""
    if stored.get("model") != wanted.get("model"):
        return [f"{_plan_text(stored)}, not {_plan_text(wanted)}"], ["--pattern, --rate or --levels"]
    if stored.get("model") != "open":
        phrases, options = _differing(stored, wanted, _CLOSED_OPTIONS)
        return (phrases, options) if phrases else _other(stored, wanted)
    phrases, options = _differing(stored, wanted, _OPEN_OPTIONS)
    levels, wanted_levels = stored.get("levels") or [], wanted.get("levels") or []
    if levels != wanted_levels:
        phrases.insert(0, f"{_levels_text(levels)}, not {_levels_text(wanted_levels)}")
        options.insert(0, "--rate, --duration and --warmup" if _is_rate(levels) else "--levels")
    searched, wanted_search = stored.get("search"), wanted.get("search")
    if (searched is None) != (wanted_search is None):
        phrases.append("the capacity search, not without it" if searched else "no capacity search, not with one")
        options.append("capacity search (max)")
    elif searched != wanted_search:
        more = _differing(searched, wanted_search, _SEARCH_OPTIONS)
        phrases += more[0]
        options += more[1]
    return (phrases, options) if phrases else _other(stored, wanted)


def _differing(stored: dict, wanted: dict, names: tuple[tuple[str, str], ...]) -> tuple[list[str], list[str]]:
    phrases, options = [], []
    for key, option in names:
        if stored.get(key) != wanted.get(key):
            phrases.append(f"{option} {_value(key, stored.get(key))}, not {_value(key, wanted.get(key))}")
            options.append(option)
    return phrases, options


def _value(key: str, value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, list):
        return ",".join(map(str, value))
    if key == "precision" and isinstance(value, float):
        return f"{value * 100:g}%"
    return f"{value:g}{_UNITS.get(key, '')}" if isinstance(value, float) else str(value)


def _is_rate(levels: list[dict]) -> bool:
    """A --rate run: one level named after its rate."""
    return len(levels) == 1 and levels[0]["name"] == f"{levels[0]['rate']:.4g}/s"


def _levels_text(levels: list[dict]) -> str:
    if not levels:
        return "no levels"
    if _is_rate(levels):
        level = levels[0]
        return (f"--rate {level['name']} --duration {level['duration_s']:g}s"
                + (f" --warmup {level['warmup_s']:g}s" if level["warmup_s"] else ""))
    return "--levels " + ",".join(f"{level['name']}={level['rate']:.4g}/s:{level['duration_s']:g}s"
                                  + (f":{level['warmup_s']:g}s" if level["warmup_s"] else "") for level in levels)


def _plan_text(plan: dict) -> str:
    if plan.get("model") == "open":
        levels = _levels_text(plan["levels"]) if plan.get("levels") else ""
        search = "the capacity search" if plan.get("search") else ""
        return " and ".join(part for part in (levels, search) if part) or "no levels"
    return f"--pattern {_value('patterns', plan.get('patterns') or [])}"


def _other(stored: dict, wanted: dict) -> tuple[list[str], list[str]]:
    return [f"another plan ({_json_text(stored)}), not {_json_text(wanted)}"], ["options"]


def _json_text(value: object) -> str:
    return json.dumps(value, sort_keys=True)


def abandon(path: Path, lock: FolderLock) -> None:
    """Give a claim up before anything was measured: a folder holding nothing but its lock goes."""
    lock.release()
    path = Path(path)
    if {entry.name for entry in path.iterdir()} <= {LOCK_FILE}:
        (path / LOCK_FILE).unlink(missing_ok=True)
        path.rmdir()
