"""What every journey kind must do through the one run path, as checks the kinds' tests share.

Each check runs `authbench run` for real against a lab server and looks at what a user would: the exit
status, summary.json, the kept failures, what /metrics served during the run, the samples' count.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from authbench.cli import EXIT_CRITERIA_FAILED, main
from authbench.results.recorder import read_samples

WAIT_LIMIT = 90.0  # seconds a worker process may take
SCRAPE_EVERY = 0.05


def accounts_csv(folder: Path, count: int, bad_every: int) -> Path:
    """user000.. with the lab's passwords, every `bad_every`-th one wrong."""
    rows = ["user,password"] + [f"user{i:03d},{'wrong' if i % bad_every == bad_every - 1 else f'pw-user{i:03d}'}"
                                for i in range(count)]
    path = folder / "accounts.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


class Scraper:
    """Reads /metrics while a run lasts; `seen` is the last answer that held this run's cell."""

    def __init__(self, port: int) -> None:
        self.url, self.seen, self.stop = f"http://127.0.0.1:{port}/metrics", "", threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self.stop.wait(SCRAPE_EVERY):
            try:
                text = urllib.request.urlopen(self.url, timeout=1).read().decode()
            except OSError:
                continue
            if "authbench_cell_journeys_planned 20.0" in text:
                self.seen = text

    def __enter__(self) -> Scraper:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)


def errors_verdict_metrics_evidence_faults(target_args: list[str], tmp_path: Path, capsys, metrics_port: int,
                                           distribution: list[str], failing: list[str] | None = None,
                                           secret: str = "wrong") -> dict:
    """One run of 20 journeys of which 4 fail (`failing` options make them fail; default: every fifth
    account's password is wrong; `secret` must never be kept): exit 3 above --max-error-pct, /metrics served
    during the run, failure evidence kept, the fault plan played. Paced, so the run lasts a second or more:
    long enough to be scraped. The summary.json, for the caller's own checks."""
    if failing is None:
        failing = ["--accounts-csv", str(accounts_csv(tmp_path, 20, bad_every=5))]
    with Scraper(metrics_port) as scraper:
        code = main(["run", *target_args, "--pattern", "2x10", "--pace", "0.2s", *failing, "--max-error-pct", "5",
                     "--metrics-port", str(metrics_port), "--fault", "at=0s run=true", *distribution,
                     "--results", str(tmp_path), "--run-id", "k"])
    out = capsys.readouterr().out
    assert code == EXIT_CRITERIA_FAILED, out
    assert "FAILED: 20.00% of 20 measured journeys failed (4), more than --max-error-pct 5" in out
    document = json.loads((tmp_path / "k" / "summary.json").read_text())
    (cell,) = document["cells"]
    assert cell["summary"]["tests"] == 20 and cell["summary"]["errors"] == 4
    assert cell["faults"][0]["fault"] == "at=0s run=true" and cell["faults"][0]["ok"]
    reason = next(iter(cell["summary"]["reasons"]))
    kept = document["failures"][reason]["examples"]
    assert kept and (tmp_path / "k" / kept[0]).exists()
    assert secret not in (tmp_path / "k" / kept[0]).read_text()  # the password is never kept
    assert "authbench_cell_journeys_planned 20.0" in scraper.seen  # /metrics served this run while it ran
    return document


def master_and_worker(target_args: list[str], tmp_path: Path, capsys, master_port: int) -> None:
    """A separate worker process joins a master (`--master` + `--worker`, as the chart's pods): exact counts."""
    worker = subprocess.Popen(
        [sys.executable, "-m", "authbench", "run", *target_args, "--worker", "--master-port", str(master_port),
         "--master-timeout", "5s"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        code = main(["run", *target_args, "--pattern", "3x4", "--master", "--expect-workers", "1",
                     "--master-bind-host", "127.0.0.1", "--master-bind-port", str(master_port),
                     "--worker-wait", "60s", "--results", str(tmp_path), "--run-id", "m"])
        out = capsys.readouterr().out
        assert code == 0, out
        assert worker.wait(timeout=WAIT_LIMIT) == 0, worker.stderr.read()
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    measured = [s for s in read_samples(tmp_path / "m" / "samples.csv") if s.phase == "measured"]
    assert sorted((s.user, s.iteration) for s in measured) == [(u, i) for u in range(3) for i in range(4)]


def arrival_rate(target_args: list[str], tmp_path: Path, capsys) -> None:
    """An open-model level: the rate held, every start on time or counted late, none dropped."""
    began = time.monotonic()
    code = main(["run", *target_args, "--rate", "20/s", "--duration", "1s", "--results", str(tmp_path),
                 "--run-id", "r"])
    out = capsys.readouterr().out
    assert code == 0, out
    (cell,) = json.loads((tmp_path / "r" / "summary.json").read_text())["cells"]
    assert cell["open"]["planned"] == 20 and cell["open"]["dropped"] == 0
    assert time.monotonic() - began < WAIT_LIMIT
