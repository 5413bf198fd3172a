"""`authbench run --workers N`: N worker processes on this machine, started for one run and reaped after it.

The workers are `authbench run --worker` with the master's journey settings (passwords travel in the
environment, as they came, never on a command line). Each worker also exits by itself within its
master timeout if the master dies, so none outlives a killed master for long.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Sequence

LOOPBACK = "127.0.0.1"
REAP_WAIT = 10.0  # seconds workers get to exit after the master's quit before they are terminated
TERMINATE_WAIT = 3.0  # seconds after SIGTERM before SIGKILL


def free_port(host: str = LOOPBACK) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def worker_command(master_port: int, settings_argv: Sequence[str], extra: Sequence[str] = ()) -> list[str]:
    return [sys.executable, "-m", "authbench", "run", "--worker", "--master-host", LOOPBACK,
            "--master-port", str(master_port), *extra, *settings_argv]


def spawn(count: int, command: list[str]) -> list[subprocess.Popen]:
    """Start `count` workers; their standard error stays the terminal's, so their one-line errors show.

    Each in a session of its own: with autogroup scheduling (the Linux default) a session gets one share
    of a busy CPU, so workers in the caller's session would share one. Ctrl-C reaches the master only;
    it quits them (and `reap` makes sure).
    """
    return [subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True)
            for _ in range(count)]


def reap(processes: Sequence[subprocess.Popen], wait: float = REAP_WAIT) -> None:
    """Wait for the workers to exit, then terminate and at last kill the ones that did not."""
    deadline = time.monotonic() + wait
    for process in processes:
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.terminate()
    for process in processes:
        try:
            process.wait(timeout=TERMINATE_WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
