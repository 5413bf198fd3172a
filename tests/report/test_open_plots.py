"""Open-model reports plot against the rate asked for, not threads; the capacity plot carries the SLO's limits.

Read from a real levels run with a capacity search (tests/report/fixtures/levels: `--slo 'p99<1500ms,errors<1%'`).
"""

from __future__ import annotations

import re
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg

from authbench.report import write_report
from authbench.report.load import load
from authbench.report.plots import _capacity, _rates

LEVELS = Path(__file__).parent / "fixtures" / "levels"
COLORS = {"lab:memcached": "C0"}
SCIENTIFIC = re.compile(r"[×^$e]")  # 8×10¹ (mathtext), 1e+02: not what a reader wants on an axis


def _labels(figure) -> list[str]:
    FigureCanvasAgg(figure).draw()  # tick labels exist once drawn
    return [label.get_text() for ax in figure.axes for axis in (ax.xaxis, ax.yaxis)
            for label in axis.get_ticklabels(which="both") if label.get_text()]


def test_levels_draw_rates_and_no_thread_plots(tmp_path):
    html, md = (p.read_text() for p in write_report(LEVELS, tmp_path))
    assert (tmp_path / "report-rates.png").is_file() and (tmp_path / "report-capacity.png").is_file()
    assert not (tmp_path / "report-tps.png").exists() and not (tmp_path / "report-latency.png").exists()
    for text in (html, md):
        assert "Achieved rate and latency against the target rate" in text and "against threads" not in text


def test_rates_plot_has_target_rate_on_x_and_both_percentiles():
    figure = _rates(load(LEVELS), COLORS)
    achieved, latency = figure.axes
    assert "target rate" in achieved.get_xlabel() and "target rate" in latency.get_xlabel()
    legend = [t.get_text() for t in latency.get_legend().get_texts()]
    assert legend == ["lab:memcached p50", "lab:memcached p99"]
    rates = sorted({x for line in latency.get_lines() for x in line.get_xdata()})
    assert rates == [5.0, 15.0]  # the levels low and high, not the search's step
    assert not [label for label in _labels(figure) if SCIENTIFIC.search(label)]


def test_capacity_plot_draws_the_slo_limits_with_plain_ticks():
    figure = _capacity(load(LEVELS), COLORS)
    latency, errors = figure.axes
    assert latency.get_yscale() == "log"
    slo = {ax: [(line.get_label(), line.get_ydata()[0]) for line in ax.get_lines() if "SLO" in line.get_label()]
           for ax in (latency, errors)}
    assert slo[latency] == [("SLO p99<1500ms", 1500.0)] and slo[errors] == [("SLO errors<1%", 1.0)]
    labels = _labels(figure)
    assert labels and not [label for label in labels if SCIENTIFIC.search(label)]
