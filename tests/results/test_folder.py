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
    assert "same --pattern" in resume_mismatch(tmp_path, {**PLAN, "repeat": 2}, "https://a/")
    (tmp_path / "summary.json").write_text("[1]")
    assert "is not a run summary" in resume_mismatch(tmp_path, PLAN, "https://a/")
