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
    assert not list(tmp_path.iterdir())[1:]  # the refused run left no folder behind (the forced one did)


def test_every_scheme_has_its_port_so_one_server_has_one_key():
    assert url_key("ldap://127.0.0.1/") == url_key("ldap://127.0.0.1:389") == "ldap://127.0.0.1:389"
    assert url_key("ldaps://Dir.example.org") == "ldaps://dir.example.org:636"
    assert url_key("postgres://db/x") == url_key("postgresql://db:5432/y") == "postgresql://db:5432"


@pytest.mark.parametrize("target", ["lab:ldap", "ldap", "sp"])
def test_an_ldap_run_takes_the_same_lock(lab, tmp_path, capsys, monkeypatch, target):
    """The lab as a whole, whether named lab:ldap or by a URL it serves (its directory's, its SP's): its servers
    share the machine, so naming one by URL must not slip past a load on the lab."""
    monkeypatch.setenv("AUTHBENCH_LAB_DIR", str(lab.run_dir))
    url = {"lab:ldap": "lab:ldap", "ldap": lab.ldap_url(), "sp": lab.sp_url("local") + "/secure/"}[target]
    key = lab_key(lab.run_dir)
    args = ["run", "--target", url, "--pattern", "1x1", "--results", str(tmp_path), "--run-id", "l"]
    if target == "ldap":
        args += ["--bind-dn", "uid={user},ou=people,dc=example,dc=org", "--accounts-template", "user{000..009}",
                 "--password-rule", "pw-{user}"]
    if target == "sp":
        args += ["--ca-bundle", str(lab.ca_cert), "--accounts-template", "user{000..009}"]
    with target_lock(key, "authbench run (results elsewhere)"):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "is already under load by authbench run (results elsewhere)" in err
        assert not (tmp_path / "l").exists()
    assert main(args) == 0, capsys.readouterr().err
