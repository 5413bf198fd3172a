"""run=COMMAND faults, bounded: each command in a process group of its own, ended as a group.

A command is started without a shell in a new session (`start_new_session`), so it and everything it
starts share one process group, and the group is what is ended — SIGTERM, then SIGKILL after
KILL_GRACE — at the command's timeout, when the cell or the run ends while it still runs (it is then
recorded as cut), and at the cell's end for whatever it left running in the background. Its output goes
to an unnamed temporary file, not a pipe: a grandchild that keeps the output open cannot hold the run up,
and the command is done when its own process exits.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from typing import IO, Any

import gevent
import psutil

from .plan import Fault

OUTPUT_CHARS = 2000  # the tail of a command's output kept in summary.json
KILL_GRACE = 2.0  # seconds a process group has after SIGTERM before SIGKILL
GONE_WAIT = 5.0  # seconds to wait for a SIGKILLed group to vanish (a process in the kernel's hands)
POLL = 0.05  # seconds between looks at a group that is ending


def group_members(pgid: int) -> list[int]:
    """The live processes of a process group (zombies left out: they are dead, only not yet reaped)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return []
    except PermissionError:
        pass
    members = []
    for process in psutil.process_iter(["status"]):
        try:
            if process.info["status"] != psutil.STATUS_ZOMBIE and os.getpgid(process.pid) == pgid:
                members.append(process.pid)
        except (OSError, psutil.Error):  # ended while looked at
            continue
    return members


def end_group(pgid: int) -> int:
    """SIGTERM every process of the group, SIGKILL what is left after KILL_GRACE; how many were running."""
    members = group_members(pgid)
    if not members:
        return 0
    for signum, wait in ((signal.SIGTERM, KILL_GRACE), (signal.SIGKILL, GONE_WAIT)):
        try:
            os.killpg(pgid, signum)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while group_members(pgid) and time.monotonic() < deadline:
            gevent.sleep(POLL)
        if not group_members(pgid):
            break
    return len(members)


class Command:
    """One run=COMMAND fault being played: `run()` in the playing greenlet, `cut(why)` from outside it."""

    def __init__(self, fault: Fault) -> None:
        self.fault = fault
        self.pgid: int | None = None
        self.cut_by: str | None = None
        self._process: subprocess.Popen | None = None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def run(self) -> dict[str, Any]:
        """Start, wait until it exits, times out or is cut; its record (ok, exit_status, status, output). Never raises
        but for the greenlet's own end, and then its group is ended first."""
        began = time.monotonic()
        with tempfile.TemporaryFile() as output:
            try:
                self._process = subprocess.Popen(self.fault.argv, stdin=subprocess.DEVNULL, stdout=output,
                                                 stderr=subprocess.STDOUT, start_new_session=True)
            except (OSError, ValueError) as exc:
                return {"ok": False, "exit_status": None, "status": f"could not start: {exc}", "output": ""}
            self.pgid = self._process.pid
            timed_out = False
            try:
                try:
                    self._process.wait(timeout=self.fault.timeout)
                except subprocess.TimeoutExpired:
                    timed_out = True
            finally:
                if self.running:  # timed out, or this greenlet is being killed: never leave the group behind
                    end_group(self.pgid)
                    self._reap()
            text = _tail(output)
        seconds = time.monotonic() - began
        if timed_out:
            return {"ok": False, "exit_status": None, "status": f"timed out after {self.fault.timeout:g} s",
                    "output": text}
        if self.cut_by:
            return {"ok": False, "exit_status": None,
                    "status": f"cut: {self.cut_by} after {seconds:.1f} s (its process group ended)", "output": text}
        code = self._process.returncode
        last = next((line for line in reversed(text.splitlines()) if line.strip()), "")
        return {"ok": code == 0, "exit_status": code,
                "status": f"exit status {code}" + (f": {last}" if last and code else ""), "output": text}

    def cut(self, why: str) -> None:
        """End it now (the cell or the run ended); `run()` then returns a record saying it was cut."""
        if self.running and self.pgid is not None:
            self.cut_by = why
            end_group(self.pgid)

    def end_leftovers(self) -> int:
        """End what the command left running in its group after it exited; how many processes."""
        if self.pgid is None or self.running:
            return 0
        return end_group(self.pgid)

    def _reap(self) -> None:
        assert self._process is not None
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=GONE_WAIT)


def _tail(output: IO[bytes]) -> str:
    """The last OUTPUT_CHARS characters written to the file."""
    output.seek(0, os.SEEK_END)
    output.seek(max(0, output.tell() - 4 * OUTPUT_CHARS))
    return output.read().decode(errors="replace")[-OUTPUT_CHARS:]
