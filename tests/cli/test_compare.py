"""`authbench compare` and `authbench check-cluster` against the session lab: the campaign folder,
the check matrix, resources per cell, resume after kill -9, dry-run and bad input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from authbench.cli import main
from authbench.results.recorder import read_samples
from authbench_lab.config import EXPECTED_CLUSTER_CHECKS

WAIT_LIMIT = 90.0  # seconds any subprocess in this file may take


def compare(lab, *args: str) -> list[str]:
    return ["compare", "--lab-dir", str(lab.run_dir), *args]


def test_campaign_runs_checks_then_cells_with_resources(lab, tmp_path, capsys):
    code = main(compare(lab, "--backends", "local,terracotta", "--pattern", "2x5", "--warmup", "0.5s",
                        "--repeat", "2", "--results", str(tmp_path), "--campaign-id", "c"))
    out = capsys.readouterr().out
    assert code == 0, out
    assert "local: preflight: one login as user000: logged in" in out and "[IdP login POST]" not in out  # no trail
    assert "plan 2x5, warm-up 0.5 s before each cell, 2 repetition(s)" in out  # the plan is said, warm-up too
    document = json.loads((tmp_path / "c" / "campaign.json").read_text())
    assert document["finished"] is not None
    for backend in ("local", "terracotta"):
        observed = tuple(check["passed"] for check in document["checks"][backend])
        assert observed == EXPECTED_CLUSTER_CHECKS[backend]
    assert [(c["backend"], c["pattern"], c["repetition"], c["status"]) for c in document["cells"]] == [
        ("terracotta", "2x5", 1, "done"), ("terracotta", "2x5", 2, "done"),  # the lab's order, not the option's
        ("local", "2x5", 1, "done"), ("local", "2x5", 2, "done")]
    run = json.loads((tmp_path / "c" / "runs" / "terracotta" / "summary.json").read_text())
    resources = run["cells"][0]["resources"]
    assert {"generator", "idp-a", "idp-b", "sp", "lb", "ldap", "redis-primary"} <= set(resources["components"])
    assert "memcached/idp-a" not in resources["components"]  # only the cell's own cluster and shared servers
    assert resources["components"]["generator"]["cpu_s"] > 0
    assert resources["components"]["idp-a"]["rss_mib_max"] > 10
    assert resources["generator_saturated"] in (True, False)
    rows = (tmp_path / "c" / "runs" / "terracotta" / "resources.csv").read_text().splitlines()
    assert rows[0] == "time,pattern,repetition,phase,component,pid,cpu_pct,rss_bytes" and len(rows) > 10
    assert "Test 3" in out and "terracotta" in out
    report = (tmp_path / "c" / "report.html").read_text()  # the campaign ends with its report
    assert "terracotta" in report and "Test 3" in report
    assert "pw-user" not in json.dumps(document) + out


def test_dry_run_prints_plan_and_writes_nothing(lab, tmp_path, capsys):
    code = main(compare(lab, "--pattern", "2x1000,10x200,20x200", "--warmup", "60s", "--repeat", "3",
                        "--results", str(tmp_path / "never"), "--dry-run"))
    out = capsys.readouterr().out
    assert code == 0
    assert "5 target(s) × 3 pattern(s) × 3 repetition(s) = 45 cells" in out
    assert "estimated duration: " in out and "20x200 r3" in out
    assert not (tmp_path / "never").exists()


def _cells(folder: Path) -> list[tuple[str, int]]:
    try:
        return [(c["pattern"], c["repetition"]) for c in json.loads((folder / "summary.json").read_text())["cells"]]
    except (FileNotFoundError, ValueError):
        return []


def test_resume_after_kill_skips_done_cells_and_redoes_the_cut_one(lab, tmp_path, capsys):
    folder = tmp_path / "k"
    command = [sys.executable, "-m", "authbench", *compare(lab, "--backends", "stateless", "--pattern", "2x5,3x60",
                                                           "--warmup", "0", "--repeat", "1", "--results",
                                                           str(tmp_path), "--campaign-id", "k")]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    run_dir = folder / "runs" / "stateless"
    deadline = time.monotonic() + WAIT_LIMIT
    try:
        while time.monotonic() < deadline:  # the first cell done and the second one under way
            if _cells(run_dir) == [("2x5", 1)] and sum(1 for s in read_samples(run_dir / "samples.csv")
                                                      if s.pattern == "3x60") >= 5:
                break
            assert process.poll() is None, process.stderr.read()
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait(timeout=10)
    first = json.loads((run_dir / "summary.json").read_text())["cells"][0]
    cut = [s for s in read_samples(run_dir / "samples.csv") if s.pattern == "3x60"]
    assert 0 < len(cut) < 180
    assert json.loads((folder / "campaign.json").read_text())["finished"] is None

    code = main(["compare", "--resume", str(folder)])
    out = capsys.readouterr().out
    assert code == 0, out
    document = json.loads((run_dir / "summary.json").read_text())
    assert [(c["pattern"], c["repetition"]) for c in document["cells"]] == [("2x5", 1), ("3x60", 1)]
    assert document["cells"][0] == first  # the done cell was not run again
    samples = list(read_samples(run_dir / "samples.csv"))
    assert sum(s.pattern == "2x5" for s in samples) == 10
    assert sum(s.pattern == "3x60" for s in samples) == 180  # the cut attempt's rows are gone
    campaign = json.loads((folder / "campaign.json").read_text())
    assert campaign["finished"] is not None
    # A password rule is stored as "one was given", never as the rule; resuming then asks for it again.
    options = campaign["config"]["options"]
    assert "password_rule" not in options and options["password_rule_given"] is False
    options["password_rule_given"] = True
    (folder / "campaign.json").write_text(json.dumps(campaign))
    code, err = _error(capsys, "compare", "--resume", str(folder))
    assert code == 2 and "give it again with --resume" in err


def _error(capsys, *args: str) -> tuple[int, str]:
    code = main(list(args))
    err = capsys.readouterr().err.strip()
    return code, err


def test_bad_input_gives_one_line_and_exit_2(lab, tmp_path, capsys):
    cases = [
        (compare(lab, "--backends", "memcached,hazelcast", "--dry-run"), "unknown backend 'hazelcast'"),
        (compare(lab, "--pattern", ",", "--dry-run"), "pattern list is empty"),
        (["compare", "--target", "mine=https://127.0.0.1:9/secure/", "--account", "u", "--password-file",
          str(tmp_path / "pw"), "--results", str(tmp_path)], "https://127.0.0.1:9/secure/"),
        (compare(lab, "--backends", "local", "--pattern", "1x1", "--results", str(tmp_path / "file" / "sub")),
         "cannot write the campaign"),
        (["compare", "--resume", str(tmp_path)], "not a campaign folder"),
        (["compare", "--target", "a=https://127.0.0.1:9/", "--node", "b=https://127.0.0.1:9/", "--dry-run"],
         "--node names b"),
        (compare(lab, "--prometheus-query", "up=up", "--dry-run"), "--prometheus-query needs --prometheus"),
        (compare(lab, "--prometheus", "ftp://x", "--prometheus-query", "up=up", "--dry-run"), "not an http(s) URL"),
        (["check-cluster", "--target", "https://127.0.0.1:9/secure/"], "give --lb"),
        (["check-cluster", "--target", "ftp://x/", "--lb", "https://127.0.0.1:9", "--node", "https://127.0.0.1:9"],
         "--target 'ftp://x/' is not an http(s) URL"),
    ]
    (tmp_path / "file").write_text("a file where a folder should be")
    (tmp_path / "pw").write_text("secret\n")
    for args, message in cases:
        code, err = _error(capsys, *args)
        assert code == 2 and len(err.splitlines()) == 1 and message in err, (args, err)
    assert not list(tmp_path.glob("*/campaign.json"))  # the unreachable target stopped it before any folder


def test_check_cluster_against_lab_and_urls(lab, capsys, monkeypatch):
    monkeypatch.setenv("AUTHBENCH_LAB_DIR", str(lab.run_dir))
    assert main(["check-cluster", "--target", "lab:memcached", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [c["passed"] for c in result["checks"]] == [True, True, False]
    assert any("Stale Request" in line for line in result["checks"][2]["evidence"])
    assert "pw-" not in json.dumps(result)

    monkeypatch.setenv("AUTHBENCH_PASSWORD", "pw-user001")
    ca = ["--ca-bundle", str(lab.ca_cert), "--account", "user001"]
    sp, lb = lab.sp_url("terracotta") + "/secure/", lab.lb_url("terracotta")
    nodes = ["--node", lab.node_url("terracotta", "a"), "--node", lab.node_url("terracotta", "b")]
    assert main(["check-cluster", "--target", sp, "--lb", lb, *nodes, *ca]) == 0
    out = capsys.readouterr().out
    assert "Test 1 ○" in out and "Test 2 ○" in out and "Test 3 ○" in out and "JSESSIONID" in out
    assert main(["check-cluster", "--target", sp, "--lb", lb, nodes[0], nodes[1], *ca]) == 0
    assert "Test 2" not in capsys.readouterr().out  # one node: Test 1 only

    code, err = _error(capsys, "check-cluster", "--target", sp, "--lb", lb, "--node", "https://127.0.0.1:9", *ca)
    assert code == 2 and "--node A https://127.0.0.1:9 is unreachable" in err
