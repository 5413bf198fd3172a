"""The last campaign under the results folder, read from disk only (docs/results-layout.md).

The web UI's comparison and cluster-check tabs come from here: the newest folder holding a
`campaign.json`, its checks, and each backend's run summary averaged per pattern.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..cluster.checks import FAIL, PASS
from ..results.recorder import CAMPAIGN_FILE, RUNS_DIR, SUMMARY_FILE
from ..results.summary import Summary, averages_by_pattern

REPORT_FILES = ("report.html", "report.md")  # what "download the report" serves, when present
MAX_CAMPAIGN_BYTES = 16 * 1024 * 1024  # a campaign.json larger than this is not a campaign of ours


def last_campaign(results: Path) -> Path | None:
    """The newest campaign folder directly under `results` (by its campaign.json's start time, then name)."""
    found = []
    try:
        folders = [path for path in Path(results).iterdir() if (path / CAMPAIGN_FILE).is_file()]
    except OSError:
        return None
    for folder in folders:
        document = read_json(folder / CAMPAIGN_FILE) or {}
        started = document.get("started")
        found.append((started if isinstance(started, int | float) else 0.0, folder.name, folder))
    return max(found)[2] if found else None


def campaign_view(results: Path) -> dict[str, Any]:
    """The JSON of the campaign tabs: comparison (backend × pattern), cluster checks, report files."""
    folder = last_campaign(results)
    if folder is None:
        return {"campaign": None, "message": f"no campaign under {results} yet (authbench compare writes one)"}
    document = read_json(folder / CAMPAIGN_FILE)
    if document is None:
        return {"campaign": folder.name, "message": f"{folder.name}/{CAMPAIGN_FILE} cannot be read"}
    config = document.get("config") or {}
    backends = list(config.get("backends") or [])
    patterns = list(config.get("patterns") or [])
    comparison: dict[str, dict[str, dict[str, Any]]] = {}
    for backend in backends:
        comparison[backend] = {}
        for pattern, summary in _averages(folder, document, backend).items():
            if pattern not in patterns:
                patterns.append(pattern)
            comparison[backend][pattern] = {"tps": summary.tps, "mean_ms": summary.mean_ms, "tests": summary.tests,
                                            "errors": summary.errors, "repetitions": summary.repetitions}
    checks = document.get("checks") or {}
    tests = sorted({entry.get("test", "") for entries in checks.values() for entry in entries or []})
    return {
        "campaign": folder.name, "started": document.get("started"), "finished": document.get("finished"),
        "backends": backends, "patterns": patterns, "warmup_s": config.get("warmup_s"),
        "repeat": config.get("repeat"), "comparison": comparison,
        "checks": {"tests": tests, "rows": [{"backend": backend, "marks": {
            entry.get("test", ""): {"mark": PASS if entry.get("passed") else FAIL,
                                    "evidence": [str(item) for item in entry.get("evidence") or []]}
            for entry in entries or []}} for backend, entries in checks.items()]},
        "cells": document.get("cells") or [],
        "reports": [name for name in REPORT_FILES if (folder / name).is_file()],
    }


def report_path(results: Path, name: str) -> Path | None:
    """A report file of the last campaign, only by one of the known names (nothing else is served)."""
    folder = last_campaign(results)
    if folder is None or name not in REPORT_FILES or not (folder / name).is_file():
        return None
    return folder / name


def _averages(folder: Path, document: dict[str, Any], backend: str) -> dict[str, Summary]:
    """Per pattern, the average over the backend's done cells, from its run folder's summary.json."""
    runs = {cell.get("run") for cell in document.get("cells") or [] if cell.get("backend") == backend}
    runs.discard(None)
    run = folder / (sorted(runs)[0] if runs else f"{RUNS_DIR}/{backend}")
    if not run.resolve().is_relative_to(folder.resolve()):
        return {}
    summary = read_json(run / SUMMARY_FILE) or {}
    return averages_by_pattern(cell for cell in summary.get("cells") or []
                               if isinstance(cell.get("summary"), dict) and "pattern" in cell)


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from a results file, or None when it is missing, too large or not one."""
    try:
        if path.stat().st_size > MAX_CAMPAIGN_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return data if isinstance(data, dict) else None
