"""report.html's full-run timeline in headless Chromium: drawn offline by the inlined uPlot, annotated, and a
drag across it zooms on that range (a double-click shows the whole run again)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from authbench.report import write_report

CHROMIUM = "/usr/bin/chromium"  # Debian's package, as tests/web/test_browser.py
CAMPAIGN = Path(__file__).resolve().parent.parent / "report" / "fixtures" / "campaign"
STEP_LIMIT_MS = 20_000
SCALE = 2  # a HiDPI screen: the canvas must carry twice the CSS pixels

pytestmark = pytest.mark.browser


def _x_scale(page, index: int) -> tuple[float, float]:
    return tuple(page.evaluate(f"() => {{ const s = document.getElementById('timeline-{index}').timeline.plot"
                               ".scales.x; return [s.min, s.max]; }"))


def test_report_timeline_is_drawn_offline_and_zooms_on_a_dragged_range(tmp_path):
    html, _ = write_report(CAMPAIGN, tmp_path)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900}, device_scale_factor=SCALE)
            page.set_default_timeout(STEP_LIMIT_MS)
            fetched: list[str] = []
            page.on("request", lambda request: fetched.append(request.url))
            problems: list[str] = []
            page.on("pageerror", lambda error: problems.append(str(error)))
            page.goto(html.as_uri())
            assert problems == [] and all(url.startswith("file:") or url.startswith("data:") for url in fetched)

            chart = page.locator("#timeline-1")
            chart.scroll_into_view_if_needed()
            assert chart.get_attribute("data-boundaries") == "4"  # 2x20 #1, #2 and 4x10 #1, #2
            assert chart.get_attribute("data-warmup-bands") == "4" and chart.get_attribute("data-faults") == "0"
            canvas = chart.locator("canvas")
            box = canvas.bounding_box()
            size = canvas.evaluate("c => [c.width, c.height]")
            assert size[0] >= SCALE * box["width"] - 1  # drawn at the screen's resolution, not blurred
            painted = canvas.evaluate("""c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i + 3] && (d[i] < 200 || d[i + 1] < 200)) n++;
                return n; }""")
            assert painted > 10_000  # bars, lines and labels, not an empty frame

            whole = _x_scale(page, 1)
            over = chart.locator(".u-over").bounding_box()
            y = over["y"] + over["height"] / 2
            page.mouse.move(over["x"] + over["width"] * 0.3, y)
            page.mouse.down()
            page.mouse.move(over["x"] + over["width"] * 0.6, y, steps=5)
            page.mouse.up()
            zoomed = _x_scale(page, 1)
            assert whole[0] < zoomed[0] < zoomed[1] < whole[1]
            assert zoomed[1] - zoomed[0] < 0.4 * (whole[1] - whole[0])
            page.mouse.move(over["x"] + over["width"] * 0.45, y)  # the legend reads the second under the pointer
            assert chart.locator(".u-legend .u-series").nth(1).locator(".u-value").inner_text() != "-"
            chart.screenshot(path=str(tmp_path / "timeline-zoomed.png"))
            page.mouse.dblclick(over["x"] + over["width"] * 0.5, y)
            assert _x_scale(page, 1) == whole
            chart.screenshot(path=str(tmp_path / "timeline.png"))
            if os.environ.get("AUTHBENCH_SCREENSHOTS"):  # for a person to look at
                chart.screenshot(path=os.path.join(os.environ["AUTHBENCH_SCREENSHOTS"], "report-timeline.png"))
        finally:
            browser.close()
