"""The web UI in a real browser: headless Chromium (Debian's) driven by Playwright, `authbench web` as a process.

One 2x20 run against the session lab, started from the form, watched until the Grinder table shows
Tests = 40; the figures on the page must be those of the run's summary.json. Then the campaign tab.
A second test: a CLI run followed live in "All runs" while the form is refused its busy target, Locust's
own page mirroring the cells and its STOP button ending a plan, and foreign Host or Origin refused.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from browser_kit import STEP_LIMIT_MS, chromium, get, start_declined, ui_page, web_ui
from campaign_data import expected_tps, make_campaign
from playwright.sync_api import expect, sync_playwright

from authbench_lab.config import password_for, username

from ports import WEB

pytestmark = pytest.mark.browser  # make test-browser

RUN_LIMIT_MS = 120_000  # the 2x20 run, warm-up included, on a busy machine
BACKEND = "stateless"
WRONG_PASSWORD = "not-the-Password-1"


@pytest.fixture
def web(lab, tmp_path):
    results = tmp_path / "results"
    make_campaign(results)
    with web_ui(lab.run_dir, results, WEB, tmp_path / "web.log") as base:
        yield base, results


def _row(page, label: str, column: str):
    return page.locator(f'#grinder tr[data-label="{label}"] td[data-col="{column}"]')


def test_start_watch_and_read_a_run_in_chromium(web, tmp_path):
    base, results = web
    with ui_page(base, 900) as (_, page):
        expect(page.locator("#pattern")).to_have_value("2x1000,10x200,20x200")  # the form got its defaults

        page.fill("#target", f"lab:{BACKEND}")
        # the full 2012 plan: asked to confirm first (after the estimate), and declined
        assert start_declined(page).startswith("This plan takes about ")
        expect(page.locator("#state")).to_have_text("idle")
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
        chart = page.locator("#chart")  # the whole run (uPlot): warm-up shaded, the cell's start marked
        expect(chart).to_have_attribute("data-warmup-bands", "1")
        expect(chart).to_have_attribute("data-boundaries", "1")
        expect(chart.locator("canvas")).to_be_visible()
        chart.locator(".u-over").hover()  # the legend reads the second under the pointer
        ok_per_s = chart.locator(".u-legend .u-series").nth(1).locator(".u-value")
        expect(ok_per_s).to_have_text(re.compile(r"^\d+\.\d\d$"))
        assert "elapsed" in page.locator("#clock").inner_text()
        page.screenshot(path=str(tmp_path / "run.png"), full_page=True)
        if os.environ.get("AUTHBENCH_SCREENSHOTS"):  # for a person to look at
            page.screenshot(path=os.path.join(os.environ["AUTHBENCH_SCREENSHOTS"], "run.png"), full_page=True)

        run_id = json.loads(get(f"{base}/authbench/api/state"))["run_id"]
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
        with page.expect_popup() as popup:  # the campaign's report, rebuilt: a winner only beyond the spread
            page.locator('#runs tr[data-run="campaign-1"] button').click()
        findings = popup.value.locator("body")
        expect(findings).to_contain_text("At 2 threads (2x20) stateless has the highest TPS")
        expect(findings).to_contain_text("At 10 threads (10x20) stateless and memcached are level: their "
                                         "repetitions overlap (stateless 40.00–44.00, memcached 38.00–45.00 TPS)")
        if os.environ.get("AUTHBENCH_SCREENSHOTS"):
            page.screenshot(path=os.path.join(os.environ["AUTHBENCH_SCREENSHOTS"], "runs.png"), full_page=True)
    served = b"".join(get(f"{base}{path}") for path in (
        "/authbench/api/state", "/authbench/api/campaign", "/", "/stats/requests", "/exceptions", "/logs"))
    assert b"pw-" not in served


def _request(url: str, method: str = "GET", headers: dict[str, str] | None = None, body: bytes | None = None) -> int:
    answer = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(answer, timeout=10) as response:  # noqa: S310 (loopback, our own server)
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def _runs_row(page, run_id: str):
    page.click("button[data-tab=runs]")
    return page.locator(f'#runs tr[data-run="{run_id}"]')


def test_cli_runs_live_busy_targets_locusts_page_and_foreign_requests_in_chromium(web, lab, tmp_path):
    base, results = web
    env = {**os.environ, "AUTHBENCH_LAB_DIR": str(lab.run_dir)}
    good, bad = username(1, lab.users), username(2, lab.users)  # the second account's logins all fail
    accounts = tmp_path / "accounts.csv"
    accounts.write_text(f"{good},{password_for(good)}\n{bad},{WRONG_PASSWORD}\n")
    command = [sys.executable, "-m", "authbench", "run", "--target", "lab:local", "--pattern", "2x300",
               "--warmup", "2s", "--accounts-csv", str(accounts), "--results", str(results), "--run-id",
               "from-the-cli"]
    with sync_playwright() as playwright:
        browser = chromium(playwright)
        cli_run = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(STEP_LIMIT_MS)
            page.goto(f"{base}/authbench/")
            # The CLI's run shows up live in "All runs", and the form is refused its (busy) lab.
            expect(_runs_row(page, "from-the-cli")).to_contain_text("running", timeout=RUN_LIMIT_MS)
            page.click("button[data-tab=run]")
            page.fill("#target", "lab:stateless")
            page.fill("#pattern", "1x5")
            page.fill("#warmup", "0")
            page.click("#start")
            expect(page.locator("#form-error")).to_contain_text("is already under load by authbench run")
            expect(page.locator("#state")).to_have_text("idle")
            assert cli_run.wait(timeout=RUN_LIMIT_MS / 1000) == 0, cli_run.stderr.read()
            row = _runs_row(page, "from-the-cli")
            expect(row).to_contain_text("done")
            # Its report, built here, lists the failures' reason with an example to open.
            with page.expect_popup() as popup:
                row.locator("button").click()
            report = popup.value
            failures = report.locator("table").filter(has_text="reason")
            expect(failures).to_contain_text("bad credentials")
            failures.get_by_role("link").first.click()  # the trail, served as plain text
            expect(report.locator("body")).to_contain_text("[IdP login POST]")
            assert "/failures/bad-credentials-" in report.url and WRONG_PASSWORD not in report.content()
            report.close()

            # A run from the form, then Locust's own page: its "authbench cells" tab mirrors the Grinder row.
            page.click("button[data-tab=run]")
            page.fill("#pattern", "2x10")
            page.click("#start")
            expect(_row(page, "2x10 #1", "tests")).to_have_text("20", timeout=RUN_LIMIT_MS)
            locust = browser.new_page(viewport={"width": 1280, "height": 800})
            locust.set_default_timeout(STEP_LIMIT_MS)
            locust.goto(f"{base}/")
            locust.get_by_role("tab", name="authbench cells").click()
            mirrored = locust.get_by_role("row").filter(has_text="2x10 #1")
            expect(mirrored).to_contain_text("done")
            expect(mirrored.get_by_role("cell").nth(2)).to_have_text("20")

            # A long plan, stopped with Locust's STOP button: authbench's page says so at once and the
            # cell it cut is marked stopped, in the runs list and the report.
            page.fill("#pattern", "2x1000")
            page.once("dialog", lambda dialog: dialog.accept())  # the estimate's confirmation, if asked
            page.click("#start")
            expect(page.locator("#state")).to_have_text("running")
            run_id = json.loads(get(f"{base}/authbench/api/state"))["run_id"]
            deadline = time.monotonic() + STEP_LIMIT_MS / 1000
            while json.loads(get(f"{base}/stats/requests"))["state"] != "running":  # Locust's users spawned
                assert time.monotonic() < deadline
                time.sleep(0.1)
            locust.reload()  # Locust's page polls its state only while it last saw users running
            locust.get_by_role("button", name="STOP").click()
            expect(page.locator("#state")).to_have_text("stopped")
            expect(page.locator("#message")).to_contain_text("Locust's STOP button")
            expect(page.locator('#grinder tr.stopped[data-label="2x1000 #1"]')).to_contain_text("stopped by the user")
            expect(locust.get_by_role("row").filter(has_text="2x1000 #1")).to_contain_text("stopped by the user")
            row = _runs_row(page, run_id)
            expect(row).to_contain_text("stopped")
            with page.expect_popup() as popup:
                row.locator("button").click()
            expect(popup.value.locator("body")).to_contain_text("stopped by the user", timeout=RUN_LIMIT_MS)
            if os.environ.get("AUTHBENCH_SCREENSHOTS"):
                locust.screenshot(path=os.path.join(os.environ["AUTHBENCH_SCREENSHOTS"], "locust.png"))
                page.screenshot(path=os.path.join(os.environ["AUTHBENCH_SCREENSHOTS"], "stopped.png"), full_page=True)
        finally:
            if cli_run.poll() is None:
                cli_run.kill()
                cli_run.wait()
            browser.close()
    # What a browser cannot send: a foreign Host (DNS rebinding) and a cross-site start.
    assert _request(f"{base}/authbench/api/state", headers={"Host": "evil.example:80"}) == 421
    start = json.dumps({"target": "lab:stateless", "pattern": "1x1"}).encode()
    assert _request(f"{base}/authbench/api/start", "POST", {"Content-Type": "application/json",
                                                             "Origin": "http://evil.example"}, start) == 403
