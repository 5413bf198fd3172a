"""`authbench authrate` against the lab's slapd: exact counts, injected errors, seeds, bad input, a lost server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest

from authbench.cli import main
from authbench_lab import lab as lab_api
from authbench_lab import slapd
from authbench_lab.config import LDAP_IDP_DN, LDAP_PEOPLE, LabConfig

from ports import LDAP_FAULT

TOTAL = re.compile(r"^(\d+) authentications in ([\d.]+) s after the warm-up: ([\d.]+)/s, (\d+) errors$", re.M)
USER = f"uid=user150,{LDAP_PEOPLE}"
PASSWORD = "pw-user150"
OUTAGE_S = 2.0
FAULT_RUN_S = 8


def authrate(lab: LabConfig, *args: str, capsys) -> tuple[int, str, str]:
    code = main(["authrate", "-h", "127.0.0.1", "-p", str(lab.shared_port("ldap")), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def totals(text: str) -> tuple[int, int]:
    match = TOTAL.search(text)
    assert match, text
    return int(match.group(1)), int(match.group(4))


@pytest.mark.parametrize("keep_open", [True, False])
def test_max_iterations_is_exact(lab, capsys, keep_open):
    flags = ["-f"] if keep_open else []
    code, out, err = authrate(lab, "-D", USER, "-w", PASSWORD, "-c", "7", "-m", "137", *flags, capsys=capsys)
    assert code == 0, err
    assert totals(out) == (137, 0)
    assert "|   recent  average |" in out  # authrate's table
    churn = re.search(r"(\d+) connections opened", out)
    assert (churn is None) if keep_open else (churn and int(churn.group(1)) == 137)


def test_invalid_passwords_are_counted_errors(lab, capsys):
    code, out, err = authrate(lab, "-D", USER, "-w", PASSWORD, "-c", "5", "-f", "-m", "600", "-I", "20", "-S",
                              capsys=capsys)
    assert code == 0, err
    ops, errors = totals(err)  # with -S the summary goes to stderr, the CSV alone to stdout
    assert ops == 600 and 0.12 * ops < errors < 0.28 * ops
    assert f"{errors} × invalidCredentials (49)" in err
    rows = [line.split(",") for line in out.strip().splitlines()]
    assert rows[0][0] == "Time (seconds)" and rows[0][-1] == "Errors/second" and len(rows) >= 2
    assert all(len(r) == len(rows[0]) for r in rows) and float(rows[-1][-1]) > 0


def test_workers_share_the_iterations_and_one_table(lab, capsys):
    code, out, err = authrate(lab, "-D", USER, "-w", PASSWORD, "-c", "4", "-f", "-m", "301", "-I", "20", "-S",
                              "-i", "0.5", "--workers", "2", capsys=capsys)
    assert code == 0, err
    ops, errors = totals(err)
    assert ops == 301 and 0 < errors < 301 and f"{errors} × invalidCredentials (49)" in err
    rows = out.strip().splitlines()
    assert rows[0].startswith("Time (seconds),") and len(rows) >= 2
    code, out, err = authrate(lab, "-D", USER, "-w", PASSWORD, "-c", "3", "-m", "1", "--workers", "3", "-S",
                              capsys=capsys)  # fewer iterations than workers: the idle ones stop at once
    assert code == 0 and totals(err) == (1, 0), err


def test_a_seed_reproduces_the_run(lab, capsys):
    """`uid=user1{}` over rand(50,59): one in ten is user150, whose password is given; the rest fail."""
    runs = []
    for seed in ("11", "11", "12"):
        code, out, err = authrate(lab, "-D", "uid=user1{},ou=people,dc=example,dc=org", "-g", "rand(50,59)",
                                  "-w", PASSWORD, "-f", "-m", "200", "--seed", seed, "-I", "10", capsys=capsys)
        assert code == 0, err
        runs.append(totals(out)[1])
    assert runs[0] == runs[1] != runs[2]
    assert 100 < runs[0] < 200


def test_search_then_bind(lab, capsys, tmp_path):
    secret = tmp_path / "idp.pw"
    secret.write_text(slapd.paths(lab).idp_password.read_text())
    code, out, err = authrate(lab, "-D", "{2}", "-w", PASSWORD, "-f", "-c", "3", "-m", "30", "-b", LDAP_PEOPLE,
                              "-s", "one", "-g", "inc(150,150)", "--search-as", LDAP_IDP_DN,
                              "--search-password-file", str(secret), "(uid=user{1})", capsys=capsys)
    assert code == 0, err
    assert totals(out) == (30, 0)
    code, out, _ = authrate(lab, "-D", "{2}", "-w", PASSWORD, "-m", "5", "-b", LDAP_PEOPLE, "-g", "150",
                            "(uid=user{1})", capsys=capsys)  # anonymous may not search the people here
    assert totals(out) == (5, 5) and "5 × noSuchObject (32)" in out  # the base is hidden from anonymous


def test_ldaps_verifies_with_the_ca_and_refuses_without_it(lab, capsys):
    ldaps = ["-p", str(lab.shared_port("ldaps")), "-Z", "-D", USER, "-w", PASSWORD, "-m", "10", "-f"]
    code, out, _ = authrate(lab, *ldaps, "--ca-file", str(lab.ca_cert), capsys=capsys)
    assert code == 0 and totals(out) == (10, 0)
    code, out, _ = authrate(lab, *ldaps, capsys=capsys)
    assert totals(out) == (10, 10) and "connect error" in out
    assert "certificate" in out.split("connect error", 1)[1].splitlines()[0]  # the TLS cause, not only its kind
    code, out, _ = authrate(lab, "-q", "--ca-file", str(lab.ca_cert), "-D", USER, "-w", PASSWORD, "-m", "10",
                            capsys=capsys)
    assert totals(out) == (10, 0)


def test_target_throughput_is_held(lab, capsys):
    code, out, err = authrate(lab, "-D", USER, "-w", PASSWORD, "-f", "-c", "4", "-M", "100", "-d", "2", "-i", "1",
                              capsys=capsys)
    assert code == 0, err
    ops, _ = totals(out)
    assert 170 <= ops <= 201
    assert re.search(r"target 100/s: at most \d+ ms behind schedule, \d+ operations started late", out)


def test_password_from_env_and_file(lab, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("BIND_PW", PASSWORD)
    (tmp_path / "pw").write_text(PASSWORD + "\n")
    for source in (["-w:env", "BIND_PW"], ["--bindPassword:file", str(tmp_path / "pw")]):
        code, out, err = authrate(lab, "-D", USER, *source, "-m", "3", capsys=capsys)
        assert code == 0 and totals(out) == (3, 0), err
        assert PASSWORD not in out + err


@pytest.mark.parametrize(("args", "message"), [
    (["-D", "uid=user{}", "-w", "x", "-g", "rand(5)"], "rand(5)"),
    (["-D", "uid=user{}", "-w", "x", "-g", "inc(3,1)"], "min 3 is greater than max 1"),
    (["-D", "uid=user{}", "-w", "x", "-g", "randstr(x)"], "'x' is not an integer"),
    (["-D", "uid=user{", "-w", "x"], "unbalanced"),
    (["-D", "uid=user{}}", "-w", "x", "-g", "1"], "unbalanced"),
    (["-D", "uid=user{}", "-w", "x"], "uses argument 1 but there are only 0"),
    (["-D", "{2}", "-w", "x", "-b", "ou=people", "-g", "1", "(uid={1}"], "unbalanced parentheses"),
    (["-D", "{2}", "-w", "x", "-b", "ou=people", "-g", "1", "(uid={1}})"], "unbalanced or malformed braces"),
    (["-D", "uid=a", "-w", "x", "-I", "120"], "-I must be between 0 and 100"),
    (["-D", "uid=a", "-w", "x", "-c", "0"], "-c must be at least 1"),
    (["-D", "uid=a"], "no password"),
    (["-D", "uid=a", "-w:env", "AUTHBENCH_NO_SUCH_VARIABLE"], "is not set"),
    (["-D", "uid=a", "-w", "x", "--nosuch"], "unrecognized arguments"),
    (["-D", "uid=a", "-w", "x", "-c", "many"], "invalid int value"),
    (["-D", "uid=a", "-w", "x", "-h", "192.0.2.1"], "only loads servers on loopback"),
    (["-D", "uid=a", "-w", "x", "-b", "ou=people"], "-b needs a filter"),
    (["-w", "x"], "no bind DN"),
])
def test_bad_arguments_exit_89_with_one_line(lab, capsys, args, message):
    code, out, err = authrate(lab, *args, capsys=capsys)
    assert code == 89
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("authbench authrate: error: ") and message in lines[0], err
    assert out == ""


@pytest.fixture(scope="module")
def own_lab(tmp_path_factory: pytest.TempPathFactory):
    """A lab whose slapd this file may stop and start."""
    config = LabConfig(run_dir=tmp_path_factory.mktemp("authrate-lab"), base_port=LDAP_FAULT, backends=["local"],
                       users=200, workers=1, threads=1, timings="fast")
    try:
        lab_api.up(config)
        yield config
    finally:
        lab_api.down(config.run_dir)


def test_server_lost_mid_run_errors_counted_and_binds_resume(own_lab):
    command = [sys.executable, "-m", "authbench", "authrate", "-h", "127.0.0.1", "-p",
               str(own_lab.shared_port("ldap")), "-D", USER, "-w", PASSWORD, "-c", "4", "-f", "-d",
               str(FAULT_RUN_S), "-i", "1", "-S"]
    began = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "AUTHBENCH_DEBUG": ""})
    header, first = process.stdout.readline(), process.stdout.readline()  # binding is under way
    try:
        lab_api.stop_component(own_lab.run_dir, "ldap")
        time.sleep(OUTAGE_S)
    finally:
        lab_api.start_component(own_lab.run_dir, "ldap")
    rest, err = process.communicate(timeout=FAULT_RUN_S + 30)
    out = header + first + rest
    elapsed = time.monotonic() - began
    assert process.returncode == 0, err
    assert "Traceback" not in err
    assert elapsed >= FAULT_RUN_S  # the run kept going through the outage
    rows = [[float(v) for v in line.split(",")] for line in out.strip().splitlines()[1:]]
    assert len(rows) >= FAULT_RUN_S - 1
    assert rows[0][-1] == 0 and any(r[-1] > 0 for r in rows), out + err  # errors while slapd was down
    assert rows[-1][-1] == 0 and rows[-1][1] > 0  # binding again after it came back
    assert "connect error" in err


@pytest.mark.parametrize("workers", ["1", "2"])
def test_warmup_is_left_out_of_the_figures(lab, capsys, workers):
    code, out, err = authrate(lab, "-D", USER, "-w", PASSWORD, "-f", "-c", "2", "-B", "1", "-d", "2.5", "-i", "0.5",
                              "--workers", workers, capsys=capsys)
    assert code == 0, err
    match = TOTAL.search(out)
    assert match and 1.2 <= float(match.group(2)) <= 1.8, out  # measured: the 1.5 s after the warm-up


def test_password_on_the_command_line_is_warned_about(lab, capsys):
    code, out, err = authrate(lab, "-D", USER, "-w", PASSWORD, "-m", "2", capsys=capsys)
    assert code == 0 and "-w puts the password on the command line" in err and "-w:env" in err
    assert PASSWORD not in out + err
    os.environ["AUTHRATE_TEST_PW"] = PASSWORD
    try:
        code, _, err = authrate(lab, "-D", USER, "-w:env", "AUTHRATE_TEST_PW", "-m", "2", capsys=capsys)
    finally:
        del os.environ["AUTHRATE_TEST_PW"]
    assert code == 0 and "warning" not in err


def test_duration_holds_against_a_server_that_never_answers(capsys):
    import socket

    with socket.socket() as silent:  # accepts connections (the kernel does), never answers a bind
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        began = time.monotonic()
        main(["authrate", "-h", "127.0.0.1", "-p", str(silent.getsockname()[1]), "-D", USER, "-w:env", "PATH",
              "-c", "2", "-d", "2"])  # the default --timeout is 30 s: an unbounded wait would take that long
        elapsed = time.monotonic() - began
    out = capsys.readouterr().out
    assert elapsed < 15, elapsed  # bounded by -d plus a second's grace, not by the 30 s operation timeout
    assert totals(out)[0] == 0  # nothing answered: no operation counted, no latency made up
    assert "2 operations were still waiting for the server when the run ended" in out  # …but not hidden either


@pytest.mark.parametrize("given", [["-w", "s3cret"], ["-ws3cret"], ["--bindPassword", "s3cret"],
                                   ["--bindPassword=s3cret"], ["--bindPass", "s3cret"]])
def test_workers_get_the_password_through_their_environment_not_their_command_line(given):
    from authbench.cli.authrate import PASSWORD_ENV, worker_argv

    argv, env = worker_argv(["-D", "uid=x", *given, "--workers", "3", "-c", "3", "--workers=2"], "s3cret")
    assert argv == ["-D", "uid=x", "-c", "3", "-w:env", PASSWORD_ENV] and env == {PASSWORD_ENV: "s3cret"}
    assert worker_argv(["-w:file", "f", "--workers", "2"], None) == (["-w:file", "f"], {})
