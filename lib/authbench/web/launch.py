"""Starting a plan from the web UI: the form's fields checked like `authbench run`'s options, then run.

The form is parsed and checked by the `prepare` function `authbench web` hands in (`authbench run`'s own
parser, see cli/web_form.py), so a target, pattern or warm-up means the same in both places and this
package never imports the CLI. The run goes through the run path's own steps (`run.claim`, then
`run.measure` on the UI's environment) in a greenlet, so its folder is written as `authbench run` writes it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import gevent
from locust.env import Environment

from ..errors import AuthbenchError
from ..signals import StoppedByUser
from .fields import name_fields
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
        self.prepare = prepare  # form → a PreparedRun, or AuthbenchError (cli.web_form.form_preparer)
        self.greenlet: gevent.Greenlet | None = None
        self._starting = False  # a start is checking its target: a second one must not slip in meanwhile

    @property
    def running(self) -> bool:
        return self._starting or (self.greenlet is not None and not self.greenlet.dead)

    def start(self, form: dict[str, str]) -> str:
        """Check the form, claim a run folder, take the target's lock, try one journey (the preflight) and
        start; the run id, or AuthbenchError naming the form's fields, with a failed preflight's lines (its hops)
        as `details`."""
        from .. import run

        if self.running:
            raise AuthbenchError("a run is in progress; stop it first")
        self._starting = True
        held = ExitStack()
        said: list[str] = []  # what the preflight said (run.claim says nothing else before it fails)

        def say(line: str) -> None:
            log.info(line)
            said.append(line)

        try:
            prepared = self.prepare(form)
            prepared.settings = dataclasses.replace(prepared.settings, results=str(self.results), run_id=None)
            run_dir = run.claim(prepared, held, say, "authbench web")
        except AuthbenchError as exc:
            held.close()
            raise AuthbenchError(name_fields(str(exc)), details=[*exc.details, *said]) from None
        except BaseException:
            held.close()
            raise
        finally:
            self._starting = False
        self.environment.authbench.settings = prepared.journey.settings
        self.environment.user_classes = list(prepared.journey.classes)  # the journey(s) the target names
        self.live.begin(run_dir.name, prepared.target, prepared.plan)
        self.greenlet = gevent.spawn(self._run, run_dir, prepared, held)
        return run_dir.name

    def stop(self, by: str = "from the web UI") -> bool:
        """End the run now: finished cells stay written, the running one's samples stay in samples.csv (it is
        left out of summary.json, so of every average)."""
        if self.greenlet is None or self.greenlet.dead:
            return False
        self.greenlet.kill(StoppedByUser(by), block=True, timeout=STOP_WAIT)
        return True

    def _run(self, run_dir: Path, prepared: Any, held: ExitStack) -> None:
        state, message = FAILED, "the run ended unexpectedly"
        capacity = None
        from .. import run

        try:
            report = run.measure(prepared, run_dir, log.info, environment=self.environment)
            state, message = DONE, "" if report.complete else "a pattern repetition was cut short by the time limit"
            capacity = report.extra.get("capacity")
        except StoppedByUser as exc:
            state, message = STOPPED, (f"stopped by the user {exc.by}; finished repetitions are kept, "
                                       "the cell it cut only in samples.csv, marked stopped")
            raise
        except AuthbenchError as exc:  # said in one line (a full disk: results.writes), no traceback
            log.error("web UI run %s: %s", run_dir.name, exc)
            message = str(exc)
        except Exception as exc:  # a bug or a broken run: said on the page, logged in full
            log.exception("web UI run %s failed", run_dir.name)
            message = f"{type(exc).__name__}: {exc}"
        finally:
            self.environment.runner.stop()  # does nothing when run_plan already stopped it
            self.environment.authbench.controller = None
            held.close()  # the folder and the target are free for the next load
            self.live.end(state, message, capacity, self._links(run_dir))

    def _links(self, run_dir: Path) -> dict[str, str] | None:
        """Where the page sends a person once the run is over: its report (built when first opened) and folder."""
        from ..results.recorder import SUMMARY_FILE

        if not (run_dir / SUMMARY_FILE).is_file():
            return None
        return {"report": f"runs/{run_dir.name}/report.html", "folder": str(run_dir)}
