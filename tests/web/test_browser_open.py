"""The web UI's open model in a real browser: a bounded capacity search started from the form alone, then levels.

First a login that fails its preflight shows its trail under the form, hop by hop.
Headless Chromium (Debian's) driven by Playwright, `authbench web` as a process on the session lab. The
form's search fields carry the CLI's defaults (a search up to 2000/s asks to be confirmed first); a
search from 4/s to at most 200/s with one journey in flight fills the steps table with pass and FAIL
as they are measured, and the page's progress never goes negative nor past its bound. Then two levels with
an SLO they cannot meet fill the Levels table, each ✗.
"""

from __future__ import annotations

import os
import re
import shutil
import time

import pytest
from browser_kit import STEP_LIMIT_MS, start_declined, ui_page, web_ui
from playwright.sync_api import expect

from ports import WEB

pytestmark = pytest.mark.browser

SEARCH_LIMIT_S = 90.0  # the search: a handful of 2 s steps and their cool-downs, on a busy machine

PORT = WEB + 4
SEARCH = {"#slo": "p99<2s", "#start_rate": "4/s", "#max_rate": "200/s", "#growth": "4", "#precision": "50%",
          "#step_duration": "2s", "#step_warmup": "0s", "#max_users": "1", "#warmup": "0"}
COUNTS = re.compile(r"(\d+) of (?:at most )?(\d+)")
NEGATIVE = re.compile(r"(?<!\w)-\d")  # "about -1h -1m left" (a run id's "20261125-1423" is no number)


@pytest.fixture
def web(lab, tmp_path):
    results = tmp_path / "results"
    (tmp_path / "files").mkdir()
    shutil.copy(lab.ca_cert, tmp_path / "files" / "lab-ca.pem")  # the form names it: --files-dir
    with web_ui(lab.run_dir, results, PORT, tmp_path / "web.log", tmp_path / "files") as base:
        yield base, results


def _progress_is_sane(page) -> list[str]:
    """What the page says of progress now; fails on a negative time or an "N of M" with N > M."""
    texts = [page.locator(f"#{name}").inner_text() for name in ("journeys", "where", "clock", "capacity-bound")]
    for text in texts:
        assert not NEGATIVE.search(text), text
        for done, of in COUNTS.findall(text):
            assert int(done) <= int(of), text
    width = page.locator("#progress-bar").evaluate("bar => bar.style.width")
    assert not width or 0 <= float(re.sub(r"[a-z%]", "", width)) <= 100, width
    return texts


def test_a_bounded_capacity_search_from_the_form(web, lab, tmp_path):
    base, results = web
    shots = os.environ.get("AUTHBENCH_SCREENSHOTS") or str(tmp_path)
    with ui_page(base) as (_, page):
        page.fill("#target", lab.sp_url("local") + "/secure/")  # a login that fails: its trail on the page
        page.fill("#pattern", "1x1")
        page.fill("#warmup", "0")
        page.click("details.accounts summary")
        page.fill("#accounts_template", "user{000..009}")
        page.fill("#password_rule", "Wrong-{user}-1")
        page.fill("#ca_bundle", "lab-ca.pem")
        page.click("#start")
        expect(page.locator("#form-error")).to_contain_text("preflight login as user000 failed")
        expect(page.locator("#form-trail")).to_contain_text("[IdP login POST]")
        expect(page.locator("#form-trail")).to_contain_text("verdict: failed")
        page.screenshot(path=os.path.join(shots, "preflight-trail.png"), full_page=True)
        for field in ("#accounts_template", "#password_rule", "#ca_bundle"):
            page.fill(field, "")
        page.fill("#pattern", "2x1000,10x200,20x200")
        page.fill("#warmup", "60s")
        page.click("details.open-model summary")
        expect(page.locator("#max_rate")).to_have_value("2000/s")  # the ceiling is shown, not silent
        expect(page.locator("#start_rate")).to_have_value("10/s")
        page.fill("#target", "lab:stateless")
        page.check("#capacity")
        page.fill("#slo", "p99<400ms")
        expect(page.locator("#plan-estimate")).to_contain_text("This plan takes at most")
        # up to 2000/s with 30 s steps: asked to confirm first, and declined
        assert start_declined(page).startswith("This plan takes at most ")
        expect(page.locator("#state")).to_have_text("idle")

        for field, value in SEARCH.items():
            page.fill(field, value)
        page.fill("#max_rate", "1/s")  # a bad field is named as the form names it
        page.click("#start")
        expect(page.locator("#form-error")).to_have_text("Start rate 4/s is above Max rate 1/s")
        page.fill("#max_rate", SEARCH["#max_rate"])
        expect(page.locator("#plan-estimate")).to_contain_text("This plan takes at most")
        page.click("#start")
        expect(page.locator("#state")).to_have_text("running")
        expect(page.locator("#form-error")).to_be_hidden()
        expect(page.locator("#form-trail")).to_be_hidden()

        seen, verdicts, shot = [], set(), False
        deadline = time.monotonic() + SEARCH_LIMIT_S
        while page.locator("#state").inner_text() == "running":
            assert time.monotonic() < deadline, "the search did not end"
            seen.append(_progress_is_sane(page))
            verdicts |= set(page.locator("#capacity-steps td.verdict").all_inner_texts())
            if not shot and page.locator("#capacity-steps tbody tr").count() >= 3:
                page.screenshot(path=os.path.join(shots, "capacity-running.png"), full_page=True)
                shot = True
            page.wait_for_timeout(300)
        expect(page.locator("#state")).to_have_text("done")
        _progress_is_sane(page)
        assert any("capacity step" in where and "of at most" in where for _, where, _, _ in seen), seen[::3]
        assert any("at most" in clock and "left" in clock for _, _, clock, _ in seen)
        assert "running" in verdicts  # the step being measured is shown as it goes

        final = page.locator("#capacity-steps td.verdict").all_inner_texts()
        assert final and set(final) <= {"pass", "FAIL"} and {"pass", "FAIL"} <= set(final), final
        assert page.locator("#capacity-steps tbody tr").first.locator("td").last.inner_text().startswith(
            "sustained")
        expect(page.locator("#capacity-answer")).to_contain_text("Maximum capacity: ")
        expect(page.locator("#progress-bar")).to_have_attribute("style", re.compile(r"width: 100%"))
        run_id = page.locator("#where").inner_text().split(" ")[1]
        expect(page.locator("#run-folder")).to_have_text(str(results / run_id))
        page.screenshot(path=os.path.join(shots, "capacity-done.png"), full_page=True)
        with page.expect_popup() as popup:
            page.click("#report-link")
        expect(popup.value.locator("h1")).to_contain_text("authbench report", timeout=60_000)

        page.uncheck("#capacity")  # levels with an SLO they miss: the Levels table fills in as they run
        page.fill("#levels", "low=5/s:2s,high=10/s:2s")
        page.fill("#slo", "p99<1ms")
        page.fill("#max_users", "1000")
        page.fill("#repeat", "1")
        page.click("#start")
        expect(page.locator('#open-levels tr[data-label="low"] td[data-col="achieved_rate"]')).not_to_have_text("-")
        expect(page.locator('#open-levels tr[data-label="high"]')).to_be_visible(timeout=STEP_LIMIT_MS)
        expect(page.locator("#state")).to_have_text("done", timeout=STEP_LIMIT_MS)
        rows = page.locator("#open-levels tbody tr")
        expect(rows).to_have_count(2)
        for row in range(2):
            cells = rows.nth(row).locator("td").all_inner_texts()
            assert cells[1] in ("5.00", "10.00") and cells[6] == "✗ missed", cells  # p99 < 1 ms: never
        expect(page.locator("#capacity-search")).to_be_hidden()
        expect(page.locator("#journeys")).to_contain_text("level 2 of 2")
        page.screenshot(path=os.path.join(shots, "levels-done.png"), full_page=True)
