"""A tiny campaign folder made by hand after docs/results-layout.md, for the campaign tabs' tests."""

from __future__ import annotations

import json
from pathlib import Path

from authbench.results.summary import Summary

BACKENDS = ("stateless", "memcached")
PATTERNS = ("2x20", "10x20")
# backend -> pattern -> (TPS of repetition 1, of repetition 2, errors in repetition 2)
FIGURES = {"stateless": {"2x20": (25.0, 27.0, 0), "10x20": (40.0, 44.0, 3)},
           "memcached": {"2x20": (19.0, 20.0, 0), "10x20": (38.0, 45.0, 0)}}  # 10x20: level with stateless
CHECKS = {"stateless": (True, True, False), "memcached": (True, True, False)}


def expected_tps(backend: str, pattern: str) -> float:
    first, second, _ = FIGURES[backend][pattern]
    return (first + second) / 2


def make_campaign(results: Path, name: str = "campaign-1", started: float = 1_000.0,
                  report: bool = True) -> Path:
    folder = results / name
    cells = []
    for backend in BACKENDS:
        run_cells = []
        for pattern in PATTERNS:
            first, second, errors = FIGURES[backend][pattern]
            for repetition, (tps, errs) in enumerate(((first, 0), (second, errors)), start=1):
                summary = Summary(pattern=pattern, repetition=repetition, tests=40, errors=errs,
                                  successes=40 - errs, mean_ms=50.0 + repetition, tps=tps)
                run_cells.append({"pattern": pattern, "repetition": repetition, "complete": True,
                                  "summary": summary.to_dict(), "steps": {}})
                cells.append({"backend": backend, "pattern": pattern, "repetition": repetition,
                              "status": "done", "run": f"runs/{backend}"})
        # a cut-short cell: never part of the comparison
        cut = Summary(pattern=PATTERNS[0], repetition=3, tests=5, successes=5, tps=999.0)
        run_cells.append({"pattern": PATTERNS[0], "repetition": 3, "complete": False, "summary": cut.to_dict()})
        run = folder / "runs" / backend
        run.mkdir(parents=True)
        (run / "summary.json").write_text(json.dumps({"run_id": backend, "cells": run_cells, "averages": {}}))
    checks = {backend: [{"test": f"Test {i}", "passed": passed, "evidence": [f"{backend} test {i} evidence"]}
                        for i, passed in enumerate(marks, start=1)] for backend, marks in CHECKS.items()}
    document = {"campaign_id": name, "started": started, "finished": started + 60,
                "config": {"backends": list(BACKENDS), "patterns": list(PATTERNS), "warmup_s": 1.0, "repeat": 2,
                           "cell_time_limit_s": 600, "targets": {}, "lab": None},
                "checks": checks, "cells": cells}
    (folder / "campaign.json").write_text(json.dumps(document))
    if report:
        (folder / "report.html").write_text("<html><body><h1>campaign report</h1></body></html>\n")
    return folder
