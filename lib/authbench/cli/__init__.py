"""The `authbench` command line: argument parsing and one-line errors, the work happens elsewhere.

Exit codes: 0 ok, 1 something failed at run time (a lab component did not become healthy),
2 usage, configuration or environment problems (argparse uses 2 for its own errors as well),
3 the run completed but failed its pass criterion (`run --max-error-pct`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from ..errors import EXIT_CRITERIA_FAILED, EXIT_FAILURE, EXIT_USAGE, AuthbenchError
from .console import one_line, say

__all__ = ["EXIT_CRITERIA_FAILED", "EXIT_FAILURE", "EXIT_INTERRUPTED", "EXIT_USAGE", "AuthbenchError", "build_parser",
           "main", "say"]

PROG = "authbench"
DEBUG_ENV = "AUTHBENCH_DEBUG"  # set to 1 to get tracebacks instead of one-line errors
EXIT_INTERRUPTED = 130  # SIGINT; SIGTERM exits 143 (signals.Interrupted.exit_code)


class OneLineParser(argparse.ArgumentParser):
    """argparse with one-line errors: what is wrong and where to read more, exit 2 (not the whole usage)."""

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


# Subcommand → function adding its parser; each parser sets `handler`.
def _subcommands() -> dict[str, Callable[[argparse._SubParsersAction], None]]:
    from . import authrate, check_cluster, compare, lab, pi_bench, report, run, sp_metadata, web

    return {"lab": lab.add_parser, "run": run.add_parser, "sp-metadata": sp_metadata.add_parser,
            "check-cluster": check_cluster.add_parser, "compare": compare.add_parser, "report": report.add_parser,
            "web": web.add_parser, "authrate": authrate.add_parser,
            "capacity": run.add_capacity_parser, "privacyidea-bench": pi_bench.add_parser}


def build_parser() -> argparse.ArgumentParser:
    from authbench import __version__

    parser = OneLineParser(prog=PROG, description="Load tests for authentication systems.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in _subcommands().values():
        add(subparsers)
    return parser


# Commands that run Locust, gevent or the journeys: gevent must patch the standard library before ssl is imported.
LOAD_COMMANDS = ("run", "compare", "check-cluster", "web", "authrate", "capacity", "privacyidea-bench")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] and argv[0] in LOAD_COMMANDS:
        import locust  # noqa: F401  (monkey-patches with gevent; must precede any import of ssl)
    parser = build_parser()
    from .plan_file import applied

    with applied(parser, argv, os.environ):  # --config FILE and $AUTHBENCH_<OPTION> as defaults (plan_file.py)
        args, extra = parser.parse_known_args(argv)
    if extra:  # said by the subcommand's parser, so the hint names its --help
        subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        subparsers.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    from ..signals import install

    restore = install()  # SIGTERM like Ctrl-C: cells closed, lab down, workers stopped, one line (signals.py)
    try:
        return args.handler(args)
    except AuthbenchError as exc:
        print(f"{PROG}: error: {one_line(str(exc))}", file=sys.stderr)
        if exc.details:  # a failing component's last log lines
            print("  last lines of its log:", file=sys.stderr)
            for line in exc.details:
                print(f"    {line}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # output piped into `head` and the like
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILURE
    except KeyboardInterrupt as exc:
        from ..signals import Interrupted

        interrupted = exc if isinstance(exc, Interrupted) else Interrupted()
        print(f"{PROG}: {interrupted.describe()}", file=sys.stderr, flush=True)
        return interrupted.exit_code
    except Exception as exc:
        if os.environ.get(DEBUG_ENV):
            raise
        print(f"{PROG}: error: unexpected {type(exc).__name__}: {one_line(str(exc))} "
              f"(set {DEBUG_ENV}=1 for a traceback)", file=sys.stderr)
        return EXIT_FAILURE
    finally:
        restore()
