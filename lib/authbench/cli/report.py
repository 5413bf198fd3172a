"""`authbench report FOLDER [--out DIR]`: report.html and report.md from a stored campaign or run."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import AuthbenchError
from .console import say


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("report", help="report.html and report.md from a results folder (campaign or run)")
    parser.add_argument("folder", help="a results folder: results/<campaign-id> or results/<run-id>")
    parser.add_argument("--out", help="write the report here (default: into the results folder)")
    parser.set_defaults(handler=_report)


def _report(args: argparse.Namespace) -> int:
    from ..report import ReportError, write_report

    try:
        html, md = write_report(Path(args.folder), Path(args.out) if args.out else None)
    except ReportError as exc:
        raise AuthbenchError(str(exc)) from None
    say(f"report: {html}")
    say(f"        {md}")
    return 0
