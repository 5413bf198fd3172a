"""SIGTERM behaves like SIGINT (Ctrl-C): both end a command the same orderly way.

A CI cancel, `timeout` or Kubernetes stopping a pod sends SIGTERM, whose default is to die on the
spot: no cell closed, no lab taken down, workers left loading. Here either signal raises
`Interrupted` (a KeyboardInterrupt, so every `finally` runs) in the main greenlet — not inside
gevent's hub, where a KeyboardInterrupt prints a greenlet traceback. The layers it passes through
add a note (the cell kept, the lab taken down) and `cli.main` prints them as one line, exiting
128 + the signal's number (130 for SIGINT, 143 for SIGTERM). Further signals during that cleanup are
reported and otherwise ignored, so the cleanup itself is not cut short (SIGKILL still stops it).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable

from greenlet import GreenletExit

HANDLED = (signal.SIGINT, signal.SIGTERM)
EXIT_BASE = 128  # the shell's convention: exit status of a process ended by signal N


class Interrupted(KeyboardInterrupt):
    """A handled signal arrived; `notes` say what was kept and cleaned up on the way out."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.notes: list[str] = []

    @property
    def exit_code(self) -> int:
        return EXIT_BASE + self.signum

    def describe(self) -> str:
        return "; ".join([f"interrupted by {signal.Signals(self.signum).name}", *self.notes])


class StoppedByUser(GreenletExit):
    """A person stopped the run (the web UI's Stop, Locust's STOP button): raised into the run's greenlet, it ends
    the run as a signal would, and the cell it cut is recorded as stopped by the user."""

    def __init__(self, by: str) -> None:
        super().__init__(by)
        self.by = by


def stop_record(exc: BaseException) -> dict[str, str | bool | None]:
    """How summary.json's `interrupted` entry says what ended the run."""
    if isinstance(exc, StoppedByUser):
        return {"signal": None, "by": f"the user {exc.by}", "by_user": True}
    name = exc.args[0] if exc.args else None
    return {"signal": name, "by": f"signal {name}", "by_user": False}


def note(exc: BaseException, text: str) -> None:
    """Add what a layer did on the way out to the one line the command ends with."""
    if isinstance(exc, Interrupted):
        exc.notes.append(text)


def install(warn: Callable[[str], None] | None = None) -> Callable[[], None]:
    """Route SIGINT and SIGTERM to `Interrupted` in the calling (main) greenlet or thread.

    Returns the function that puts the previous handlers back (cli.main calls it on the way out, so
    a caller such as a test session gets its own Ctrl-C handling again).
    """
    if threading.current_thread() is not threading.main_thread():  # only the main thread gets signals
        return lambda: None
    warn = warn or (lambda text: print(text, file=sys.stderr, flush=True))
    fired: list[int] = []
    previous = {signum: signal.getsignal(signum) for signum in HANDLED}

    def first_or_warn(signum: int) -> bool:
        if fired:
            warn(f"authbench: {signal.Signals(signum).name} again: still cleaning up (SIGKILL ends it at once)")
            return False
        fired.append(signum)
        return True

    watchers: list = []
    if "gevent.monkey" in sys.modules and _patched():
        import gevent
        import greenlet

        main = greenlet.getcurrent()
        watchers = [gevent.signal_handler(signum, _gevent_handler(main, signum, first_or_warn))
                    for signum in HANDLED]
    else:
        def handler(signum: int, frame: object) -> None:
            if first_or_warn(signum):
                raise Interrupted(signum)

        for signum in HANDLED:
            signal.signal(signum, handler)

    def restore() -> None:
        for watcher in watchers:
            watcher.cancel()
        for signum, old in previous.items():
            signal.signal(signum, old if old is not None else signal.SIG_DFL)

    return restore


def _patched() -> bool:
    from gevent import monkey

    return monkey.is_module_patched("socket")


def _gevent_handler(main, signum: int, first_or_warn: Callable[[int], bool]) -> Callable[[], None]:
    import gevent

    def handler() -> None:  # runs in a greenlet of its own; the exception goes to the main one
        if first_or_warn(signum):
            gevent.kill(main, Interrupted(signum))

    return handler
