"""The database and privacyIDEA kinds through the one run path, on the extras lab's real PostgreSQL and
privacyIDEA: what tests/cli/test_kinds.py checks of SAML, LDAP and your own journeys. privacyIDEA runs in one
process (HOTP counters), so a distributed run of it is refused in one line instead."""

from __future__ import annotations

import json

import pytest
from kind_matrix import accounts_csv, arrival_rate, errors_verdict_metrics_evidence_faults, master_and_worker

from authbench.cli import main
from authbench.embedded_lab import privacyidea

from ports import DISTRIBUTED

PORTS = {"postgres": DISTRIBUTED + 50, "privacyidea": DISTRIBUTED + 53}  # this file's: +50..+59
POSTGRES = ["--target", "lab:postgres"]
PRIVACYIDEA = ["--target", "lab:privacyidea", "--otp-type", "spass"]


def test_postgres_workers_verdict_metrics_evidence_and_faults(extras_env, tmp_path, capsys):
    document = errors_verdict_metrics_evidence_faults(
        POSTGRES, tmp_path, capsys, PORTS["postgres"], ["--workers", "2", "--master-bind-port",
                                                        str(PORTS["postgres"] + 1)])
    assert document["config"]["processes"] == 2


def test_postgres_master_and_a_separate_worker(extras_env, tmp_path, capsys):
    master_and_worker(POSTGRES, tmp_path, capsys, PORTS["postgres"] + 2)


def test_postgres_arrival_rates(extras_env, tmp_path, capsys):
    arrival_rate(POSTGRES, tmp_path, capsys)


def test_privacyidea_verdict_metrics_evidence_and_faults(extras_env, tmp_path, capsys):
    tokens = json.loads(privacyidea(extras_env)["tokens"].read_text())
    for number in range(4, 20, 5):  # every fifth user's SPASS PIN is wrong: privacyIDEA refuses it
        tokens[f"user{number:03d}"]["spass"]["pin"] += "-wrong"
    (tmp_path / "tokens.json").write_text(json.dumps(tokens))
    failing = ["--tokens-file", str(tmp_path / "tokens.json"), "--realm", "lab",
               "--accounts-csv", str(accounts_csv(tmp_path, 20, bad_every=1000))]
    document = errors_verdict_metrics_evidence_faults(PRIVACYIDEA, tmp_path, capsys, PORTS["privacyidea"], [],
                                                      failing, secret=tokens["user004"]["spass"]["pin"])
    assert document["cells"][0]["summary"]["reasons"] == {"wrong otp pin": 4}


@pytest.mark.parametrize("role", [["--workers", "2"], ["--master"], ["--worker"]])
def test_privacyidea_refuses_a_distributed_run_in_one_line(role, extras_env, tmp_path, capsys):
    assert main(["run", *PRIVACYIDEA, *role, "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "privacyIDEA OTP checks cannot run distributed" in err and err.count("\n") == 1, err


def test_privacyidea_arrival_rates(extras_env, tmp_path, capsys):
    arrival_rate(PRIVACYIDEA, tmp_path, capsys)
