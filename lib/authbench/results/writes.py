"""A results folder that refuses a write (a full disk, a read-only remount, an I/O error) stops the run.

A run that carried on after losing a write would measure what it cannot keep. Writes happen where
the measurements arrive — Locust's user greenlets, a master's message handler, the resource sampler —
so the first error is remembered here and carried to the run's own greenlet, which stops the load,
records what it can and ends the command with one line (exit 1). A reserve file holds back room for
that last summary.json, so even a full disk gets its record.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import greenlet

from ..errors import RunFailed

RESERVE_FILE = ".space-reserve"  # deleted when the run ends; a kill -9 may leave it (it is only zeros)
RESERVE_MARGIN = 8 * 1024  # bytes beyond summary.json at least (its last version adds a cell and the cut)


class ResultsWriteError(RunFailed):
    """The run stopped because its results could not be written (exit 1, one line)."""


class WriteCut(BaseException):
    """Raised in the run's greenlet at the first write error. A BaseException, like a signal's Interrupted,
    so that no `except Exception` on the way (an event hook's, Locust's) swallows it."""


@dataclass(frozen=True)
class WriteFailure:
    path: Path
    error: OSError

    def describe(self) -> str:
        reason = self.error.strerror or str(self.error)
        code = errno.errorcode.get(self.error.errno or 0)
        return f"cannot write {self.path.name} in {self.path.parent}: {reason}" + (f" ({code})" if code else "")

    def record(self) -> dict[str, Any]:
        """summary.json's `write_error` (without the cell and the time, which the run adds)."""
        return {"file": self.path.name, "error": self.error.strerror or str(self.error),
                "errno": errno.errorcode.get(self.error.errno or 0)}


class WriteGuard:
    """The first write error of a run, and the way it reaches the run's greenlet (the one that made the guard).

    Writers call `failed` and then write nothing more. The run's greenlet gets `WriteCut` once: at once
    when it is the writer, else from the hub while the guard is armed (`arm`: during the load only, so
    it never lands in the middle of a cleanup); `check` raises one that was not delivered yet. After
    `close`, a failure is only remembered.
    """

    def __init__(self, *, detached: bool = False) -> None:
        """`detached`: no run to stop (a writer used on its own); a failure is only remembered."""
        from gevent import get_hub

        self.failure: WriteFailure | None = None
        self._owner: Any = None if detached else greenlet.getcurrent()
        self._hub = get_hub()
        self._armed = False
        self._delivered = False

    def arm(self) -> None:
        self._armed = True

    def disarm(self) -> None:
        self._armed = False

    def close(self) -> None:
        self._armed, self._owner = False, None

    def check(self) -> None:
        """Raise WriteCut in the run's greenlet for a failure it has not had yet."""
        if self.failure is not None and not self._delivered and greenlet.getcurrent() is self._owner:
            self._delivered = True
            raise WriteCut(self.failure)

    def taken(self) -> WriteFailure | None:
        """The failure, now handled by the run's greenlet: nothing more is raised for it."""
        self._delivered = True
        return self.failure

    def failed(self, path: Path, error: OSError) -> None:
        if self.failure is None:
            self.failure = WriteFailure(Path(path), error)
        if self._owner is None or self._delivered:
            return
        if greenlet.getcurrent() is self._owner:
            self.check()
        elif self._armed:
            self._hub.loop.run_callback_threadsafe(self._deliver)

    def _deliver(self) -> None:
        owner = self._owner
        if owner is None or self._delivered or not self._armed or owner.dead:
            return
        self._delivered = True
        owner.throw(WriteCut(self.failure))


class SpaceReserve:
    """A file of zeros beside summary.json, as large as the next summary.json may need: freed before the
    last one is written, so a full disk still takes it."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / RESERVE_FILE
        self.size = 0
        self._last = 0  # the summary's size at the previous fit
        self._growth = 0  # the most it grew from one write to the next (a cell's entry)

    def fit(self, summary_bytes: int) -> None:
        """Grow to `summary_bytes` and room for twice the largest growth seen (RESERVE_MARGIN at least); it never
        shrinks while the run goes. OSError when the disk cannot give it."""
        if self._last:
            self._growth = max(self._growth, summary_bytes - self._last)
        self._last = summary_bytes
        wanted = summary_bytes + max(RESERVE_MARGIN, 2 * self._growth)
        if wanted <= self.size:
            return
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            try:
                os.posix_fallocate(fd, 0, wanted)
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                    raise
                os.pwrite(fd, bytes(wanted - self.size), self.size)  # a file system without fallocate
                os.fsync(fd)
        finally:
            os.close(fd)
        self.size = wanted

    def free(self) -> None:
        self.path.unlink(missing_ok=True)
        self.size = 0
