"""Every run and campaign under the results folder, as the web UI lists them — whoever started them.

The results folder is the registry: a folder with a `summary.json` is a run, one with a `campaign.json`
a campaign, whether `authbench run`, `compare` or this UI wrote it. A run whose `finished` is still null
is *running* while its samples keep growing (so a CLI run shows up live here), *stopped* when a person
stopped it (summary.json says so), *write-error* when its folder refused a write, and *interrupted* once its
samples have been still for RUNNING_QUIET_S.
Reports are built on demand, and two runs can be compared in one report (the report's "set of runs"
layout, over links to the two folders).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from ..names import is_safe_name
from ..results.recorder import CAMPAIGN_FILE, SAMPLES_FILE, SUMMARY_FILE
from .campaign import read_json

RUNNING_QUIET_S = 15.0  # an unfinished run whose samples.csv has not changed for this long was interrupted
MAX_LISTED = 200  # newest first
RUNNING, DONE, STOPPED, INTERRUPTED = "running", "done", "stopped", "interrupted"
WRITE_ERROR = "write-error"  # its results folder refused a write (a full disk): it stopped (summary.json's write_error)


def list_runs(results: Path, now: float | None = None) -> list[dict[str, Any]]:
    """Runs and campaigns directly under `results`, newest first, as JSON-ready rows."""
    now = time.time() if now is None else now
    rows = []
    try:
        folders = [path for path in Path(results).iterdir() if path.is_dir() and is_safe_name(path.name)]
    except OSError:
        return []
    for folder in folders:
        row = _campaign_row(folder) if (folder / CAMPAIGN_FILE).is_file() else _run_row(folder, now)
        if row is not None:
            rows.append(row)
    rows.sort(key=lambda row: (row["started"] or 0, row["id"]), reverse=True)
    return rows[:MAX_LISTED]


def _run_row(folder: Path, now: float) -> dict[str, Any] | None:
    document = read_json(folder / SUMMARY_FILE)
    if document is None:
        return None
    cells = document.get("cells") or []
    samples = folder / SAMPLES_FILE
    if document.get("finished"):
        state = DONE
    elif document.get("write_error"):
        state = WRITE_ERROR
    elif (document.get("interrupted") or {}).get("by_user"):
        state = STOPPED
    else:
        changed = samples.stat().st_mtime if samples.exists() else (document.get("started") or 0)
        state = RUNNING if now - changed < RUNNING_QUIET_S else INTERRUPTED
    return {"id": folder.name, "kind": "run", "state": state, "target": (document.get("config") or {}).get("target"),
            "started": document.get("started"), "finished": document.get("finished"),
            "patterns": (document.get("plan") or {}).get("patterns") or [], "cells_done": len(cells),
            "tests": sum(int((c.get("summary") or {}).get("tests") or 0) for c in cells),
            "errors": sum(int((c.get("summary") or {}).get("errors") or 0) for c in cells),
            "report": (folder / "report.html").is_file()}


def _campaign_row(folder: Path) -> dict[str, Any] | None:
    document = read_json(folder / CAMPAIGN_FILE)
    if document is None:
        return None
    config = document.get("config") or {}
    return {"id": folder.name, "kind": "campaign", "state": DONE if document.get("finished") else RUNNING,
            "target": ", ".join(config.get("backends") or []), "started": document.get("started"),
            "finished": document.get("finished"), "patterns": config.get("patterns") or [],
            "cells_done": None, "tests": None, "errors": None, "report": (folder / "report.html").is_file()}


def run_folder(results: Path, run_id: str) -> Path | None:
    """The folder of a listed run or campaign, or None for a name that is not one (never outside `results`)."""
    if not is_safe_name(run_id):
        return None
    folder = Path(results) / run_id
    return folder if (folder / SUMMARY_FILE).is_file() or (folder / CAMPAIGN_FILE).is_file() else None


def report_stale(folder: Path) -> bool:
    """Whether a folder has no report.html, or one older than its summary.json (the results changed since)."""
    from ..report import HTML_FILE

    report, summary = folder / HTML_FILE, folder / SUMMARY_FILE
    if not report.is_file():
        return True
    return summary.is_file() and summary.stat().st_mtime > report.stat().st_mtime


def build_report(results: Path, run_id: str) -> Path | None:
    """Write (or rewrite) the report of one run or campaign; its report.html, or None for an unknown id.

    Raises report.ReportError (one line) when the folder cannot be reported on."""
    from ..report import write_report

    folder = run_folder(results, run_id)
    if folder is None:
        return None
    return write_report(folder)[0]


def compare_report(results: Path, first: str, second: str, out: Path) -> Path | None:
    """One report with two runs side by side, written into `out`; None when either id is not a run."""
    from ..report import write_report

    folders = [run_folder(results, run_id) for run_id in (first, second)]
    if any(f is None or not (f / SUMMARY_FILE).is_file() for f in folders) or first == second:
        return None
    with tempfile.TemporaryDirectory(prefix="authbench-compare-") as side_by_side:
        for folder in folders:
            assert folder is not None
            (Path(side_by_side) / folder.name).symlink_to(folder.resolve(), target_is_directory=True)
        return write_report(Path(side_by_side), out)[0]
