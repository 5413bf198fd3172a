"""Starting a plan from the web UI: the form's fields checked like `authbench run`'s options, then run.

The form is parsed and checked by the `prepare` function `authbench web` hands in (`authbench run`'s own
parser and `cli.run.prepare`, see cli/web_form.py), so a target, pattern or warm-up means the same in
both places and this package never imports the CLI. The plan runs in a greenlet on the environment's
runner (`runner.run_plan`), and its run folder is written as `authbench run` writes it
(docs/results-layout.md) by the same code (`PreparedRun.execute`, headless.execute on the UI's environment).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import gevent
from locust.env import Environment

from ..errors import CliError
from ..results.recorder import results_dir
from ..signals import StoppedByUser
from ..targets_lock import target_lock
from .live import DONE, FAILED, STOPPED, LiveRun

DEFAULT_CELL_TIME_LIMIT = "10m"  # the form's default bound on one pattern × repetition
STOP_WAIT = 30.0  # seconds Stop waits for the run to end (Locust gives running journeys STOP_TIMEOUT of them)
log = logging.getLogger(__name__)


class Launcher:
    """One run at a time on the environment; `start` checks everything before any load is put on."""

    def __init__(self, environment: Environment, live: LiveRun, results: Path,
                 prepare: Callable[[dict[str, str]], Any]) -> None:
        self.environment = environment
        self.live = live
        self.results = Path(results)
        self.prepare = prepare  # form → cli.run.PreparedRun, or CliError (cli.web_form.form_preparer)
        self.greenlet: gevent.Greenlet | None = None
        self._starting = False  # a start is checking its target: a second one must not slip in meanwhile

    @property
    def running(self) -> bool:
        return self._starting or (self.greenlet is not None and not self.greenlet.dead)

    def start(self, form: dict[str, str]) -> str:
        """Check the form, try one journey (the prepared run's preflight), create the run folder and start; the
        run id, or CliError."""
        if self.running:
            raise CliError("a run is in progress; stop it first")
        self._starting = True
        lock = ExitStack()
        try:
            prepared = self.prepare(form)
            lock.enter_context(target_lock(prepared.load_key, f"authbench web (results {self.results})"))
            check = prepared.preflight(prepared.settings)  # one whole journey before any load
            for line in check.lines():
                log.info("%s", line)
            problem = check.problem()
            if problem:
                raise CliError(problem)
            try:
                run_dir = results_dir(self.results)
            except (OSError, ValueError) as exc:
                raise CliError(f"cannot write results under {str(self.results)!r}: {exc}") from None
            check.save(run_dir)
        except BaseException:
            lock.close()
            raise
        finally:
            self._starting = False
        self.environment.authbench.settings = prepared.settings
        self.environment.user_classes = [prepared.user_class]  # the journey the target names
        self.live.begin(run_dir.name, prepared.target, prepared.plan)
        self.greenlet = gevent.spawn(self._run, run_dir, prepared, lock)
        return run_dir.name

    def stop(self, by: str = "from the web UI") -> bool:
        """End the run now: finished cells stay written, the running one's samples stay in samples.csv (it is
        left out of summary.json, so of every average)."""
        if self.greenlet is None or self.greenlet.dead:
            return False
        self.greenlet.kill(StoppedByUser(by), block=True, timeout=STOP_WAIT)
        return True

    def _run(self, run_dir: Path, prepared: Any, lock: ExitStack) -> None:
        state, message = FAILED, "the run ended unexpectedly"
        try:
            with prepared.cell_listeners(run_dir, log.info) as (listen, extras):  # fault plan, lab servers' CPU
                report = prepared.execute(run_dir, say=log.info, environment=self.environment, listen=listen,
                                          cell_extras=extras)
            state, message = DONE, "" if report.complete else "a pattern repetition was cut short by the time limit"
        except StoppedByUser as exc:
            state, message = STOPPED, (f"stopped by the user {exc.by}; finished repetitions are kept, "
                                       "the cell it cut only in samples.csv, marked stopped")
            raise
        except Exception as exc:  # a bug or a broken run: said on the page, logged in full
            log.exception("web UI run %s failed", run_dir.name)
            message = f"{type(exc).__name__}: {exc}"
        finally:
            self.environment.runner.stop()  # does nothing when run_plan already stopped it
            self.environment.authbench.controller = None
            lock.close()  # the target is free for the next load
            self.live.end(state, message)
