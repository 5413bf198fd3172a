"""The web UI in a real browser: headless Chromium (Debian's) driven by Playwright, `authbench web` as a process.

One 2x20 run against the session lab, started from the form, watched until the Grinder table shows
Tests = 40; the figures on the page must be those of the run's summary.json. Then the campaign tab.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from campaign_data import expected_tps, make_campaign
from playwright.sync_api import expect, sync_playwright

from ports import WEB

CHROMIUM = "/usr/bin/chromium"  # Debian's package (deploy/setup-system.sh); Playwright downloads no browser
START_LIMIT = 60.0  # seconds for `authbench web` to answer
RUN_LIMIT_MS = 120_000  # the 2x20 run, warm-up included, on a busy machine
STEP_LIMIT_MS = 20_000  # any other wait on the page
BACKEND = "stateless"


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as answer:  # noqa: S310 (loopback, our own server)
        return answer.read()


@pytest.fixture
def web(lab, tmp_path):
    results = tmp_path / "results"
    make_campaign(results)
    env = {**os.environ, "AUTHBENCH_LAB_DIR": str(lab.run_dir)}
    env.pop("AUTHBENCH_WEB_AUTH", None)
    log = (tmp_path / "web.log").open("w")
    process = subprocess.Popen([sys.executable, "-m", "authbench", "web", "--web-port", str(WEB),
                                "--results", str(results)], env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{WEB}"
    deadline = time.monotonic() + START_LIMIT
    try:
        while True:
            try:
                _get(f"{base}/authbench/api/state")
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"authbench web did not start: {(tmp_path / 'web.log').read_text()[-2000:]}")
                time.sleep(0.2)
        yield base, results
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
    assert "Traceback" not in (tmp_path / "web.log").read_text()


def _row(page, label: str, column: str):
    return page.locator(f'#grinder tr[data-label="{label}"] td[data-col="{column}"]')


def test_start_watch_and_read_a_run_in_chromium(web, tmp_path):
    base, results = web
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(STEP_LIMIT_MS)
            page.goto(f"{base}/authbench/")
            expect(page.locator("#pattern")).to_have_value("2x1000,10x200,20x200")  # the form got its defaults

            page.fill("#target", f"lab:{BACKEND}")
            asked: list[str] = []
            page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
            page.click("#start")  # the full 2012 plan: asked to confirm first, and declined
            expect(page.locator("#state")).to_have_text("idle")
            assert asked and asked[0].startswith("This plan takes about ")
            page.fill("#pattern", "2x2O")  # a letter O: bad input gets a visible one-line message
            page.click("#start")
            expect(page.locator("#form-error")).to_contain_text("is not USERSxRUNS")

            page.fill("#pattern", "2x20")
            page.fill("#warmup", "2s")
            page.fill("#repeat", "1")
            page.click("#start")
            expect(page.locator("#phase")).to_have_text("warm-up (not measured)")  # watched live
            expect(page.locator("#form-error")).to_be_hidden()
            expect(_row(page, "2x20 #1", "tests")).to_have_text("40", timeout=RUN_LIMIT_MS)
            expect(page.locator("#state")).to_have_text("done")
            chart = page.locator("#chart")  # drawn with the warm-up shaded and the cell's start marked
            expect(chart).to_have_attribute("data-warmup-bands", "1")
            expect(chart).to_have_attribute("data-boundaries", "1")
            chart.hover()
            expect(page.locator("#chart-tip")).to_contain_text("ok/s")
            assert "elapsed" in page.locator("#clock").inner_text()
            page.screenshot(path=str(tmp_path / "run.png"), full_page=True)
            if os.environ.get("AUTHBENCH_SCREENSHOTS"):  # for a person to look at
                page.screenshot(path=os.path.join(os.environ["AUTHBENCH_SCREENSHOTS"], "run.png"), full_page=True)

            run_id = json.loads(_get(f"{base}/authbench/api/state"))["run_id"]
            summary = json.loads((results / run_id / "summary.json").read_text())["cells"][0]["summary"]
            assert summary["tests"] == 40
            assert _row(page, "2x20 #1", "errors").inner_text() == str(summary["errors"])
            assert _row(page, "2x20 #1", "mean_ms").inner_text() == f"{summary['mean_ms']:.1f}"
            assert _row(page, "2x20 #1", "tps").inner_text() == f"{summary['tps']:.2f}"
            assert page.locator("#journeys").inner_text().startswith("40 of 40 measured journeys done")
            assert page.locator("#per-user tbody tr").count() == 2

            page.click("button[data-tab=campaign]")
            tps = page.locator(f'#comparison td[data-backend="{BACKEND}"][data-pattern="10x20"]')
            expect(tps).to_contain_text(f"{expected_tps(BACKEND, '10x20'):.2f}*")  # errors in a repetition
            expect(page.locator(f'#checks td[data-backend="{BACKEND}"][data-test="Test 3"]')).to_have_text("×")
            page.screenshot(path=str(tmp_path / "campaign.png"), full_page=True)
            with page.expect_download() as download:
                page.click("a.report")
            assert "campaign report" in Path(download.value.path()).read_text()

            page.click("button[data-tab=runs]")  # every run under the results folder, its report on demand
            row = page.locator(f'#runs tr[data-run="{run_id}"]')
            expect(row).to_contain_text("done")
            with page.expect_popup() as popup:
                row.locator("button").click()
            expect(popup.value.locator("h1")).to_contain_text("authbench report", timeout=RUN_LIMIT_MS)
            if os.environ.get("AUTHBENCH_SCREENSHOTS"):
                page.screenshot(path=os.path.join(os.environ["AUTHBENCH_SCREENSHOTS"], "runs.png"), full_page=True)
        finally:
            browser.close()
    served = b"".join(_get(f"{base}{path}") for path in (
        "/authbench/api/state", "/authbench/api/campaign", "/", "/stats/requests", "/exceptions", "/logs"))
    assert b"pw-" not in served
