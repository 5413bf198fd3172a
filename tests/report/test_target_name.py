"""A run is named in its report as the user named its target (lab:memcached), not by the URL it resolved to;
a single run against the lab samples its servers' CPU, as `compare` does, and the report shows it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from authbench.cli import build_parser, main
from authbench.cli.run import prepare
from authbench.prepared import TARGET_NAME
from authbench.report import write_report
from authbench.report.load import load

RUN = Path(__file__).parent / "fixtures" / "campaign" / "runs" / "memcached"


def test_a_lab_target_records_its_name_and_an_url_target_none(lab, monkeypatch):
    monkeypatch.setenv("AUTHBENCH_PASSWORD", "pw-user000")  # the URL target's one account
    named = prepare(build_parser().parse_args(["run", "--target", "lab:memcached", "--lab-dir", str(lab.run_dir)]))
    assert named.config[TARGET_NAME] == "lab:memcached"
    assert named.config["target"].startswith("https://127.0.0.1:")  # the URL it loads stays recorded
    url = prepare(build_parser().parse_args(["run", "--target", named.config["target"], "--account", "user000"]))
    assert TARGET_NAME not in url.config  # a URL is its own name: the report falls back to it, cleaned


def test_the_report_labels_a_run_by_its_target_name_or_its_cleaned_url(tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(RUN, folder)
    document = json.loads((folder / "summary.json").read_text())
    url = document["config"]["target"]
    assert list(load(folder).runs) == [url]  # results written before the name was recorded
    document["config"][TARGET_NAME] = "lab:memcached"
    (folder / "summary.json").write_text(json.dumps(document))
    assert list(load(folder).runs) == ["lab:memcached"]
    _, md_path = write_report(folder, tmp_path / "out")
    md = md_path.read_text()
    assert "backends: lab:memcached" in md and "| lab:memcached | " in md
    assert "| target name | lab:memcached |" in md and f"| target | {url} |" in md


def test_a_single_lab_run_is_named_and_its_servers_cpu_reported(lab, tmp_path, capsys):
    code = main(["run", "--target", "lab:stateless", "--lab-dir", str(lab.run_dir), "--pattern", "2x10",
                 "--warmup", "0", "--results", str(tmp_path), "--run-id", "r"])
    assert code == 0, capsys.readouterr().out
    folder = tmp_path / "r"
    cell = json.loads((folder / "summary.json").read_text())["cells"][0]
    assert {"generator", "idp-a", "idp-b", "lb", "ldap"} <= set(cell["resources"]["components"])
    _, md_path = write_report(folder, tmp_path / "out")
    md = md_path.read_text()
    assert "**lab:stateless: CPU per component**" in md and "CPU was not sampled" not in md
    header = next(line for line in md.splitlines() if line.startswith("| cell | generator |"))
    assert "idp-a" in header and "idp-b" in header
