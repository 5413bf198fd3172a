"""One writer per results folder: an exclusive lock held while a run or campaign writes into it.

`flock` on `<folder>/.lock`: the kernel drops it when the process ends however it ends (kill -9
included), so a stale lock never blocks a later `--resume`. The file holds the writer's pid, for the
message a second writer gets.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from ..errors import AuthbenchError

LOCK_FILE = ".lock"


def try_lock(path: Path, note: str) -> tuple[int, str | None]:
    """Open `path` and take its exclusive flock without waiting: (fd, None) holding it with `note` written
    into the file, or (-1, the holder's note) when another process has it. Closing the fd releases it.

    The one flock both locks use: a results folder's writer (FolderLock) and a target's load (targets_lock).
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        held_by = os.pread(fd, 4096, 0).decode(errors="replace")
        os.close(fd)
        return -1, held_by
    os.ftruncate(fd, 0)
    os.pwrite(fd, note.encode(), 0)
    return fd, None


class FolderBusy(AuthbenchError, ValueError):
    """Another process is writing into the folder."""


class FolderLock:
    """Held from `acquire` to `release` (or the process's end)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self._fd: int | None = None

    def acquire(self) -> FolderLock:
        """Take the lock now or raise FolderBusy; never waits (a second writer is a mistake, not a queue)."""
        fd, held_by = try_lock(self.folder / LOCK_FILE, f"{os.getpid()}\n")
        if held_by is not None:
            raise FolderBusy(f"{self.folder} is being written by another authbench process (pid "
                             f"{held_by.strip()[:32] or '?'}); wait for it to end or choose another id")
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock
            self._fd = None

    def __del__(self) -> None:  # a claim dropped without release (an in-process caller) frees the folder
        self.release()

    def __enter__(self) -> FolderLock:
        return self.acquire() if self._fd is None else self

    def __exit__(self, *exc: object) -> None:
        self.release()
