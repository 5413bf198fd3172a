"""The report from a stored campaign (tests/report/fixtures, made by make_fixture.py), a killed run, and bad input."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from authbench.cli import main
from authbench.report import ReportError, write_report
from authbench.report.load import INCOMPLETE, STOPPED, clean_url, load
from authbench_lab.config import EXPECTED_CLUSTER_CHECKS

FIXTURES = Path(__file__).parent / "fixtures"
CAMPAIGN = FIXTURES / "campaign"
KILLED = FIXTURES / "killed"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PLOTS = ("tps", "latency", "timeline", "errors", "cpu")
SECRET = "s3cret-Pa55"


@pytest.fixture(scope="module")
def campaign_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    out = tmp_path_factory.mktemp("campaign-report")
    html, md = write_report(CAMPAIGN, out)
    return out, html.read_text(), md.read_text()


def test_campaign_report_is_self_contained_html_and_markdown_with_plots(campaign_report):
    out, html, md = campaign_report
    assert (out / "report.html").is_file() and (out / "report.md").is_file()
    images = re.findall(r'<img [^>]*src="([^"]+)"', html)
    assert len(images) == len(PLOTS)
    assert all(src.startswith("data:image/png;base64,") for src in images)  # nothing to fetch
    assert "<link" not in html and not re.search(r"<script[^>]*\ssrc=", html)  # scripts inline, nothing fetched
    for name in (*PLOTS, "run_timeline"):  # report.md's timeline is a PNG; report.html's is drawn in the page
        png = out / f"report-{name}.png"
        assert png.read_bytes().startswith(PNG_SIGNATURE) and png.stat().st_size > 10_000
        assert f"](report-{name}.png)" in md


def test_the_html_timeline_is_inlined_with_its_library_and_every_run_s_data(campaign_report):
    _, html, _ = campaign_report
    campaign = json.loads((CAMPAIGN / "campaign.json").read_text())
    backends = campaign["config"]["backends"]
    assert html.count('<div class="timeline" id=') == len(backends)
    assert "var uPlot=function()" in html and "function mountReportTimelines()" in html and ".uplot" in html
    for i, backend in enumerate(backends, start=1):
        data = json.loads(re.search(rf'<script type="application/json" id="timeline-data-{i}">(.*?)</script>',
                                    html, re.S).group(1))
        summary = json.loads((CAMPAIGN / "runs" / backend / "summary.json").read_text())
        journeys = sum(c["summary"]["tests"] for c in summary["cells"])  # measured; the series has warm-up too
        series = data["series"]
        assert (sum(series["ok_per_s"]) + sum(series["errors_per_s"])) * series["width_s"] > journeys
        assert [m["label"] for m in data["marks"] if m["what"] == "start"] == [
            f"{c['pattern']} #{c['repetition']}" for c in summary["cells"]]


def test_campaign_tables_carry_the_stored_figures(campaign_report):
    _, html, md = campaign_report
    campaign = json.loads((CAMPAIGN / "campaign.json").read_text())
    for backend in campaign["config"]["backends"]:
        summary = json.loads((CAMPAIGN / "runs" / backend / "summary.json").read_text())
        tps = []
        for pattern in campaign["config"]["patterns"]:
            each = [c["summary"]["tps"] for c in summary["cells"] if c["pattern"] == pattern]
            tps.append(f"{summary['averages'][pattern]['tps']:.2f} ({min(each):.2f}–{max(each):.2f})")
        assert f"| {backend} | {' | '.join(tps)} |" in md  # the overview, as `authbench run` averaged it, and ranges
        for cell in summary["cells"]:
            s = cell["summary"]
            row = f"| {cell['pattern']} #{cell['repetition']} | {s['tests']} | {s['errors']} | {s['mean_ms']:.1f} |"
            assert row in md
        expected = EXPECTED_CLUSTER_CHECKS[backend]  # a lab campaign: × the design expects is marked so
        checks = campaign["checks"][backend]
        marks = ["○" if c["passed"] else ("×" if expected[i] else "×*") for i, c in enumerate(checks)]
        assert f"| {backend} | {' | '.join(marks)} |" in md
        for check in campaign["checks"][backend]:  # the evidence inline, not only the marks
            assert check["evidence"][0].split(";")[0] in md
    for section in ("Findings", "Overview", "Cluster checks", "Response-time distribution", "Server CPU",
                    "Configuration", "Versions", "Machine"):
        assert section in html and section in md


def test_findings_paragraph_is_in_both_reports(campaign_report):
    _, html, md = campaign_report
    expected = "Test 3 fails for memcached, stateless, as the 2012 design table expects of them (×*)."
    assert expected in md and expected in html  # the stored checks: terracotta passes all three
    assert re.search(r"At 2 threads \(2x20\) \w+ has the highest TPS", md) or "are level" in md


def test_killed_run_shows_the_cut_cell_from_its_samples(tmp_path):
    _, md_path = write_report(KILLED, tmp_path)
    md = md_path.read_text()
    results = load(KILLED)
    [cut] = [c for c in results.cells if c.status == INCOMPLETE]
    assert (cut.pattern, cut.repetition) == ("4x10", 2)
    assert 0 < cut.summary.tests < 40  # half its measured rows, and the half-written last row dropped
    assert f"| 4x10 #2 (incomplete) | {int(cut.summary.tests)} |" in md
    assert "4x10 #2 is incomplete" in md and "no finish time" in md
    complete = [c for c in results.cells if c.pattern == "4x10" and c.status != INCOMPLETE]
    target = json.loads((KILLED / "summary.json").read_text())["config"]["target"]
    assert f"| {target} | " in md and f"{complete[0].summary.tps:.2f} |" in md  # average leaves it out
    assert KILLED.name not in md.split("\n", 3)[3]  # labelled by its target, not its run id


def test_a_cell_stopped_by_the_user_and_a_degraded_one_say_so_everywhere(tmp_path):
    folder = tmp_path / "stopped"
    shutil.copytree(KILLED, folder)
    document = json.loads((folder / "summary.json").read_text())
    document["interrupted"] = {"signal": None, "by": "the user from Locust's STOP button", "by_user": True,
                               "at": document["started"] + 5, "cell": {"pattern": "4x10", "repetition": 2}}
    document["cells"][0]["degraded"] = {"workers_lost": 1, "users_lost": 2, "journeys_lost": 3}
    (folder / "summary.json").write_text(json.dumps(document))
    _, md_path = write_report(folder, tmp_path / "out")
    md = md_path.read_text()
    results = load(folder)
    [cut] = [c for c in results.cells if c.status == STOPPED]
    assert (cut.pattern, cut.repetition) == ("4x10", 2) and not cut.counted
    assert f"| 4x10 #2 (stopped by the user) | {int(cut.summary.tests)} |" in md
    assert "4x10 #2 was stopped by the user; figures from its" in md and "Stopped by the user:" in md
    first = document["cells"][0]
    assert f"| {first['pattern']} #{first['repetition']} (degraded) |" in md  # the run's table …
    overview = md.split("**Average TPS**", 1)[1].split("##", 1)[0]
    assert "(degraded) | " in overview and "(degraded): a worker was lost" in overview  # … and the overview
    assert "2x20 #1 is degraded: 1 worker(s) lost with 2 users and 3 journeys" in md


def test_run_folder_without_resources_or_secrets_in_config(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(CAMPAIGN / "runs" / "memcached", run)
    document = json.loads((run / "summary.json").read_text())
    for cell in document["cells"]:
        cell.pop("resources")
    document["config"]["password"] = SECRET
    document["config"]["accounts"]["password"] = SECRET
    document["config"]["target"] = f"https://user:{SECRET}@sp.example.org/secure/?token={SECRET}"
    (run / "summary.json").write_text(json.dumps(document))
    html, md = (p.read_text() for p in write_report(run, tmp_path / "out"))
    for text in (html, md):
        assert SECRET not in text
        assert "https://sp.example.org/secure/" in text  # the target stays, without user info or query
        assert "CPU was not sampled" in text
        assert "Cluster checks" not in text  # a single run has none
    assert not (tmp_path / "out" / "report-cpu.png").exists()


def test_clean_url_drops_credentials_query_and_fragment():
    assert clean_url("https://u:p@h.example:8443/a/b?x=1#f") == "https://h.example:8443/a/b"


def test_write_report_names_bad_input(tmp_path):
    with pytest.raises(ReportError, match="not a folder"):
        write_report(tmp_path / "missing")
    with pytest.raises(ReportError, match="not a results folder"):
        write_report(tmp_path)


def _cli(capsys, *args: str) -> tuple[int, str]:
    code = main(["report", *args])
    err = capsys.readouterr().err
    return code, err


def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "summary.json").write_text('{"cells": [')
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    empty = tmp_path / "empty"
    empty.mkdir()
    cases = {
        (str(tmp_path / "nope"),): "is not a folder",
        (str(empty),): "not a results folder",
        (str(broken),): "is not valid JSON",
        (str(KILLED), "--out", str(blocker / "sub")): "cannot write the report",
    }
    for args, message in cases.items():
        code, err = _cli(capsys, *args)
        assert code == 2, args
        assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_cli_results_dir_not_writable(tmp_path, capsys):
    """Without --out the report goes into the results folder; a read-only one is bad input, not a crash."""
    run = tmp_path / "run"
    shutil.copytree(KILLED, run)
    (run / "report.html").mkdir()  # stands in for a read-only folder even for root
    code, err = _cli(capsys, str(run))
    assert code == 2 and "cannot write the report" in err and "--out" in err


def test_a_campaign_s_lab_starts_are_in_its_configuration(tmp_path):
    """Issue 27: `compare` brings a lab up per Keycloak design; each start, Keycloak's own time apart, is reported."""
    from authbench.report.render import configuration

    folder = tmp_path / "campaign"
    folder.mkdir()
    document = json.loads((CAMPAIGN / "campaign.json").read_text())
    document["lab_starts"] = [{"clusters": ["terracotta", "local"], "started": 1795628163.3, "seconds": 2.4},
                              {"clusters": ["keycloak-owners1"], "started": 1795628186.1, "seconds": 177.1,
                               "keycloak_seconds": 172.9, "keycloak_install": {"build": 35.0}}]
    (folder / "campaign.json").write_text(json.dumps(document))
    [table] = [t for t in configuration(load(folder)) if t.title == "Lab starts"]
    assert table.rows == [["terracotta, local", "2026-11-25 17:36:03 UTC", "2.4", "", ""],
                          ["keycloak-owners1", "2026-11-25 17:36:26 UTC", "177.1", "172.9", "build: 35"]]
    assert not [t for t in configuration(load(CAMPAIGN)) if t.title == "Lab starts"]  # a campaign without: none
