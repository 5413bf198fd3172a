"""One load at a time on a target: a lock per target shared by every authbench process on the machine.

Two loads on one IdP at once measure neither. `authbench run`, `compare` and the web UI take the lock of
what they load — the embedded lab as a whole (its clusters share the machine's cores), or the origin
(scheme://host:port) of any other target — and a second one is refused in one line naming the holder.
The lock is an `flock` on a file in $AUTHBENCH_LOCK_DIR: the kernel drops it when the holder dies, so a killed run
never leaves a stale lock behind. `--force` loads anyway (and says so).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from .errors import AuthbenchError
from .results.lock import try_lock

LOCK_DIR_ENV = "AUTHBENCH_LOCK_DIR"  # where the lock files live (default: <tmp>/authbench-locks, machine-wide)


def lab_key(lab_dir: str | Path) -> str:
    return f"lab:{Path(lab_dir).resolve()}"


DEFAULT_PORTS = {"http": 80, "https": 443, "ldap": 389, "ldaps": 636, "postgresql": 5432, "postgres": 5432}


def url_key(url: str) -> str:
    """scheme://host:port of a target, its scheme's port filled in: the same server however it is written."""
    parts = urlsplit(url)
    scheme = "postgresql" if parts.scheme == "postgres" else parts.scheme
    port = parts.port or DEFAULT_PORTS.get(parts.scheme, 0)
    return f"{scheme}://{(parts.hostname or '').lower()}:{port}"


class TargetBusy(AuthbenchError):
    """Another authbench process is loading the same target."""


@contextmanager
def target_lock(key: str, what: str, *, force: bool = False, lock_dir: Path | None = None) -> Iterator[None]:
    """Hold the lock of `key` while the body runs; TargetBusy (one line, exit 2) when another process has it.

    `what` describes this load for whoever is refused (the command and its results folder; no secrets).
    """
    path = _path(key, lock_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    note = json.dumps({"key": key, "what": what, "pid": os.getpid(), "since": time.time()})
    fd, held_by = try_lock(path, note)
    if held_by is not None and not force:
        raise TargetBusy(f"{key} is already under load by {_describe(held_by)}; wait for it to end, or give "
                         "--force to load it anyway")
    try:
        yield
    finally:
        if fd >= 0:
            os.ftruncate(fd, 0)
            os.close(fd)  # closing drops the flock


def holder(key: str, lock_dir: Path | None = None) -> dict | None:
    """Who loads `key` now (the JSON its holder wrote), or None when nobody does."""
    path = _path(key, lock_dir)
    if not path.exists():
        return None
    fd, held_by = try_lock(path, "")
    if held_by is None:
        os.close(fd)
        return None
    return _parse(held_by)


def _path(key: str, lock_dir: Path | None) -> Path:
    folder = lock_dir or os.environ.get(LOCK_DIR_ENV) or Path(tempfile.gettempdir()) / "authbench-locks"
    return Path(folder) / (hashlib.sha256(key.encode()).hexdigest()[:20] + ".lock")


def _parse(note: str) -> dict:
    try:
        return json.loads(note or "{}")
    except ValueError:
        return {}


def _describe(note: str) -> str:
    data = _parse(note)
    since = time.strftime("%H:%M:%S", time.localtime(data["since"])) if "since" in data else "?"
    return f"{data.get('what', 'another authbench process')} (pid {data.get('pid', '?')}, since {since})"
