"""`authbench run --max-error-pct`: the run's pass/fail in its exit status (what a Kubernetes Job reports)."""

from __future__ import annotations

import json

import pytest

from authbench.cli import EXIT_CRITERIA_FAILED, main

ACCOUNTS = 4  # one in four has a wrong password: exactly 25% of the journeys fail


@pytest.fixture
def accounts(lab, monkeypatch, tmp_path):
    monkeypatch.setenv("AUTHBENCH_LAB_DIR", str(lab.run_dir))
    rows = ["user,password"] + [f"user{i:03d},{'wrong' if i == ACCOUNTS - 1 else f'pw-user{i:03d}'}"
                                for i in range(ACCOUNTS)]
    (tmp_path / "accounts.csv").write_text("\n".join(rows) + "\n")
    return tmp_path / "accounts.csv"


@pytest.mark.parametrize(("limit", "code"), [("30", 0), ("20", EXIT_CRITERIA_FAILED)])
def test_error_share_above_the_limit_fails_the_run(accounts, tmp_path, capsys, limit, code):
    result = main(["run", "--target", "lab:stateless", "--pattern", "1x8", "--accounts-csv", str(accounts),
                   "--results", str(tmp_path), "--run-id", "r", "--max-error-pct", limit])
    out = capsys.readouterr().out
    assert result == code, out
    assert ("FAILED: 25.00% of 8 measured journeys failed" in out) == (code != 0)
    document = json.loads((tmp_path / "r" / "summary.json").read_text())
    summary = document["cells"][0]["summary"]
    assert (summary["tests"], summary["errors"]) == (8, 2)  # the results are kept either way
    # The verdict panel: summary.json's `verdicts` is what the console's last lines say.
    verdicts = document["verdicts"]
    assert verdicts["passed"] is (code == 0)
    errors = next(check for check in verdicts["checks"] if check["check"] == "errors")
    assert (errors["errors"], errors["journeys"], errors["passed"]) == (2, 8, code == 0)
    panel = out[out.index("Verdicts: "):].splitlines()
    assert panel[0] == ("Verdicts: all passed" if code == 0 else "Verdicts: FAILED")
    assert f"  {errors['mark']} errors: {errors['figure']}" in panel


def test_a_limit_outside_0_to_100_is_refused(accounts, tmp_path, capsys):
    assert main(["run", "--target", "lab:stateless", "--pattern", "1x1", "--max-error-pct", "150",
                 "--results", str(tmp_path)]) == 2
    assert "--max-error-pct must be between 0 and 100, got 150" in capsys.readouterr().err
