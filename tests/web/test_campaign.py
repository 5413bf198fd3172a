"""The last campaign's tabs come from disk alone: newest folder, averaged TPS, marks, report files."""

from __future__ import annotations

import json

import pytest
from campaign_data import BACKENDS, PATTERNS, expected_tps, make_campaign

from authbench.web.campaign import campaign_view, last_campaign, report_path


def test_comparison_checks_and_report(tmp_path):
    make_campaign(tmp_path, "old", started=1_000.0, report=False)
    newest = make_campaign(tmp_path, "new", started=2_000.0)
    (tmp_path / "zz-not-a-campaign").mkdir()  # sorts last, has no campaign.json
    assert last_campaign(tmp_path) == newest
    view = campaign_view(tmp_path)
    assert view["campaign"] == "new" and view["backends"] == list(BACKENDS) and view["patterns"] == list(PATTERNS)
    for backend in BACKENDS:
        for pattern in PATTERNS:
            figures = view["comparison"][backend][pattern]
            assert figures["tps"] == pytest.approx(expected_tps(backend, pattern))  # cut-short cell left out
            assert figures["repetitions"] == 2
    assert view["comparison"]["stateless"]["10x20"]["errors"] == pytest.approx(1.5)
    assert view["checks"]["tests"] == ["Test 1", "Test 2", "Test 3"]
    tests = view["checks"]["tests"]
    marks = {row["backend"]: [row["marks"][t]["mark"] for t in tests] for row in view["checks"]["rows"]}
    assert marks == {"stateless": ["○", "○", "×"], "memcached": ["○", "○", "×"]}
    assert view["reports"] == ["report.html"]
    assert report_path(tmp_path, "report.html") == newest / "report.html"
    json.dumps(view)  # all of it is JSON


def test_no_campaign_and_only_known_report_names(tmp_path):
    assert campaign_view(tmp_path)["campaign"] is None
    assert campaign_view(tmp_path / "missing")["campaign"] is None
    make_campaign(tmp_path, "c", report=False)
    assert campaign_view(tmp_path)["reports"] == []
    assert report_path(tmp_path, "report.html") is None
    (tmp_path / "c" / "secret.txt").write_text("x")
    for name in ("secret.txt", "../c/campaign.json", "campaign.json"):
        assert report_path(tmp_path, name) is None


def test_damaged_campaign_file_is_a_message(tmp_path):
    folder = make_campaign(tmp_path, "c")
    (folder / "campaign.json").write_text("{not json")
    view = campaign_view(tmp_path)
    assert view["campaign"] == "c" and "cannot be read" in view["message"]
