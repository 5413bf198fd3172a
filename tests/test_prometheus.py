"""Server-side queries against a real Prometheus (Debian's), scraping itself on loopback."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.request

import pytest

from authbench.cli import main
from authbench.cluster.prometheus import PrometheusError, parse_queries

from ports import PROMETHEUS

READY_TIMEOUT_S = 30.0
SCRAPE_CONFIG = """global:
  scrape_interval: 1s
scrape_configs:
  - job_name: self
    static_configs:
      - targets: ['127.0.0.1:{port}']
"""


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    binary = shutil.which("prometheus")
    assert binary, "prometheus is missing: run 'make setup' (deploy/setup-system.sh installs it)"
    folder = tmp_path_factory.mktemp("prometheus")
    (folder / "prometheus.yml").write_text(SCRAPE_CONFIG.format(port=PROMETHEUS))
    process = subprocess.Popen([binary, f"--config.file={folder / 'prometheus.yml'}",
                                f"--storage.tsdb.path={folder / 'data'}",
                                f"--web.listen-address=127.0.0.1:{PROMETHEUS}"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{PROMETHEUS}"
    deadline = time.monotonic() + READY_TIMEOUT_S
    try:
        while True:  # ready, and has scraped itself at least twice (rate() needs two points)
            try:
                query = url + "/api/v1/query?query=count_over_time(up[1m])"
                result = json.load(urllib.request.urlopen(query, timeout=2))["data"]["result"]
                if result and float(result[0]["value"][1]) >= 2:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline and process.poll() is None, "prometheus did not become ready"
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_range_queries_give_series_per_cell_window(prometheus):
    queries = parse_queries(prometheus, ["up=up", "cpu=rate(process_cpu_seconds_total[5s])"])
    queries.check()
    now = time.time()
    result = queries.over(now - 3, now)
    (up,) = result["up"]["series"]
    assert up["max"] == 1.0 and up["points"] >= 1 and up["labels"]["job"] == "self"
    assert result["cpu"]["series"][0]["mean"] >= 0


def test_bad_query_or_url_fails_before_any_load(prometheus):
    with pytest.raises(PrometheusError, match="parse error"):
        parse_queries(prometheus, ["bad=rate(up[)"]).check()
    with pytest.raises(ValueError, match="NAME=PROMQL"):
        parse_queries(prometheus, ["just-a-query"])


def test_campaign_against_a_user_target_keeps_prometheus_figures(lab, prometheus, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("AUTHBENCH_PASSWORD", "pw-user002")
    code = main(["compare", "--target", "mine=" + lab.sp_url("stateless") + "/secure/", "--ca-bundle",
                 str(lab.ca_cert), "--account", "user002", "--pattern", "2x10", "--warmup", "0", "--repeat", "1",
                 "--prometheus", prometheus, "--prometheus-query", "up=up", "--results", str(tmp_path),
                 "--campaign-id", "p"])
    assert code == 0, capsys.readouterr().out
    run = json.loads((tmp_path / "p" / "runs" / "mine" / "summary.json").read_text())
    resources = run["cells"][0]["resources"]
    assert set(resources["components"]) == {"generator"}  # a user target: only the generator is local
    assert resources["prometheus"]["up"]["series"][0]["max"] == 1.0
    campaign = json.loads((tmp_path / "p" / "campaign.json").read_text())
    assert campaign["checks"] == {}  # no --node: checks skipped
    assert "pw-user002" not in json.dumps(campaign) + json.dumps(run)

    code = main(["compare", "--target", "x=https://127.0.0.1:9/", "--prometheus", prometheus,
                 "--prometheus-query", "bad=rate(up[)", "--dry-run"])
    assert code == 0  # a dry run asks nobody
    code = main(["compare", "--target", "x=" + lab.sp_url("stateless") + "/secure/", "--prometheus", prometheus,
                 "--prometheus-query", "bad=rate(up[)", "--results", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "query 'bad'" in err and len(err.splitlines()) == 1
