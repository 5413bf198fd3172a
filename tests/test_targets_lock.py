"""One load at a time per target: the lock is refused while held, names its holder, and dies with it."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from authbench.cli import main
from authbench.targets_lock import TargetBusy, holder, lab_key, target_lock, url_key

WAIT_LIMIT = 30.0


def test_a_second_load_is_refused_naming_the_first(tmp_path):
    key = url_key("https://IdP.example.org/secure/")
    assert key == "https://idp.example.org:443"
    with target_lock(key, "authbench run (results r1)", lock_dir=tmp_path):
        assert holder(key, tmp_path)["what"] == "authbench run (results r1)"
        refused = r"https://idp.example.org:443 is already under load by authbench run \(results r1\) \(pid \d+, since"
        with pytest.raises(TargetBusy, match=refused + r".*\); .*--force"), target_lock(key, "2nd", lock_dir=tmp_path):
            pass
        with target_lock(key, "forced", force=True, lock_dir=tmp_path):
            pass  # --force loads anyway
        with target_lock(url_key("https://other.example.org/"), "other", lock_dir=tmp_path):
            pass  # another target is free
    assert holder(key, tmp_path) is None
    with target_lock(key, "again", lock_dir=tmp_path):
        pass


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    code = (f"from authbench.targets_lock import target_lock\nimport time\n"
            f"with target_lock('k', 'child', lock_dir='{tmp_path}'):\n"
            "    print('held', flush=True)\n    time.sleep(60)\n")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "held"
        assert holder("k", tmp_path)["pid"] == child.pid
    finally:
        child.kill()
        child.wait(timeout=WAIT_LIMIT)
    deadline = time.monotonic() + WAIT_LIMIT
    while holder("k", tmp_path) is not None:
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_run_refuses_a_lab_under_load_and_force_overrides(lab, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("AUTHBENCH_LAB_DIR", str(lab.run_dir))
    args = ["run", "--target", "lab:local", "--pattern", "1x1", "--results", str(tmp_path)]
    with target_lock(lab_key(lab.run_dir), "authbench compare (results elsewhere)"):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "is already under load by authbench compare (results elsewhere)" in err
        assert main([*args, "--force"]) == 0
