"""Results folders: written by one run, once (results.folder, results.lock, names)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from authbench.names import UnsafeName, safe_name
from authbench.results.folder import NEW, OVERWRITE, RESUME, FolderExists, abandon, claim, resume_mismatch
from authbench.results.lock import FolderBusy, FolderLock

PLAN = {"patterns": ["2x5"], "warmup_s": 0.0, "repeat": 1}


@pytest.mark.parametrize("name", ["../x", "..", ".hidden", "a/b", "", "x" * 101, "\uff12x", "-rf", "a b"])
def test_unsafe_names_are_refused(name):
    with pytest.raises(UnsafeName, match="use letters, digits"):
        safe_name(name, "run id")


def test_safe_names_pass_unchanged():
    assert [safe_name(n) for n in ("shib-2node", "r1.v2", "A_b")] == ["shib-2node", "r1.v2", "A_b"]


def test_new_folder_once_then_refused(tmp_path):
    path, lock = claim(tmp_path, "r")
    assert path == tmp_path / "r" and path.is_dir()
    lock.release()
    with pytest.raises(FolderExists, match="exists already"):
        claim(tmp_path, "r", existing=NEW)
    with pytest.raises(FolderExists, match="nothing to resume"):
        claim(tmp_path, "other", existing=RESUME)


def test_a_second_writer_is_refused_while_the_first_holds_the_folder(tmp_path):
    path, lock = claim(tmp_path, "r")
    with pytest.raises(FolderBusy, match="being written by another authbench process"):
        claim(tmp_path, "r", existing=RESUME)
    with pytest.raises(FolderBusy):
        claim(tmp_path, "r", existing=OVERWRITE)  # not moved aside under its writer
    lock.release()
    _, again = claim(tmp_path, "r", existing=RESUME)
    again.release()


def test_a_killed_writer_leaves_no_stale_lock(tmp_path):
    (tmp_path / "r").mkdir()
    holder = ("import os, sys; from authbench.results.lock import FolderLock; "
              f"FolderLock({str(tmp_path / 'r')!r}).acquire(); os.kill(os.getpid(), 9)")
    assert subprocess.run([sys.executable, "-c", holder], timeout=30).returncode == -9
    FolderLock(tmp_path / "r").acquire().release()


def test_overwrite_moves_the_old_folder_aside(tmp_path):
    path, lock = claim(tmp_path, "r")
    (path / "summary.json").write_text("{}")
    lock.release()
    path, lock = claim(tmp_path, "r", existing=OVERWRITE)
    lock.release()
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("r.replaced-")]
    assert len(aside) == 1 and (aside[0] / "summary.json").exists() and not (path / "summary.json").exists()


def test_abandon_removes_only_an_empty_claim(tmp_path):
    path, lock = claim(tmp_path, "empty")
    abandon(path, lock)
    assert not path.exists()
    path, lock = claim(tmp_path, "kept")
    (path / "preflight.txt").write_text("evidence")
    abandon(path, lock)
    assert (path / "preflight.txt").exists()


def test_resume_needs_the_same_target_and_plan(tmp_path: Path):
    (tmp_path / "summary.json").write_text(json.dumps({"plan": PLAN, "config": {"target": "https://a/"}}))
    assert resume_mismatch(tmp_path, PLAN, "https://a/") is None
    assert "not https://b/" in resume_mismatch(tmp_path, PLAN, "https://b/")
    assert "was run with --pattern 2x5, not 3x5; resume with the same --pattern" in resume_mismatch(
        tmp_path, {**PLAN, "patterns": ["3x5"]}, "https://a/")
    assert "--repeat 1, not 2; resume with the same --repeat" in resume_mismatch(
        tmp_path, {**PLAN, "repeat": 2}, "https://a/")
    (tmp_path / "summary.json").write_text("[1]")
    assert "is not a run summary" in resume_mismatch(tmp_path, PLAN, "https://a/")


LEVELS = {"patterns": ["a", "b"], "warmup_s": 0.0, "repeat": 1, "model": "open",
          "levels": [{"name": "a", "rate": 10.0, "duration_s": 1.0, "warmup_s": 0.0},
                     {"name": "b", "rate": 10.0, "duration_s": 3.0, "warmup_s": 0.0}],
          "arrivals": "constant", "seed": None, "max_users": 1000, "queue_for_s": 1.0, "late_after_ms": 10.0,
          "slo": None, "search": None}
SEARCH = {"start": 10.0, "growth": 2.0, "precision": 0.05, "max_rate": 2000.0, "hold": 30.0, "warmup": 5.0,
          "max_steps": 20}


@pytest.mark.parametrize(("wanted", "message"), [
    ({**LEVELS, "levels": [LEVELS["levels"][0], {**LEVELS["levels"][1], "rate": 20.0}], "patterns": ["a", "b"]},
     "--levels a=10/s:1s,b=10/s:3s, not --levels a=10/s:1s,b=20/s:3s; resume with the same --levels"),
    ({**LEVELS, "levels": [{"name": "10/s", "rate": 10.0, "duration_s": 3.0, "warmup_s": 0.5}]},
     "--levels a=10/s:1s,b=10/s:3s, not --rate 10/s --duration 3s --warmup 0.5s; resume with the same --levels"),
    ({**LEVELS, "slo": "p99<500ms", "seed": 7},
     "--seed none, not 7; --slo none, not p99<500ms; resume with the same --seed and --slo"),
    ({**LEVELS, "search": SEARCH}, "no capacity search, not with one; resume with the same capacity search (max)"),
    (PLAN, "was run with --levels a=10/s:1s,b=10/s:3s, not --pattern 2x5; resume with the same --pattern, --rate or"),
])
def test_an_open_model_resume_names_what_differs(tmp_path: Path, wanted, message):
    (tmp_path / "summary.json").write_text(json.dumps({"plan": LEVELS, "config": {"target": "https://a/"}}))
    assert resume_mismatch(tmp_path, LEVELS, "https://a/") is None
    assert message in resume_mismatch(tmp_path, wanted, "https://a/")


def test_a_capacity_resume_names_the_search_option(tmp_path: Path):
    stored = {**LEVELS, "levels": [], "patterns": [], "slo": "p99<1000ms", "search": SEARCH}
    (tmp_path / "summary.json").write_text(json.dumps({"plan": stored, "config": {"target": "https://a/"}}))
    problem = resume_mismatch(tmp_path, {**stored, "search": {**SEARCH, "hold": 2.0, "precision": 0.1}}, "https://a/")
    assert problem.endswith("was run with --precision 5%, not 10%; --step-duration 30s, not 2s; resume with the same "
                            "--precision and --step-duration")
