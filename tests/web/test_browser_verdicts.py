"""The verdict panel in Chromium: shown live on the run page as cells end, at the top of the report, and the
same as summary.json's `verdicts` (results/verdicts.py) — for SLOs met and missed, and for Test 4."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from browser_kit import STEP_LIMIT_MS, get, ui_page, web_ui
from playwright.sync_api import Page, expect

from authbench_lab import lab as lab_api

from ports import WEB

pytestmark = pytest.mark.browser

RUN_LIMIT_MS = 120_000  # a short run, preflight included, on a busy machine


@dataclass
class UI:
    page: Page
    base: str
    results: Path


@pytest.fixture
def ui(lab, tmp_path):
    results = tmp_path / "results"
    with web_ui(lab.run_dir, results, WEB + 6, tmp_path / "web.log") as base, ui_page(base) as (_, page):
        yield UI(page, base, results)


def _start(ui: UI, **fields: str) -> dict:
    """Fill the form's fields (opening their sections), start, wait for the end; the run's summary.json."""
    page = ui.page
    for section in ("open-model", "faults"):
        page.locator(f"details.{section}").evaluate("d => d.open = true")
    for name, value in fields.items():
        if name == "reuse_session":
            page.check("#reuse_session")
        else:
            page.fill(f"#{name}", value)
    before = _state(ui)["run_id"]
    page.click("#start")
    expect(page.locator("#where")).not_to_contain_text(f"run {before}" if before else "-", timeout=STEP_LIMIT_MS)
    expect(page.locator("#state")).to_have_text("done", timeout=RUN_LIMIT_MS)
    run_id = _state(ui)["run_id"]
    assert run_id != before
    return json.loads((ui.results / run_id / "summary.json").read_text())


def _state(ui: UI) -> dict:
    return json.loads(get(f"{ui.base}/authbench/api/state"))


def _panel_matches(page, verdicts: dict) -> None:
    """The live panel says exactly what summary.json's verdicts say, check by check."""
    head = {True: "all passed", False: "FAILED", None: "nothing to judge"}[verdicts["passed"]]
    expect(page.locator("#verdicts-head")).to_have_text(f"Verdicts: {head}")
    rows = page.locator("#verdicts tbody tr")
    expect(rows).to_have_count(len(verdicts["checks"]))
    for i, check in enumerate(verdicts["checks"]):
        row = rows.nth(i)
        assert row.get_attribute("data-check") == check["check"]
        assert [row.locator(f'td[data-col="{col}"]').inner_text() for col in ("mark", "title", "figure")] == \
            [check["mark"], check["title"], check["figure"]]


def _shot(locator, name: str) -> None:
    """The docs' pictures (docs/images/web-verdicts.png, report-verdicts.png) come from here."""
    if os.environ.get("AUTHBENCH_SCREENSHOTS"):
        locator.screenshot(path=os.path.join(os.environ["AUTHBENCH_SCREENSHOTS"], name))


def _report_shows(page, run_id: str, verdicts: dict, picture: str = "") -> None:
    """The report (built on demand from All runs) opens with the same panel."""
    page.click("button[data-tab=runs]")
    with page.expect_popup() as popup:
        page.locator(f'#runs tr[data-run="{run_id}"] button').click()
    report = popup.value
    head = {True: "all passed", False: "FAILED", None: "nothing to judge"}[verdicts["passed"]]
    expect(report.locator("h2").nth(0)).to_have_text("Verdicts", timeout=RUN_LIMIT_MS)
    expect(report.locator("div.verdicts caption")).to_have_text(f"Verdicts: {head}")
    text = report.locator("div.verdicts").inner_text()
    for check in verdicts["checks"]:
        assert check["figure"] in text and check["title"] in text
    if picture:
        _shot(report.locator("div.verdicts"), picture)
    report.close()
    page.click("button[data-tab=run]")


def test_an_slo_met_and_an_slo_missed_in_the_panel_and_the_report(ui):
    page = ui.page
    met = _start(ui, target="lab:stateless", pattern="", warmup="0", repeat="1", rate="4/s", duration="4s",
                 slo="p99<5s")
    slo = next(c for c in met["verdicts"]["checks"] if c["check"] == "slo")
    assert slo["passed"] is True and slo["figure"].startswith("p99 ") and slo["figure"].endswith("< 5000 ms")
    _panel_matches(page, met["verdicts"])
    expect(page.locator('#verdicts tr[data-check="slo"] td[data-col="mark"]')).to_have_text("✓")
    _report_shows(page, met["run_id"], met["verdicts"])

    missed = _start(ui, slo="p99<1ms")  # a SAML login through HAProxy never answers in 1 ms
    slo = next(c for c in missed["verdicts"]["checks"] if c["check"] == "slo")
    assert slo["passed"] is False and slo["figure"].endswith("≥ 1 ms")
    assert missed["verdicts"]["passed"] is False
    _panel_matches(page, missed["verdicts"])
    expect(page.locator('#verdicts tr[data-check="slo"] td[data-col="mark"]')).to_have_text("✗")
    _report_shows(page, missed["run_id"], missed["verdicts"], "report-verdicts.png")


def test_a_failover_verdict_live_and_in_the_report(ui, lab):
    page = ui.page
    try:
        document = _start(ui, target="lab:local", pattern="8x14", warmup="0", repeat="1", reuse_session="on",
                          pace="0.5s", fault="at=2s stop idp-a; at=4.5s start idp-a")
    finally:
        lab_api.start_component(lab.run_dir, "local/idp-a")  # already running unless the run broke off
    (test4,) = [c for c in document["verdicts"]["checks"] if c["check"] == "test4"]
    assert test4["mark"] == "△" and test4["passed"] is False  # the local design keeps no session for node B
    assert 0 < test4["affected_users"] < test4["logged_in_users"] == 8
    _panel_matches(page, document["verdicts"])
    sessions = _state(ui)["sessions"]  # shown as the run goes: lost SSO is not an error, so errors never told it
    assert sessions["reused"] > 0 and sessions.get("lost", 0) + sessions.get("failed", 0) > 0
    expect(page.locator("#sessions")).to_have_text(
        f"returning users' journeys so far: {sessions['reused']} kept SSO, {sessions.get('lost', 0)} asked for the "
        f"password again (SSO lost), {sessions.get('failed', 0)} failed")
    _shot(page.locator("#verdicts"), "web-verdicts.png")
    _report_shows(page, document["run_id"], document["verdicts"])
