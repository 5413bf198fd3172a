"""What tests of several kinds read from a run's results folder: its summary, and that no secret reached it."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from authbench.cli import main


def run_summary(argv: list[str], results: Path, run_id: str) -> tuple[int, dict | None]:
    """`authbench run ARGV` into RESULTS/RUN_ID: (exit status, summary.json or None when the run wrote none)."""
    code = main(["run", *argv, "--results", str(results), "--run-id", run_id])
    summary = results / run_id / "summary.json"
    return code, json.loads(summary.read_text()) if summary.exists() else None


def assert_no_secret_in(folder: Path, secrets: Iterable[str], markers: Iterable[str] = ()) -> None:
    """No secret (shown by its first characters only) and no marker of one (a JWT's header, a parameter's name) in
    any file under `folder`."""
    secrets, markers = list(secrets), list(markers)
    for path in folder.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            for secret in secrets:
                assert secret not in text, f"{secret[:4]}… in {path}"
            for marker in markers:
                assert marker not in text, f"{marker} in {path}"
