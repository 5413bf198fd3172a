"""Locust's own page, made safe beside an authbench plan: its controls act on the plan, its statistics
are explained, and a tab of its own mirrors authbench's cells.

Locust's page knows nothing of patterns, warm-up or repetitions: its START would load without a plan, its
RESET and EDIT would make its figures disagree with the plan's, and its Statistics tab counts every HTTP
step and warm-up journey together. Rather than hide the page, authbench takes its controls over and adds
an "authbench cells" tab (Locust's extension points: `extended_tabs`, `extended_tables`, and
`extended_stats` in the /stats/requests answer) that shows the measured figures the report will show.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from flask import Response, jsonify, request

from .launch import Launcher
from .live import LiveRun

CELLS_TAB = "authbench-cells"
CELLS_COLUMNS = [  # key in the row, column title
    ("cell", "cell (measured journeys only; warm-up excluded)"), ("state", "state"), ("tests", "Tests"),
    ("errors", "Errors"), ("mean_ms", "Mean Test Time (ms)"), ("tps", "TPS"), ("p50_ms", "p50 (ms)"),
    ("p99_ms", "p99 (ms)"),
]
STATS_ROUTE = "/stats/requests"  # what Locust's page polls; its answer carries our tab's rows


def adapt(environment, launcher: Launcher, live: LiveRun, guard: Callable, prefix: str) -> None:
    """Point Locust's page at authbench's (`prefix`), take its controls over and add the cells tab."""
    web_ui = environment.web_ui
    app = web_ui.app
    web_ui.template_args["extended_csv_files"] = [  # Locust's Download tab links to our page
        {"href": f"{prefix}/", "title": "authbench: start a plan, live Grinder table, every run and its report"}]
    web_ui.template_args["extended_tabs"] = [{"title": "authbench cells", "key": CELLS_TAB}]
    web_ui.template_args["extended_tables"] = [
        {"key": CELLS_TAB, "structure": [{"key": key, "title": title} for key, title in CELLS_COLUMNS]}]
    refused = f"start runs from authbench's page ({prefix}/): exact patterns, warm-up and repetitions"

    def refuse_swarm() -> Response:
        return jsonify({"success": False, "message": refused, "host": environment.host})

    app.view_functions["locust.swarm"] = guard(refuse_swarm)
    _take_over_controls(app, launcher, guard, prefix)
    web_ui.update_template_args = _without_our_argv(web_ui.update_template_args)

    @app.after_request
    def add_cells(response: Response) -> Response:
        if request.path == STATS_ROUTE and response.status_code == 200 and response.is_json:
            data = response.get_json()
            data["extended_stats"] = [{"key": CELLS_TAB, "data": cell_rows(live.snapshot())}]
            response.set_data(json.dumps(data))
        return response


def cell_rows(snapshot: dict[str, Any]) -> list[dict[str, str]]:
    """The live Grinder table (LiveRun.snapshot) as the tab's rows: finished cells, averages, the running one."""
    rows = [*snapshot["rows"], *([snapshot["running"]] if snapshot.get("running") else [])]
    out = []
    for row in rows:
        summary = row.get("summary") or {}
        state = {"cell": "done" if row.get("complete", True) else "cut short", "average": "average",
                 "running": "running", "stopped": "stopped by the user"}.get(row.get("kind", ""), "")
        out.append({"cell": row["label"], "state": state, "tests": _number(summary.get("tests"), 0),
                    "errors": _number(summary.get("errors"), 0), "mean_ms": _number(summary.get("mean_ms"), 1),
                    "tps": _number(summary.get("tps"), 2), "p50_ms": _number(summary.get("median_ms"), 1),
                    "p99_ms": _number(summary.get("p99_ms"), 1)})
    return out


def _number(value: Any, decimals: int) -> str:
    return "-" if value is None else f"{float(value):.{decimals}f}"


def _take_over_controls(app, launcher: Launcher, guard: Callable, prefix: str) -> None:
    """Locust's STOP stops the plan (the cell it cut is left out of every average); RESET and EDIT, which
    would make Locust's figures and the plan's disagree, are refused while a plan runs."""
    views = app.view_functions
    locust_stop, locust_reset = views["locust.stop"], views["locust.reset_stats"]
    locust_edit = views["locust.update_user"]

    def stop() -> Any:
        if launcher.stop(by="with Locust's STOP button"):
            return jsonify({"success": True, "message": "authbench plan stopped; finished repetitions are kept"})
        return locust_stop()

    def refused(original: Callable[[], Any], what: str) -> Callable[[], Any]:
        def view() -> Any:
            if launcher.running:
                message = f"{what} is off while an authbench plan runs: stop it on {prefix}/ (or with STOP) first"
                return jsonify({"success": False, "message": message}), 409
            return original()

        return view

    views["locust.stop"] = guard(stop)
    views["locust.reset_stats"] = guard(refused(locust_reset, "resetting the statistics"))
    views["locust.update_user"] = guard(refused(locust_edit, "changing the users"))


def _without_our_argv(update: Callable[[], None]) -> Callable[[], None]:
    """Locust's UI parses sys.argv with Locust's parser to list extra options: ours would make it exit."""

    def wrapper() -> None:
        saved = sys.argv[1:]
        sys.argv[1:] = []
        try:
            update()
        finally:
            sys.argv[1:] = saved

    return wrapper
