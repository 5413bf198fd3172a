"""--resume of arrival-rate runs on the session lab: a levels run and a capacity search stopped by SIGTERM part way
continue with only what they lacked; a changed plan is refused in one line naming the option."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from authbench.cli import main
from authbench.results.recorder import read_samples

WAIT_LIMIT = 90.0  # seconds for the subprocess to start loading and reach the point it is stopped at
EXIT_WAIT = 40.0  # seconds it may take to exit after SIGTERM
LEVELS = ["--levels", "a=10/s:1s,b=10/s:3s", "--warmup", "0"]
CAPACITY = ["--slo", "p99<5s,errors<50%", "--start-rate", "4/s", "--growth", "2", "--max-rate", "8/s",
            "--step-duration", "2s", "--step-warmup", "0"]


@pytest.fixture
def lab_env(lab, monkeypatch):
    monkeypatch.setenv("AUTHBENCH_LAB_DIR", str(lab.run_dir))
    return lab


def _summary(folder: Path) -> dict:
    try:
        return json.loads((folder / "summary.json").read_text())
    except (FileNotFoundError, ValueError):
        return {}


def _rows(folder: Path, prefix: str) -> int:
    try:
        return sum(s.pattern.startswith(prefix) for s in read_samples(folder / "samples.csv"))
    except (FileNotFoundError, ValueError):
        return 0


def _stop_when(argv: list[str], folder: Path, ready) -> None:
    """Run `authbench ARGV` in a process of its own and SIGTERM it once `ready(summary)` holds."""
    process = subprocess.Popen([sys.executable, "-m", "authbench", *argv], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + WAIT_LIMIT
    try:
        while not ready(_summary(folder)):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the run did not get there"
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=EXIT_WAIT)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 128 + signal.SIGTERM, err


def _cells(document: dict) -> list[str]:
    return [cell["pattern"] for cell in document.get("cells", [])]


def test_a_levels_run_resumes_with_the_missing_level_only(lab_env, tmp_path, capsys):
    folder = tmp_path / "l"
    command = ["run", "--target", "lab:stateless", *LEVELS, "--results", str(tmp_path), "--run-id", "l"]
    _stop_when(command, folder, lambda document: _cells(document) == ["a"] and _rows(folder, "b") >= 3)
    first = _summary(folder)
    assert first["interrupted"]["cell"] == {"pattern": "b", "repetition": 1}

    for changed, expected in [
        (["--levels", "a=10/s:1s,b=20/s:3s"], "was run with --levels a=10/s:1s,b=10/s:3s, not --levels "
                                               "a=10/s:1s,b=20/s:3s; resume with the same --levels"),
        (["--rate", "10/s", "--duration", "3s"], "not --rate 10/s --duration 3s; resume with the same --levels"),
    ]:
        code = main(["run", "--target", "lab:stateless", *changed, "--warmup", "0", "--results", str(tmp_path),
                     "--run-id", "l", "--resume"])
        err = capsys.readouterr().err
        assert code == 2 and expected in err and err.count("\n") == 1 and "Traceback" not in err, err
    assert _summary(folder) == first  # a refused resume leaves the folder alone

    code = main([*command, "--resume"])
    out = capsys.readouterr().out
    assert code == 0, out
    document = _summary(folder)
    assert _cells(document) == ["a", "b"] and document["cells"][0] == first["cells"][0]  # a was not run again
    assert "b #1: 30 tests" in out and "a #1: 10 tests" not in out
    assert "interrupted" not in document and document["finished"] is not None
    samples = [s for s in read_samples(folder / "samples.csv") if s.phase == "measured"]
    assert sum(s.pattern == "a" for s in samples) == 10 and sum(s.pattern == "b" for s in samples) == 30


def test_an_interrupted_capacity_search_keeps_its_steps_and_continues(lab_env, tmp_path, capsys):
    folder = tmp_path / "c"
    command = ["capacity", "--target", "lab:stateless", *CAPACITY, "--results", str(tmp_path), "--run-id", "c"]
    _stop_when(command, folder, lambda document: _cells(document) == ["max-1-grow@4/s"]
               and len((document.get("capacity") or {}).get("steps", [])) == 1 and _rows(folder, "max-2-") >= 3)
    first = _summary(folder)
    partial = first["capacity"]  # written after every step: the steps measured before the signal
    kept = len(partial["steps"])
    assert partial["searching"] and kept >= 1 and partial["step_labels"] == _cells(first)
    assert partial["steps"][0] == {"rate": 4.0, "stage": "grow", "passed": True}
    cut = first["interrupted"]["cell"]["pattern"]
    assert cut.startswith(f"max-{kept + 1}-")

    code = main([*command, "--resume"])
    out = capsys.readouterr().out
    assert code == 0, out
    document = _summary(folder)
    found = document["capacity"]
    assert found["steps"][:kept] == partial["steps"] and len(found["steps"]) > kept  # continued, not restarted
    assert found["step_labels"] == _cells(document) and found["step_labels"][kept] == cut
    assert document["cells"][:kept] == first["cells"]  # the steps measured before were not measured again
    assert not any(f"{label} #1: " in line and " tests, " in line for label in partial["step_labels"]
                   for line in out.splitlines())
    assert not found["searching"] and found["search_s"] > partial["search_s"]
    assert found["steps"][-1]["stage"] == "confirm"
    # the cut step measured again (its line may carry a remark, "(not sustained)" on a busy machine)
    assert any(line.startswith(f"{cut} #1") and " tests, " in line for line in out.splitlines()), out
    assert "maximum capacity: " in out
    samples = [s for s in read_samples(folder / "samples.csv") if s.phase == "measured" and s.pattern == cut]
    assert len(samples) == next(c for c in document["cells"] if c["pattern"] == cut)["open"]["planned"]  # one attempt
