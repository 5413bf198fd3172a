"""The report's full-run timeline: one per backend run, from results.timeline (the live page's figures).

report.html draws it with the uPlot chart the live page uses (library, chart code and data inlined, so the
file stays self-contained and offline); report.md gets the same series as a PNG.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from authbench.cluster.faults.table import shown
from authbench.results.timeline import FAULT, LEVEL, MEASURING, START, annotations, build

from .load import Results

STATIC = Path(__file__).resolve().parent.parent / "web" / "static"
ASSETS = {"uplot_js": "vendor/uplot/uPlot.iife.min.js", "uplot_css": "vendor/uplot/uPlot.min.css",
          "timeline_js": "timeline.js"}
PLOT_NAME = "run_timeline"
PLOT_TITLE = "Timeline of the whole run"
PLOT_CAPTION = ("Per second (wider buckets on long runs): successful journeys/s (green bars) and errors/s (red), "
                "p50/p95/p99 of the journeys ending in each bucket (right axis), users in flight (dashed grey); "
                "shaded: warm-up; vertical lines: cell or level starts (solid) and faults (dashed).")
PANEL_HEIGHT_IN = 3.4
# As timeline.js draws them: (series, colour, line style).
PERCENTILE_LINES = (("p50_ms", "#2563eb", "-"), ("p95_ms", "#9333ea", "--"), ("p99_ms", "#db2777", ":"))


@dataclass
class RunTimeline:
    backend: str
    data: dict[str, Any]  # {"series": columns, "marks": annotations}: what timeline.js draws


def timelines(results: Results) -> list[RunTimeline]:
    """One timeline per backend run that has samples; fault labels as the backend's user named them."""
    out = []
    for backend, run in results.runs.items():
        if not run.samples:
            continue
        marks = annotations(run.samples, run.document, lambda fault, backend=backend: shown(fault, backend))
        out.append(RunTimeline(backend, {"series": build(run.samples).series(), "marks": marks}))
    return out


def assets() -> dict[str, str]:
    """uPlot, its CSS and timeline.js as text, for inlining into report.html."""
    return {key: (STATIC / name).read_text(encoding="utf-8") for key, name in ASSETS.items()}


def timeline_plots(results: Results) -> list[Any]:
    """report.md's PNG of the timelines (one panel per backend run); none when no run has samples."""
    from .plots import Plot, _png  # matplotlib only when a report is really drawn

    found = timelines(results)
    if not found:
        return []
    return [Plot(PLOT_NAME, PLOT_TITLE, PLOT_CAPTION, _png(_figure(found)))]


def _figure(found: list[RunTimeline]) -> Any:
    from .plots import ERROR_COLOR, FAULT_COLOR, FONT_SIZE, WARMUP_SHADE, WIDTH_IN, _subplots

    figure, axes = _subplots(len(found), 1, figsize=(WIDTH_IN, PANEL_HEIGHT_IN * len(found)), squeeze=False)
    for ax, item in zip((row[0] for row in axes), found, strict=True):
        series, marks = item.data["series"], item.data["marks"]
        origin, width = series["t"][0], series["width_s"]
        xs = [t - origin for t in series["t"]]
        for lo, hi in _bands(marks, xs[-1] + width + origin):
            ax.axvspan(lo - origin, hi - origin, color=WARMUP_SHADE, zorder=0)
        ax.bar(xs, series["ok_per_s"], width=width * 0.92, align="edge", color="#16a34a", alpha=0.6, label="ok/s")
        ax.bar(xs, series["errors_per_s"], width=width * 0.92, align="edge", color=ERROR_COLOR, label="errors/s")
        ax.set_ylabel("journeys/s")
        ax.set_ylim(bottom=0)
        ms = ax.twinx()
        for name, colour, style in PERCENTILE_LINES:
            points = [(x + width / 2, v) for x, v in zip(xs, series[name], strict=True) if v is not None]
            ms.plot([p[0] for p in points], [p[1] for p in points], style, color=colour, linewidth=1.2,
                    label=name.replace("_ms", ""))
        ms.set_ylabel("response time (ms)")
        ms.set_ylim(bottom=0)
        users = ax.twinx()
        users.spines["right"].set_position(("axes", 1.07))
        users.plot([x + width / 2 for x in xs], series["in_flight"], "--", color="0.45", linewidth=1,
                   label="users in flight")
        users.set_ylabel("users in flight", color="0.45")
        users.set_ylim(bottom=0)
        for i, mark in enumerate(m for m in marks if m["what"] in (START, LEVEL, FAULT)):
            fault = mark["what"] == FAULT
            x = mark["t"] - origin
            ax.axvline(x, color=FAULT_COLOR if fault else "0.3", linestyle="--" if fault else "-", linewidth=0.8)
            ax.annotate(mark["label"], (x, 0.0 if fault else 1.0), xycoords=("data", "axes fraction"),
                        xytext=(2, 4 + 10 * (i % 2) if fault else -10 - 10 * (i % 2)), textcoords="offset points",
                        fontsize=FONT_SIZE - 2, color=FAULT_COLOR if fault else "0.25")
        ax.set_title(item.backend, loc="left", fontweight="bold")
        ax.set_xlabel(f"seconds since the run's first journey (buckets of {width:g} s)")
        ax.grid(True, alpha=0.3)
        handles = [h for a in (ax, ms, users) for h in a.get_legend_handles_labels()[0]]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.14, 1.0), fontsize=FONT_SIZE - 1)
    figure.tight_layout()
    return figure


def _bands(marks: list[dict[str, Any]], end: float) -> list[tuple[float, float]]:
    """Warm-up spans, as timeline.js draws them: from a start (or level) mark to its measured mark."""
    bands, begun = [], None
    for mark in marks:
        if mark["what"] in (START, LEVEL):
            begun = mark["t"]
        elif mark["what"] == MEASURING and begun is not None:
            if mark["t"] > begun:
                bands.append((begun, mark["t"]))
            begun = None
    if begun is not None and end > begun:
        bands.append((begun, end))
    return bands
