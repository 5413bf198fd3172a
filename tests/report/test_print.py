"""report.html in headless Chromium, printed to PDF and on screen: no column of a wide table is cut.

The folder is a real open-model run (`authbench run --target lab:memcached --levels low=…,high=…,max --slo …`,
tests/report/fixtures/levels) with Test 4 sections added to two of its cells (the figures of
tests/faults/test_fault_table.py's kind). Clipped text is left out of Chromium's PDF, so the PDF's text
(pdftotext, Debian's poppler-utils) must hold every header and every row of the Test 4, Load levels and
capacity tables whole, in order; no word may lie beyond the page; and in print and on screen no table may
be wider than the box it sits in.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from authbench.report import write_report
from authbench.report.levels import capacity_tables, levels_table
from authbench.report.load import load
from authbench.report.tables import failover_table

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"  # Debian's package (deploy/setup-system.sh); Playwright downloads no browser
PDFTOTEXT = shutil.which("pdftotext")  # poppler-utils (deploy/setup-system.sh)
LEVELS = Path(__file__).parent / "fixtures" / "levels"
SCREEN_WIDTHS = (1280, 1000, 600)  # a desktop window, a narrow one (wide tables stacked) and a phone
PRINT_WIDTH = 720  # CSS px of an A4 page less its margins: the viewport print media is checked at
EDGE_PT = 0.5  # rounding of pdftotext's word boxes
FAULTS = ("at=2s stop memcached/memcached-a", "at=6s start memcached/memcached-a")
# Every table box whose content is wider than the box, and every table wider than the body: [] when none is cut.
CLIPPED = """() => {
  const body = document.body.getBoundingClientRect();
  const cut = [];
  for (const box of document.querySelectorAll('.tbl')) {
    const title = (box.querySelector('caption') || box).textContent.trim().slice(0, 40);
    if (box.scrollWidth > box.clientWidth + 1) cut.push(`${title}: box ${box.clientWidth} < ${box.scrollWidth}`);
    const right = box.querySelector('table').getBoundingClientRect().right;
    if (right > body.right + 1) cut.push(`${title}: table ends at ${right}, page at ${body.right}`);
  }
  return cut;
}"""


def _failover(faults: tuple[str, ...], lost: int) -> dict:
    return {"windows": [{"window": "before", "errors": 0, "journeys": 12, "max_ms": 90.0},
                        {"window": f"after {faults[0]}", "errors": 3, "journeys": 20, "max_ms": 1234.5},
                        {"window": f"after {faults[1]}", "errors": 0, "journeys": 14, "max_ms": 95.0}],
            "faults": [{"fault": faults[0], "time": None, "logged_in_users": 5, "reauthenticated_users": lost,
                        "recovery_s": 4.5}]}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("print") / "levels"
    shutil.copytree(LEVELS, folder)
    document = json.loads((folder / "summary.json").read_text())
    for cell, lost in zip(document["cells"][:2], (3, 1), strict=True):
        cell["failover"] = _failover(FAULTS, lost)
    (folder / "summary.json").write_text(json.dumps(document))
    html, _ = write_report(folder, folder / "report")
    results = load(folder)
    tables = [failover_table(results), levels_table(results), *capacity_tables(results)]
    assert all(tables) and len(tables) == 3
    return html, tables


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


def _words(text: str) -> str:
    """Without whitespace: a cell may wrap anywhere (after a hyphen too), its characters stay in order."""
    return "".join(text.split())


def test_the_printed_report_holds_every_column_of_test4_levels_and_capacity(report, browser, tmp_path):
    html, tables = report
    assert PDFTOTEXT, "pdftotext is missing: run 'make setup' (Debian's poppler-utils)"
    page = browser.new_page()
    page.goto(html.as_uri())
    pdf = tmp_path / "report.pdf"
    page.pdf(path=str(pdf), prefer_css_page_size=True, print_background=True)
    page.close()
    text = _words(subprocess.run([PDFTOTEXT, "-raw", str(pdf), "-"], capture_output=True, text=True,
                                 check=True).stdout)
    for table in tables:
        assert _words(" ".join(table.header)) in text, f"{table.title}: a header is cut"
        for row in table.rows:  # every cell, the last column's included, in order
            assert _words(" ".join(row)) in text, f"{table.title}: row {row} is cut"
    boxes = subprocess.run([PDFTOTEXT, "-bbox", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    pages = [float(w) for w in re.findall(r'<page width="([\d.]+)"', boxes)]
    assert pages and all(width == pages[0] for width in pages)
    right = max(float(x) for x in re.findall(r'<word xMin="[\d.]+" yMin="[\d.]+" xMax="([\d.]+)"', boxes))
    assert right <= pages[0] + EDGE_PT  # no word runs off the page


@pytest.mark.parametrize("media, width", [("print", PRINT_WIDTH), *(("screen", w) for w in SCREEN_WIDTHS)])
def test_no_table_is_wider_than_its_box(report, browser, media, width):
    html, _ = report
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.emulate_media(media=media)
    page.goto(html.as_uri())
    assert page.evaluate(CLIPPED) == []
    page.close()
