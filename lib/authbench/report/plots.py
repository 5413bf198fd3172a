"""The report's plots as PNG bytes (matplotlib's object API, no pyplot: no display and no global figure
registry, so a web server may draw reports from several threads).

Every backend keeps one colour in every plot; warm-up is always grey and shaded, since no figure counts it.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import Any

from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import LogFormatter, ScalarFormatter

from authbench.cluster.faults.table import shown
from authbench.errors import AuthbenchError
from authbench.journeys.returning import LOST
from authbench.openmodel.rates import parse_slo
from authbench.results.sample import MEASURED, OK

from .load import Results, Run, threads_of
from .tables import busiest

WIDTH_IN = 11.0
PANEL_HEIGHT_IN = 3.2
DPI = 110
FONT_SIZE = 10  # matplotlib's default; smaller labels are relative to it
COLORS = colormaps["tab10"].colors
WARMUP_COLOR = "0.6"
WARMUP_SHADE = "0.92"
ERROR_COLOR = "#d62728"
LOST_COLOR = "black"  # a returning user asked for its password again (docs/failover.md): hollow, any backend
FAULT_COLOR = "0.25"
ERROR_BIN_S = 1.0  # errors are counted per this many seconds
POINT_SIZE = 6
CPU_MIN_PCT = 0.5  # components whose CPU never reaches this are left out of the CPU plot
SLO_COLOR = "#d62728"


@dataclass
class Plot:
    name: str  # file name stem, e.g. "tps"
    title: str
    caption: str
    png: bytes


def all_plots(results: Results) -> list[Plot]:
    """Every plot the data supports (the CPU plot only when resources were sampled)."""
    colors = {b: COLORS[i % len(COLORS)] for i, b in enumerate(results.runs)}
    plots = []
    if any(not cell.open for cell in results.cells):  # threads mean something only in the closed model
        plots += [
            Plot("tps", "TPS against threads",
                 "Average TPS per pattern (line) and each repetition (dots; hollow: cut short, incomplete, stopped or "
                 "cut by a write error, left out of the average; triangle: degraded, a worker was lost).",
                 _png(_tps(results, colors))),
            Plot("latency", "Mean and p99 response time against threads",
                 "Averages over repetitions, successful journeys only.", _png(_latency(results, colors))),
        ]
    if any(_levels(run) for run in results.runs.values()):  # the open model: the rate asked for is the x axis
        plots.append(Plot("rates", "Achieved rate and latency against the target rate",
                          "Each level's repetitions (dots; hollow: not sustained) and their average (line): journeys "
                          "started per second against the rate asked for (dotted: achieved = target), and p50 and "
                          "p99 from the intended start.", _png(_rates(results, colors))))
    plots += [
        Plot("timeline", "Response time of every sample",
             "Each dot is one journey; grey dots in shaded bands are warm-up, excluded from every figure; "
             "red crosses are failed journeys.", _png(_timeline(results, colors))),
        Plot("errors", "Errors over time",
             f"Failed journeys per {ERROR_BIN_S:g} s of each backend's run, warm-up included.",
             _png(_errors(results, colors))),
    ]
    if any(run.document.get("capacity") for run in results.runs.values()):
        plots.append(Plot("capacity", "Capacity search: rate against latency and errors",
                          "Each step of the search at its target rate: p99 from the intended start (line) and "
                          "errors; hollow markers failed the SLO or were not sustained; the dashed line is the "
                          "confirmed maximum capacity (the knee), the red line the SLO's limit.",
                          _png(_capacity(results, colors))))
    if any(c.resources for c in results.cells):
        plots.append(Plot("cpu", "CPU per component",
                          "Mean CPU over the measured phase, averaged over repetitions (100% = one core).",
                          _png(_cpu(results))))
    return plots


def _subplots(*grid: int, **kwargs) -> tuple[Figure, Any]:
    """pyplot.subplots without pyplot: a figure of its own, nothing registered globally."""
    figure = Figure(figsize=kwargs.pop("figsize"))
    return figure, figure.subplots(*grid, **kwargs)


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    return buffer.getvalue()


def _thread_axis(ax: Axes, results: Results) -> None:
    ticks = sorted({threads_of(p) for p in results.patterns if threads_of(p)})
    ax.set_xticks(ticks)
    ax.set_xlabel("threads (concurrent users)")
    ax.grid(True, alpha=0.3)


def _tps(results: Results, colors: dict) -> Figure:
    figure, ax = _subplots(figsize=(WIDTH_IN, PANEL_HEIGHT_IN * 1.4))
    for backend, run in results.runs.items():
        line = sorted((threads_of(p), s.tps) for p, s in run.averages().items() if threads_of(p))
        ax.plot([x for x, _ in line], [y for _, y in line], "-o", color=colors[backend], label=backend)
        for cell in run.cells:
            hollow = not cell.counted
            ax.scatter([cell.threads], [cell.summary.tps], s=40 if cell.degraded else 18, alpha=0.6, zorder=3,
                       marker="v" if cell.degraded else "o",
                       facecolors="none" if hollow else colors[backend], edgecolors=colors[backend])
    ax.set_ylabel("TPS (successful journeys/s)")
    ax.set_ylim(bottom=0)
    _thread_axis(ax, results)
    if results.runs:
        ax.legend(title="backend")
    return figure


def _latency(results: Results, colors: dict) -> Figure:
    figure, axes = _subplots(1, 2, figsize=(WIDTH_IN, PANEL_HEIGHT_IN * 1.4))
    for ax, (field, label) in zip(axes, (("mean_ms", "mean"), ("p99_ms", "p99")), strict=True):
        for backend, run in results.runs.items():
            line = sorted((threads_of(p), getattr(s, field)) for p, s in run.averages().items()
                          if threads_of(p) and getattr(s, field) is not None)
            ax.plot([x for x, _ in line], [y for _, y in line], "-o", color=colors[backend], label=backend)
        ax.set_title(f"{label} response time")
        ax.set_ylabel(f"{label} (ms)")
        ax.set_ylim(bottom=0)
        _thread_axis(ax, results)
    if results.runs:
        axes[0].legend(title="backend")
    figure.tight_layout()
    return figure


def _panels(results: Results, height: float = PANEL_HEIGHT_IN) -> tuple[Figure, list[Axes]]:
    count = max(1, len(results.runs))
    figure, axes = _subplots(count, 1, figsize=(WIDTH_IN, height * count), squeeze=False)
    return figure, [row[0] for row in axes]


def _origin(run: Run) -> float:
    return min((s.start for s in run.samples), default=0.0)


def _timeline(results: Results, colors: dict) -> Figure:
    figure, axes = _panels(results)
    for ax, (backend, run) in zip(axes, results.runs.items(), strict=False):
        origin = _origin(run)
        for (lo, hi) in _warmup_spans(run, origin):
            ax.axvspan(lo, hi, color=WARMUP_SHADE, zorder=0)
        warm = [s for s in run.samples if s.phase != MEASURED and s.outcome == OK]
        ax.scatter([s.start - origin for s in warm], [s.duration_ms for s in warm], s=POINT_SIZE,
                   color=WARMUP_COLOR, label="warm-up (excluded)")
        good = [s for s in run.samples if s.phase == MEASURED and s.outcome == OK]
        ax.scatter([s.start - origin for s in good], [s.duration_ms for s in good], s=POINT_SIZE,
                   color=colors[backend], label="measured")
        bad = [s for s in run.samples if s.outcome != OK]
        if bad:
            ax.scatter([s.start - origin for s in bad], [s.duration_ms for s in bad], s=POINT_SIZE * 4,
                       marker="x", color=ERROR_COLOR, label="failed")
        lost = [s for s in run.samples if s.session == LOST]
        if lost:
            ax.scatter([s.start - origin for s in lost], [s.duration_ms for s in lost], s=POINT_SIZE * 4,
                       marker="^", facecolors="none", edgecolors=LOST_COLOR, label="SSO lost (password asked again)")
        _label_cells(ax, run, origin)
        _fault_lines(ax, backend, run, origin)
        ax.set_title(backend, loc="left", fontweight="bold")
        ax.set_ylabel("response time (ms)")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=FONT_SIZE - 1, markerscale=2)
    axes[-1].set_xlabel("seconds since the run's first journey")
    figure.tight_layout()
    return figure


def _warmup_spans(run: Run, origin: float) -> list[tuple[float, float]]:
    spans: dict[tuple[str, int], list[float]] = {}
    for s in run.samples:
        if s.phase != MEASURED:
            span = spans.setdefault((s.pattern, s.repetition), [math.inf, -math.inf])
            span[0], span[1] = min(span[0], s.start - origin), max(span[1], s.end - origin)
    return [(lo, hi) for lo, hi in spans.values()]


def _label_cells(ax: Axes, run: Run, origin: float) -> None:
    """Name each measured cell above its samples, so a reader can tell the patterns apart (and see which
    were cut, stopped or degraded)."""
    firsts: dict[tuple[str, int], float] = {}
    for s in run.samples:
        if s.phase == MEASURED:
            firsts.setdefault((s.pattern, s.repetition), s.start - origin)
    remarks = {(c.pattern, c.repetition): c.remarks for c in run.cells}
    for (pattern, repetition), x in firsts.items():
        label = f"{pattern} #{repetition}{remarks.get((pattern, repetition), '')}"
        ax.annotate(label, (x, 1.0), xycoords=("data", "axes fraction"), xytext=(2, -10),
                    textcoords="offset points", fontsize=FONT_SIZE - 2, color="0.3")


def _fault_lines(ax: Axes, backend: str, run: Run, origin: float) -> None:
    """A dashed line where each fault of a fault plan began, named at the top (docs/failover.md)."""
    played = [fault for cell in run.document.get("cells", []) for fault in cell.get("faults") or []
              if fault.get("time") is not None]
    for i, fault in enumerate(played):
        x = fault["time"] - origin
        ax.axvline(x, color=FAULT_COLOR, linestyle="--", linewidth=1, zorder=1)
        what = shown(fault["fault"], backend).split(" ", 1)[-1]  # without at=…
        ax.annotate(what, (x, 1.0), xycoords=("data", "axes fraction"), xytext=(2, -22 - 10 * (i % 2)),
                    textcoords="offset points", fontsize=FONT_SIZE - 2, color=FAULT_COLOR)


def _errors(results: Results, colors: dict) -> Figure:
    """One axis, a line per backend: errors are rare, so one shared scale reads better than empty panels."""
    figure, ax = _subplots(figsize=(WIDTH_IN, PANEL_HEIGHT_IN))
    total = 0
    for backend, run in results.runs.items():
        origin = _origin(run)
        end = max((s.end - origin for s in run.samples), default=0.0)
        bins = [0] * (int(end // ERROR_BIN_S) + 1)
        for s in run.samples:
            if s.outcome != OK:
                bins[int((s.start - origin) // ERROR_BIN_S)] += 1
        total += sum(bins)
        ax.step([i * ERROR_BIN_S for i in range(len(bins) + 1)], [*bins, bins[-1]], where="post", color=colors[backend],
                label=f"{backend} ({sum(bins)} failed)")
    ax.set_title("failed journeys" if total else "no failed journeys in any run", loc="left", fontweight="bold")
    ax.set_ylabel(f"errors per {ERROR_BIN_S:g} s")
    ax.set_xlabel("seconds since the run's first journey")
    ax.set_ylim(bottom=0, top=None if total else 1)
    ax.grid(True, alpha=0.3)
    if results.runs:
        ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=FONT_SIZE - 1)
    figure.tight_layout()
    return figure


def _cpu(results: Results) -> Figure:
    runs = {b: r for b, r in results.runs.items() if any(c.resources for c in r.cells)}
    figure, axes = _subplots(len(runs), 1, figsize=(WIDTH_IN, PANEL_HEIGHT_IN * len(runs)), squeeze=False)
    patterns = results.patterns
    shades = colormaps["viridis"]
    for ax, (backend, run) in zip((row[0] for row in axes), runs.items(), strict=True):
        sampled = [c for c in run.cells if c.resources]
        names = [n for n in busiest(sampled) if _peak_cpu(sampled, n) >= CPU_MIN_PCT]
        width = 0.8 / max(1, len(patterns))
        for k, pattern in enumerate(patterns):
            cells = [c for c in sampled if c.pattern == pattern]
            if not cells:
                continue
            means = [sum(_cell_cpu(c, n) for c in cells) / len(cells) for n in names]
            ax.bar([i + k * width for i in range(len(names))], means, width=width, label=pattern,
                   color=shades(k / max(1, len(patterns) - 1) * 0.8))
        ax.set_xticks([i + width * (len(patterns) - 1) / 2 for i in range(len(names))], names,
                      rotation=20, ha="right")
        ax.set_title(backend, loc="left", fontweight="bold")
        ax.set_ylabel("CPU (% of one core)")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(title="pattern", fontsize=FONT_SIZE - 1)
    figure.tight_layout()
    return figure


def _cell_cpu(cell, name: str) -> float:
    return float(((cell.resources or {}).get("components", {}).get(name) or {}).get("cpu_pct_mean") or 0.0)


def _peak_cpu(cells: list, name: str) -> float:
    return max((_cell_cpu(c, name) for c in cells), default=0.0)


def _capacity(results: Results, colors: dict) -> Figure:
    figure, (latency, errors) = _subplots(1, 2, figsize=(WIDTH_IN, PANEL_HEIGHT_IN + 0.6))
    for backend, run in results.runs.items():
        found = run.document.get("capacity")
        if not found:
            continue
        cells = {cell.pattern: cell for cell in run.cells}
        points = sorted([(step["rate"], cells[label], step["passed"])
                         for step, label in zip(found["steps"], found.get("step_labels") or [], strict=False)
                         if label in cells], key=lambda point: point[0])
        color = colors[backend]
        for axis, value in ((latency, lambda c: (c.open or {}).get("response_ms", {}).get("p99") or math.nan),
                            (errors, lambda c: 100.0 * c.summary.errors / c.summary.tests if c.summary.tests else 0)):
            axis.plot([p[0] for p in points], [value(p[1]) for p in points], color=color, label=backend)
            for rate, cell, passed in points:
                axis.scatter([rate], [value(cell)], color=color if passed else "white", edgecolors=color, zorder=3)
            if found.get("answer") is not None:
                axis.axvline(found["answer"], color=color, linestyle="--", linewidth=1)
    for text in dict.fromkeys(str(run.document["capacity"].get("slo") or "") for run in results.runs.values()
                              if run.document.get("capacity")):
        _slo_lines(text, latency, errors)
    latency.set(xlabel="target rate (journeys/s)", ylabel="p99 from intended start (ms)", yscale="log")
    errors.set(xlabel="target rate (journeys/s)", ylabel="errors (%)")
    errors.set_ylim(bottom=0)
    latency.legend(fontsize=FONT_SIZE - 1)
    errors.legend(fontsize=FONT_SIZE - 1)
    for axis in (latency, errors):
        axis.set_xlim(left=0)
        axis.grid(True, alpha=0.3)
        _plain_ticks(axis)
    figure.tight_layout()
    return figure


def _slo_lines(text: str, latency: Axes, errors: Axes) -> None:
    """The SLO's limits as horizontal lines: latency terms on the latency axis, the error share on the errors
    axis (parsed by the run's own parser; a text it cannot read draws nothing)."""
    try:
        slo = parse_slo(text) if text else None
    except AuthbenchError:
        return
    for term in slo.terms if slo else ():
        axis = errors if term.metric == "errors" else latency
        axis.axhline(term.limit, color=SLO_COLOR, linewidth=1.2, zorder=2, label=f"SLO {term.describe()}")


def _plain_ticks(ax: Axes) -> None:
    """Tick labels as plain numbers (80, not 8×10¹), on linear and log axes alike."""
    for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
        if scale == "log":
            axis.set_major_formatter(LogFormatter(labelOnlyBase=False))
            axis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5)))
        else:
            plain = ScalarFormatter(useOffset=False)
            plain.set_scientific(False)
            axis.set_major_formatter(plain)


def _levels(run: Run) -> list:
    """The open model's level cells (not a capacity search's steps: the capacity plot has those)."""
    steps = set((run.document.get("capacity") or {}).get("step_labels") or [])
    return [cell for cell in run.cells if cell.open and cell.pattern not in steps]


def _rates(results: Results, colors: dict) -> Figure:
    figure, (achieved, latency) = _subplots(1, 2, figsize=(WIDTH_IN, PANEL_HEIGHT_IN * 1.4))
    top = 0.0
    for backend, run in results.runs.items():
        cells = _levels(run)
        if not cells:
            continue
        color = colors[backend]
        rates = sorted({cell.open["target_rate"] for cell in cells})
        top = max(top, *rates)
        for axis, values, style, label in (
                (achieved, lambda c: c.open["achieved_rate"], "-o", backend),
                (latency, lambda c: c.open["response_ms"].get("p50"), "-o", f"{backend} p50"),
                (latency, lambda c: c.open["response_ms"].get("p99"), "--s", f"{backend} p99")):
            points = [(c.open["target_rate"], values(c), c) for c in cells if values(c) is not None]
            line = [(rate, sum(v for r, v, _ in points if r == rate) / n) for rate in rates
                    if (n := sum(1 for r, _, _ in points if r == rate))]
            axis.plot([r for r, _ in line], [v for _, v in line], style, color=color, label=label, markersize=4)
            for rate, value, cell in points:
                sustained = cell.open.get("sustained", True)
                axis.scatter([rate], [value], s=24, zorder=3, marker=style[-1], edgecolors=color,
                             facecolors=color if sustained else "white")
    achieved.plot([0, top], [0, top], ":", color="0.5", label="achieved = target")
    achieved.set(xlabel="target rate (journeys/s)", ylabel="achieved rate (journeys started/s)")
    latency.set(xlabel="target rate (journeys/s)", ylabel="response time from intended start (ms)")
    for axis in (achieved, latency):
        axis.set_xlim(left=0)
        axis.set_ylim(bottom=0)
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=FONT_SIZE - 1)
        _plain_ticks(axis)
    figure.tight_layout()
    return figure
