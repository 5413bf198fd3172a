"""`authbench report`: a results folder (campaign or run) → report.html, report.md and their plots.

Reads only what is on disk (docs/results-layout.md), so a report can be rebuilt at any time, also for a
run that was killed: see docs/report.md for what each section shows and how the findings are derived.
"""

from __future__ import annotations

from pathlib import Path

from .load import ReportError, load

HTML_FILE = "report.html"
MARKDOWN_FILE = "report.md"
PLOT_PREFIX = "report-"  # plots sit beside report.md as report-<name>.png

__all__ = ["HTML_FILE", "MARKDOWN_FILE", "ReportError", "write_report"]


def write_report(folder: Path, out: Path | None = None) -> tuple[Path, Path]:
    """Write report.html (self-contained) and report.md (+ PNGs) into `out` or `folder`; return both paths.

    Raises ReportError (a one-line message) for a folder that is missing, not a results folder or
    unreadable, and for an `out` that cannot be written.
    """
    from .plots import all_plots  # matplotlib is slow to import: only when a report is really written
    from .render import html, markdown
    from .timeline import timeline_plots

    results = load(Path(folder))
    target = Path(out) if out is not None else Path(folder)
    html_path, md_path = target / HTML_FILE, target / MARKDOWN_FILE
    _writable(target, (html_path, md_path))  # before the plots: a bad --out fails at once, not seconds later
    plots = all_plots(results) + timeline_plots(results)
    names = {plot.name: f"{PLOT_PREFIX}{plot.name}.png" for plot in plots}
    try:
        for plot in plots:
            (target / names[plot.name]).write_bytes(plot.png)
        html_path.write_text(html(results, plots), encoding="utf-8")
        md_path.write_text(markdown(results, plots, names), encoding="utf-8")
    except OSError as exc:
        raise _unwritable(target, exc) from None
    return html_path, md_path


def _writable(target: Path, paths: tuple[Path, ...]) -> None:
    """Create `target` and open each output for appending (changing nothing), or raise ReportError."""
    try:
        target.mkdir(parents=True, exist_ok=True)
        for path in paths:
            with path.open("a", encoding="utf-8"):
                pass
    except OSError as exc:
        raise _unwritable(target, exc) from None


def _unwritable(target: Path, exc: OSError) -> ReportError:
    return ReportError(f"cannot write the report into {target}: {exc.strerror or exc}; "
                       "give a writable folder with --out")
