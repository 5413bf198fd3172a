"""`authbench run` against the session lab: exact counts with real failures, bad input, crash safety."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from authbench.cli import main
from authbench.results.recorder import read_samples

ROOT = Path(__file__).resolve().parents[2]
KILL_AFTER_ROWS = 20
WAIT_LIMIT = 60.0  # seconds any subprocess in this file may take


@pytest.fixture
def lab_env(lab, monkeypatch):
    monkeypatch.setenv("AUTHBENCH_LAB_DIR", str(lab.run_dir))
    return lab


def run(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(["run", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_exact_count_with_bad_passwords_injected(lab_env, tmp_path, capsys):
    rows = ["user,password"] + [f"user{i:03d},{'wrong' if i % 5 == 4 else f'pw-user{i:03d}'}" for i in range(10)]
    (tmp_path / "accounts.csv").write_text("\n".join(rows) + "\n")
    code, out, _ = run(["--target", "lab:memcached", "--pattern", "2x20", "--accounts-csv",
                        str(tmp_path / "accounts.csv"), "--results", str(tmp_path), "--run-id", "r"], capsys)
    assert code == 0, out
    document = json.loads((tmp_path / "r" / "summary.json").read_text())
    summary = document["cells"][0]["summary"]
    assert summary["tests"] == 40 and summary["errors"] == 8  # every fifth account has a wrong password
    assert summary["reasons"] == {"bad credentials": 8}
    assert "SSO login" in document["cells"][0]["steps"] and "IdP login POST" in document["cells"][0]["steps"]
    assert not any("?" in step for step in document["cells"][0]["steps"])  # stable names, no query strings
    assert "pw-user" not in (tmp_path / "r" / "samples.csv").read_text() + json.dumps(document)
    assert "pw-user" not in out


def test_warmup_repeat_and_table(lab_env, tmp_path, capsys):
    code, out, _ = run(["--target", "lab:stateless", "--pattern", "3x4", "--warmup", "1s", "--repeat", "2",
                        "--results", str(tmp_path), "--run-id", "w"], capsys)
    assert code == 0
    samples = list(read_samples(tmp_path / "w" / "samples.csv"))
    for repetition in (1, 2):
        mine = [s for s in samples if s.repetition == repetition]
        measured = [s for s in mine if s.phase == "measured"]
        assert len(measured) == 12
        assert all(s.start < min(m.start for m in measured) for s in mine if s.phase == "warmup")
    assert "3x4 #1" in out and "3x4 #2" in out and "average" in out
    # Step statistics agree with Tests: warm-up journeys that end after the reset are not in them.
    for cell in json.loads((tmp_path / "w" / "summary.json").read_text())["cells"]:
        tests = cell["summary"]["tests"]
        assert cell["steps"]["SSO login"]["requests"] == tests == cell["steps"]["IdP login POST"]["requests"]
        assert {"idp-a", "idp-b", "generator"} <= set(cell["resources"]["components"])  # the cluster's servers
    assert (tmp_path / "w" / "resources.csv").read_text().count("\n") > 1  # as docs/results-layout.md says


def test_virtual_sp_with_signature_check(lab_env, tmp_path, capsys):
    code, out, _ = run(["--target", "lab:terracotta", "--sp", "virtual", "--verify-signature", "--pattern",
                        "2x3", "--results", str(tmp_path), "--run-id", "v"], capsys)
    assert code == 0, out
    summary = json.loads((tmp_path / "v" / "summary.json").read_text())["cells"][0]["summary"]
    assert summary["tests"] == 6 and summary["errors"] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--pattern", "2x"], "'2x' is not USERSxRUNS"),
        (["--pattern", "0x10"], "users must be 1"),
        (["--pattern", "ax3"], "'ax3' is not USERSxRUNS"),
        (["--pattern", "10x-1"], "'10x-1' is not USERSxRUNS"),
        (["--pattern", ","], "pattern list is empty"),
        (["--warmup", "soon"], "duration 'soon'"),
        (["--accounts-csv", "/nonexistent/accounts.csv"], "cannot read accounts file"),
        (["--accounts-template", "user{000..199}", "--password-rule", "nope-{user}"], "bad credentials"),
        (["--target", "lab:nosuchbackend"], "has no 'nosuchbackend' cluster"),
    ],
)
def test_bad_input_gives_one_line_and_exit_2(lab_env, tmp_path, capsys, args, message):
    base = ["--target", "lab:local", "--results", str(tmp_path)]
    code, _, err = run(base + args, capsys)
    assert code == 2
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_unreachable_target_and_page_without_login_form(lab_env, tmp_path, capsys):
    common = ["--accounts-template", "user{0..9}", "--ca-bundle", str(lab_env.ca_cert), "--results", str(tmp_path)]
    code, _, err = run(["--target", "https://127.0.0.1:9/secure/", *common], capsys)
    assert code == 2 and "(https://127.0.0.1:9/secure/): connection error" in err and "check --target's host" in err
    metadata = lab_env.lb_url("local") + "/idp/shibboleth"
    code, _, err = run(["--target", metadata, *common], capsys)
    assert code == 2 and "no redirect to an IdP and no login form" in err and "/idp/shibboleth" in err
    assert "--target must be a page the SP protects" in err


def test_unknown_option_value_and_unwritable_results(lab_env, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--target", "lab:local", "--order", "shuffled"])
    assert exit_info.value.code == 2
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    code, _, err = run(["--target", "lab:local", "--results", str(blocker / "sub")], capsys)
    assert code == 2 and "cannot write results" in err


def test_samples_survive_kill_9(lab_env, tmp_path):
    env = {**os.environ, "AUTHBENCH_LAB_DIR": str(lab_env.run_dir)}
    process = subprocess.Popen(
        [sys.executable, "-m", "authbench", "run", "--target", "lab:local", "--pattern", "2x100000",
         "--cell-time-limit", "60s", "--results", str(tmp_path), "--run-id", "k"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    csv_path = tmp_path / "k" / "samples.csv"
    deadline = time.monotonic() + WAIT_LIMIT
    try:
        while time.monotonic() < deadline:
            if csv_path.exists() and csv_path.read_text().count("\n") > KILL_AFTER_ROWS:
                break
            time.sleep(0.2)
        seen = csv_path.read_text().count("\n") - 1
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
    samples = list(read_samples(csv_path))
    assert len(samples) >= min(seen, KILL_AFTER_ROWS) and all(s.outcome == "ok" for s in samples)
    assert json.loads((tmp_path / "k" / "summary.json").read_text())["run_id"] == "k"


def test_lab_dir_names_the_lab_in_every_command(lab, tmp_path, capsys):
    code, _, err = run(["--target", "lab:local", "--lab-dir", str(tmp_path / "nolab"), "--results", str(tmp_path)],
                       capsys)
    assert code == 2 and f"no lab running in {tmp_path / 'nolab'}" in err and "--lab-dir" in err
    code, out, err = run(["--target", "lab:local", "--lab-dir", str(lab.run_dir), "--pattern", "1x1",
                          "--results", str(tmp_path), "--run-id", "d"], capsys)
    assert code == 0, err
    for command in (["run"], ["check-cluster"], ["compare"], ["web"], ["lab", "status"], ["lab", "up"]):
        assert _help_mentions(command, capsys), command


def _help_mentions(command: list[str], capsys) -> bool:
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    return "--lab-dir" in capsys.readouterr().out


def test_plain_locust_runs_the_same_locustfile(lab, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(ROOT / "locustfiles" / "saml_sso.py"), "--headless",
         "-u", "2", "-r", "2", "-t", "3s", "--stop-timeout", "20", "--host", lab.sp_url("repcached") + "/secure/",
         "--ca-bundle", str(lab.ca_cert), "--accounts-template", "user{000..199}", "--only-summary"],
        capture_output=True, text=True, timeout=WAIT_LIMIT, cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-2000:]
    assert "SSO login" in output and "IdP login POST" in output


def test_plain_locust_takes_the_success_rule_from_the_environment(lab, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(ROOT / "locustfiles" / "saml_sso.py"), "--headless",
         "-u", "1", "-r", "1", "-t", "2s", "--stop-timeout", "20", "--host", lab.sp_url("local") + "/secure/",
         "--ca-bundle", str(lab.ca_cert), "--accounts-template", "user{000..199}", "--only-summary"],
        capture_output=True, text=True, timeout=WAIT_LIMIT, cwd=tmp_path,
        env={**os.environ, "AUTHBENCH_EXPECT": "Goodbye, {user}"})
    output = result.stdout + result.stderr
    assert result.returncode == 1 and "JourneyFailed('page not as expected')" in output, output[-2000:]


def _sp_sessions(lab) -> int:
    """Connections HAProxy has accepted on the local cluster's SP frontend so far (its `stot`)."""
    import urllib.request

    url = f"http://127.0.0.1:{lab.shared_port('lb-stats')}/stats;csv"
    with urllib.request.urlopen(url, timeout=5) as response:
        rows = [line.split(",") for line in response.read().decode().splitlines()]
    header = rows[0]
    return next(int(row[header.index("stot")]) for row in rows[1:] if row[:2] == ["local-sp", "FRONTEND"])


@pytest.mark.parametrize(("churn", "at_least", "at_most"), [(True, 6, 100), (False, 1, 3)])
def test_new_connection_opens_a_connection_per_journey(lab_env, tmp_path, capsys, churn, at_least, at_most):
    before = _sp_sessions(lab_env)
    args = ["--target", "lab:local", "--pattern", "1x6", "--results", str(tmp_path), "--run-id", "n"]
    code, out, _ = run(args + (["--new-connection"] if churn else []), capsys)
    assert code == 0
    opened = _sp_sessions(lab_env) - before - 1  # the preflight journey's connection
    assert at_least <= opened <= at_most
    if churn:  # counted, though HAProxy resets idle closed connections so few or none linger here
        cell = json.loads((tmp_path / "n" / "summary.json").read_text())["cells"][0]
        assert cell["time_wait_after"] >= 0 and "TIME_WAIT towards port" in out
