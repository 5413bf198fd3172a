"""Every journey kind through the one run path, on real servers (the session lab): SAML SSO, LDAP binds and a
journey of your own (locustfiles/sso_then_page.py, the docs' example). The database and privacyIDEA kinds
are checked alike in tests/extras/test_kinds_extras.py, against the lab that runs those servers."""

from __future__ import annotations

from pathlib import Path

import pytest
from kind_matrix import arrival_rate, errors_verdict_metrics_evidence_faults, master_and_worker

from authbench.cli import main

from ports import DISTRIBUTED

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "locustfiles" / "sso_then_page.py")
KINDS = {  # kind → its target options
    "saml": ["--target", "lab:stateless"],
    "ldap": ["--target", "lab:ldap"],
    "custom": ["--target", "lab:stateless", "-f", EXAMPLE],
}
PORTS = {"saml": DISTRIBUTED + 40, "ldap": DISTRIBUTED + 43, "custom": DISTRIBUTED + 46}  # this file's: +40..+49


@pytest.fixture
def lab_env(lab, monkeypatch):
    monkeypatch.setenv("AUTHBENCH_LAB_DIR", str(lab.run_dir))
    return lab


@pytest.mark.parametrize("kind", KINDS)
def test_workers_verdict_metrics_evidence_and_faults(kind, lab_env, tmp_path, capsys):
    document = errors_verdict_metrics_evidence_faults(
        KINDS[kind], tmp_path, capsys, PORTS[kind], ["--workers", "2", "--master-bind-port", str(PORTS[kind] + 1)])
    assert document["config"]["processes"] == 2


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "saml"])  # SAML: tests/distributed, tests/k8s
def test_a_master_and_a_separate_worker(kind, lab_env, tmp_path, capsys):
    master_and_worker(KINDS[kind], tmp_path, capsys, PORTS[kind] + 2)


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "saml"])  # SAML's: tests/openmodel
def test_arrival_rates(kind, lab_env, tmp_path, capsys):
    arrival_rate(KINDS[kind], tmp_path, capsys)


@pytest.mark.parametrize(("args", "message"), [
    (["--target", "lab:ldap", "--otp-type", "totp"],
     "LDAP binds cannot take --otp-type: it is for privacyIDEA OTP checks"),
    (["--target", "lab:stateless", "--bind-dn", "uid={user}"], "SAML SSO cannot take --bind-dn: it is for LDAP binds"),
    (["--target", "lab:ldap", "--expect", "x"], "LDAP binds cannot take --expect"),
    (["--target", "lab:stateless", "-f", "/nowhere.py"], "-f '/nowhere.py' is not a readable file"),
    (["--target", "lab:stateless", "--kind", "custom"], "--kind custom needs -f FILE"),
    (["--target", "lab:stateless", "-f", EXAMPLE, "--user-class", "Nope"], "--user-class Nope: "),
])
def test_options_of_another_kind_are_refused_in_one_line(args, message, lab_env, tmp_path, capsys):
    assert main(["run", *args, "--pattern", "1x1", "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not any(tmp_path.iterdir())  # refused before any folder or load


def test_a_journey_file_with_a_mistake_is_one_line(lab_env, tmp_path, capsys):
    broken = tmp_path / "broken.py"
    broken.write_text("from authbench import JourneyUser\n\nclass Mine(JourneyUser):\n    def journey(self)\n")
    plain = tmp_path / "plain.py"
    plain.write_text("from locust import User, task\n\nclass Mine(User):\n    @task\n    def t(self):\n        pass\n")
    for path, message in ((broken, "SyntaxError (line 4)"), (plain, "defines no authbench journey (Mine extend")):
        assert main(["run", "--target", "lab:stateless", "-f", str(path), "--results", str(tmp_path / "r")]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
