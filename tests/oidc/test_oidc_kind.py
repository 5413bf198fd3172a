"""The OIDC kind through what tests/kind_matrix.py checks of every kind: workers, the verdict, /metrics, kept
evidence without a secret and a fault plan; a separate worker joining a master; an arrival rate. Against
panva's oidc-provider (conftest.py)."""

from __future__ import annotations

from kind_matrix import arrival_rate, errors_verdict_metrics_evidence_faults, master_and_worker

from ports import DISTRIBUTED

PORT = DISTRIBUTED + 60  # this file's: +60..+69


def target(op, accounts: bool = True) -> list[str]:
    return ["--target", op.target, "--client-id", "rp-basic", *(["--accounts-template", "user{000..019}"]
                                                                  if accounts else [])]


def test_workers_verdict_metrics_evidence_and_faults(op_env, tmp_path, capsys):
    document = errors_verdict_metrics_evidence_faults(
        target(op_env, accounts=False), tmp_path, capsys, PORT, ["--workers", "2", "--master-bind-port", str(PORT + 1)])
    assert document["config"]["processes"] == 2
    assert document["cells"][0]["summary"]["reasons"] == {"bad credentials": 4}
    for path in (tmp_path / "k").rglob("*"):
        assert not path.is_file() or op_env.secret not in path.read_text(errors="replace"), path


def test_a_master_and_a_separate_worker(op_env, tmp_path, capsys):
    master_and_worker(target(op_env), tmp_path, capsys, PORT + 2)


def test_arrival_rates(op_env, tmp_path, capsys):
    arrival_rate(target(op_env), tmp_path, capsys)
