"""`compare --backends` over the reference IdP's and Keycloak's clusters (issue 27): the labs it would bring up one
after another, and what it refuses in one line. No JVM starts here (the real runs: tests/keycloak)."""

from __future__ import annotations

from authbench.cli import main

from ports import IDLE


def test_each_keycloak_design_gets_a_lab_of_its_own_after_the_reference_backends(tmp_path, capsys):
    code = main(["compare", "--backends", "keycloak-owners2,memcached,keycloak-local,local", "--lab-dir",
                 str(tmp_path / "lab"), "--base-port", str(IDLE), "--pattern", "2x5", "--warmup", "0", "--repeat", "1",
                 "--results", str(tmp_path / "never"), "--dry-run"])
    out = capsys.readouterr().out
    assert code == 0, out
    ups = [line.strip() for line in out.splitlines() if line.strip().startswith("bring up the lab")]
    assert ups == ["bring up the lab with memcached, local (~6 s)",
                   "bring up the lab with keycloak-owners2 (with stateless idle: a lab needs a reference cluster) "
                   "(~75 s)",
                   "bring up the lab with keycloak-local (with stateless idle: a lab needs a reference cluster) "
                   "(~75 s)"]
    targets = [line.split()[0] for line in out.splitlines() if "checks Tests 1-3" in line]
    assert targets == ["memcached", "local", "keycloak-owners2", "keycloak-local"]
    assert not (tmp_path / "never").exists() and not (tmp_path / "lab").exists()


def test_an_unknown_cluster_is_refused_naming_keycloaks(tmp_path, capsys):
    code = main(["compare", "--backends", "memcached,keycloak-owners3", "--lab-dir", str(tmp_path), "--dry-run"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err
    assert "unknown backend 'keycloak-owners3'" in err and "keycloak-persistent" in err


def test_a_running_lab_without_the_design_is_not_switched(lab, tmp_path, capsys):
    """A lab the user started runs as it is: compare brings designs up one after another only in a lab it starts."""
    code = main(["compare", "--backends", "memcached,keycloak-owners2", "--lab-dir", str(lab.run_dir),
                 "--results", str(tmp_path), "--dry-run"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err
    assert "has no keycloak-owners2 cluster" in err and "authbench lab down" in err
