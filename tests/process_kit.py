"""Ending a server a test started: asked to stop, then killed if it will not."""

from __future__ import annotations

import subprocess

GRACE = 10.0  # seconds a server has to stop after SIGTERM before it is killed


def end(process: subprocess.Popen, grace: float = GRACE) -> None:
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
