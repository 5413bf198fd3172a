"""Starting a plan from the web UI: the form's fields checked like `authbench run`'s options, then run.

The form is parsed by `authbench run`'s own parser and prepared by `cli.run.prepare`, so a target,
pattern or warm-up means the same in both places. The plan runs in a greenlet on the environment's
runner (`runner.run_plan`), and its run folder is written as `authbench run` writes it
(docs/results-layout.md) by the same code (`headless.execute` on the UI's environment).
"""

from __future__ import annotations

import argparse
import logging
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gevent
from locust.env import Environment

from ..cli import CliError
from ..patterns import PlanError, parse_duration
from ..results.recorder import results_dir
from .live import DONE, FAILED, STOPPED, LiveRun

SUCCESS_FIELDS = {"expect": "--expect", "expect_regex": "--expect-regex", "expect_status": "--expect-status"}
OPEN_FIELDS = ("rate", "duration", "levels", "slo")  # arrival rates instead of patterns (cli/openmodel.py)
DEFAULT_CELL_TIME_LIMIT = "10m"  # the form's default bound on one pattern × repetition
STOP_WAIT = 30.0  # seconds Stop waits for the run to end (Locust gives running journeys STOP_TIMEOUT of them)
log = logging.getLogger(__name__)


class _Parser(argparse.ArgumentParser):
    """`authbench run`'s parser, raising instead of exiting: a bad field is a message, not an exit."""

    def error(self, message: str):  # type: ignore[override]
        raise CliError(message)


def _run_parser() -> argparse.ArgumentParser:
    from ..cli import run

    top = _Parser(prog="authbench", add_help=False)
    run.add_parser(top.add_subparsers(parser_class=_Parser))
    return top


def parse_form(form: dict[str, str], run_options: str = "") -> argparse.Namespace:
    """The start form (target, patterns, warm-up, repetitions, time limit) + `authbench web --run-options`."""
    target = (form.get("target") or "").strip()
    if not target:
        raise CliError("give a target: lab:BACKEND or the SP's protected URL")
    repeat = (form.get("repeat") or "1").strip()
    if not repeat.isdigit():
        raise CliError(f"repetitions {repeat!r} is not a whole number")
    limit = (form.get("cell_time_limit") or DEFAULT_CELL_TIME_LIMIT).strip()
    try:
        if parse_duration(limit) <= 0:
            raise CliError("the time limit per pattern repetition must be more than 0")
    except PlanError as exc:
        raise CliError(str(exc)) from None
    try:
        extra = shlex.split(run_options)
    except ValueError as exc:
        raise CliError(f"--run-options {run_options!r}: {exc}") from None
    # Each field is one argument after its option: a value cannot smuggle in options of its own.
    open_model = [f"--{field}={value}" for field in OPEN_FIELDS if (value := (form.get(field) or "").strip())]
    pattern = [] if open_model else ["--pattern", (form.get("pattern") or "").strip() or ","]
    argv = ["run", "--target", target, *pattern, *open_model,
            "--warmup", (form.get("warmup") or "0").strip(), "--repeat", repeat, "--cell-time-limit", limit]
    for field, option in SUCCESS_FIELDS.items():
        value = (form.get(field) or "").strip()
        if value:
            argv.append(f"{option}={value}")  # one argument, even when the text starts with '-'
    return _run_parser().parse_args([*argv, *extra])


class Launcher:
    """One run at a time on the environment; `start` checks everything before any load is put on."""

    def __init__(self, environment: Environment, live: LiveRun, results: Path, run_options: str = "") -> None:
        self.environment = environment
        self.live = live
        self.results = Path(results)
        self.run_options = run_options
        self.greenlet: gevent.Greenlet | None = None
        self._starting = False  # a start is checking its target: a second one must not slip in meanwhile

    @property
    def running(self) -> bool:
        return self._starting or (self.greenlet is not None and not self.greenlet.dead)

    def start(self, form: dict[str, str], *, preflight: Callable[[Any], Any]) -> str:
        """Check the form, try one journey (`users.saml.preflight`), create the run folder and start; the run
        id, or CliError."""
        from ..cli.run import prepare

        if self.running:
            raise CliError("a run is in progress; stop it first")
        self._starting = True
        try:
            prepared = prepare(parse_form(form, self.run_options))
            check = preflight(prepared.settings)  # one whole login before any load, every hop recorded
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
        finally:
            self._starting = False
        self.environment.authbench.settings = prepared.settings
        self.live.begin(run_dir.name, prepared.target, prepared.plan)
        self.greenlet = gevent.spawn(self._run, run_dir, prepared)
        return run_dir.name

    def stop(self) -> bool:
        """End the run now: finished cells stay written, the running one's samples stay in samples.csv."""
        if self.greenlet is None or self.greenlet.dead:
            return False
        self.greenlet.kill(block=True, timeout=STOP_WAIT)
        return True

    def _run(self, run_dir: Path, prepared: Any) -> None:
        from ..headless import execute
        from ..users.saml import SAMLUser

        state, message = FAILED, "the run ended unexpectedly"
        try:
            report = execute(prepared.plan, SAMLUser, prepared.settings, config=prepared.config,
                             results_base=run_dir.parent, run_id=run_dir.name,
                             cell_time_limit=prepared.cell_time_limit, say=log.info, environment=self.environment,
                             keep_failures=prepared.keep_failures)
            state, message = DONE, "" if report.complete else "a pattern repetition was cut short by the time limit"
        except gevent.GreenletExit:
            state, message = STOPPED, "stopped from the web UI; finished repetitions are kept"
            raise
        except Exception as exc:  # a bug or a broken run: said on the page, logged in full
            log.exception("web UI run %s failed", run_dir.name)
            message = f"{type(exc).__name__}: {exc}"
        finally:
            self.environment.runner.stop()  # does nothing when run_plan already stopped it
            self.environment.authbench.controller = None
            self.live.end(state, message)

