"""Options from $AUTHBENCH_<OPTION> and a TOML plan file (`--config`), parsed by `main` up to the handler.

Precedence: command line > environment > plan file > default; every mistake is one line, exit 2, and
never shows a value (a variable may hold a secret). No load: the handlers are replaced by a recorder.
"""

from __future__ import annotations

import argparse
import os

import pytest

from authbench.cli import EXIT_USAGE, check_cluster, compare, lab, main, run

SECRET = "s3cret-Value"  # must never reach the terminal
URL = "https://sp.test/secure/"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    """Only the variables a test sets: none of the machine's own AUTHBENCH_* (but the session's lock folder)."""
    for name in os.environ:
        if name.startswith("AUTHBENCH_") and name != "AUTHBENCH_LOCK_DIR":
            monkeypatch.delenv(name)


@pytest.fixture
def parse(monkeypatch):
    """`main(argv)` → the options its handler would have had."""
    seen: list[argparse.Namespace] = []
    for module, name in ((run, "_run"), (compare, "_compare"), (check_cluster, "_check_cluster"),
                         (lab, "_lab_up"), (lab, "_lab_status")):
        monkeypatch.setattr(module, name, lambda args: seen.append(args) or 0)

    def parse(*argv: str) -> argparse.Namespace:
        assert main(list(argv)) == 0
        return seen.pop()
    return parse


@pytest.fixture
def plan(tmp_path):
    """A plan file with the given TOML text; its path."""
    def write(text: str) -> str:
        path = tmp_path / "plan.toml"
        path.write_text(text)
        return str(path)
    return write


def refused(capsys, *argv: str) -> str:
    """The one line `main(argv)` exits 2 with."""
    with pytest.raises(SystemExit) as exit_:
        main(list(argv))
    err = capsys.readouterr().err
    assert exit_.value.code == EXIT_USAGE
    assert err.count("\n") == 1 and SECRET not in err, err
    return err


@pytest.mark.parametrize(("env", "argv", "expected"), [
    ({}, [], "2x5"),
    ({"AUTHBENCH_PATTERN": "3x5"}, [], "3x5"),
    ({"AUTHBENCH_PATTERN": "3x5"}, ["--pattern", "4x5"], "4x5"),
    ({"AUTHBENCH_PATTERN": ""}, [], "2x5"),  # empty is unset, as compose's ${X:-} leaves it
])
def test_command_line_over_environment_over_plan_file(parse, plan, monkeypatch, env, argv, expected):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert parse("run", "--config", plan(f'target = "{URL}"\npattern = "2x5"\n'), *argv).pattern == expected


def test_without_plan_file_or_environment_the_defaults_stay(parse):
    args = parse("run", "--target", URL)
    assert (args.pattern, args.repeat, args.reuse_session, args.fault, args.config) == (
        "2x1000,10x200,20x200", 1, False, [], None)


def test_toml_types_pass_through_the_options_own_type_and_choices(parse, plan, tmp_path):
    args = parse("run", "--config", plan(f'target = "{URL}"\nrepeat = 3\nmax_error_pct = 5\ntimeout = 20\n'
                                         f'order = "random"\nseed = "7"\nlab-dir = "{tmp_path}"\n'))
    assert (args.repeat, args.max_error_pct, args.timeout, args.order, args.seed, args.lab_dir) == (
        3, 5.0, "20", "random", 7, str(tmp_path))


def test_environment_values_are_typed_too(parse, monkeypatch):
    monkeypatch.setenv("AUTHBENCH_TARGET", URL)
    monkeypatch.setenv("AUTHBENCH_MAX_ERROR_PCT", "2.5")
    monkeypatch.setenv("AUTHBENCH_REPEAT", "4")
    args = parse("run")
    assert (args.target, args.max_error_pct, args.repeat) == (URL, 2.5, 4)


@pytest.mark.parametrize(("word", "on"), [("1", True), ("yes", True), ("TRUE", True), ("0", False), ("no", False)])
def test_a_flag_from_the_environment_overrides_the_plan_files(parse, plan, monkeypatch, word, on):
    monkeypatch.setenv("AUTHBENCH_REUSE_SESSION", word)
    assert parse("run", "--config", plan(f'target = "{URL}"\nreuse_session = true\n')).reuse_session is on


def test_a_flag_from_the_plan_file(parse, plan):
    args = parse("run", "--config", plan(f'target = "{URL}"\nreuse-session = true\nnew_connection = false\n'))
    assert (args.reuse_session, args.new_connection) == (True, False)


def test_repeatable_options_take_an_array_and_the_command_line_replaces_it(parse, plan, monkeypatch):
    path = plan(f'target = "{URL}"\nfault = ["at=1s stop idp-a", "at=5s start idp-a"]\n')
    assert parse("run", "--config", path).fault == ["at=1s stop idp-a", "at=5s start idp-a"]
    assert parse("run", "--config", path, "--fault", "at=2s run=true").fault == ["at=2s run=true"]
    monkeypatch.setenv("AUTHBENCH_FAULT", "at=3s run=true")  # one value from a variable
    assert parse("run", "--config", path).fault == ["at=3s run=true"]


def test_a_required_option_from_the_plan_file_or_the_environment(parse, plan, monkeypatch, capsys):
    assert parse("check-cluster", "--config", plan(f'target = "{URL}"\nnode = ["{URL}"]\n')).node == [URL]
    monkeypatch.setenv("AUTHBENCH_TARGET", URL)
    assert parse("run").target == URL
    monkeypatch.delenv("AUTHBENCH_TARGET")
    assert "the following arguments are required: --target" in refused(capsys, "run")


def test_an_option_on_the_command_line_overrides_its_alternatives(parse, plan, monkeypatch):
    monkeypatch.setenv("AUTHBENCH_ACCOUNT", "user001")
    args = parse("run", "--target", URL, "--accounts-csv", "a.csv")  # not: --account and --accounts-csv at once
    assert (args.account, args.accounts_csv) == (None, "a.csv")
    args = parse("run", "--config", plan(f'target = "{URL}"\naccounts_template = "u{{1..2}}"\n'))
    assert (args.account, args.accounts_template) == ("user001", None)  # the environment's alternative wins
    monkeypatch.setenv("AUTHBENCH_WORKERS", "3")  # a worker process inherits its master's environment
    args = parse("run", "--target", URL, "--worker")
    assert (args.worker, args.workers) == (True, None)


def test_a_flag_turned_off_leaves_its_alternative_free(parse, plan, monkeypatch):
    monkeypatch.setenv("AUTHBENCH_INSECURE", "0")
    args = parse("run", "--config", plan(f'target = "{URL}"\nca_bundle = "ca.pem"\n'))
    assert (args.insecure, args.ca_bundle) == (False, "ca.pem")


def test_plan_file_values_reach_worker_processes(parse, plan):
    """The defaults are restored after parsing: a value from the file differs from its option's default, so
    `--workers` hands it to its workers' command lines like a value typed there."""
    args = parse("run", "--config", plan(f'target = "{URL}"\naccounts_template = "u{{1..2}}"\nreuse_session = true\n'))
    assert run._journey_argv(args) == ["--target", URL, "--accounts-template", "u{1..2}", "--reuse-session"]


def test_config_from_the_environment_and_abbreviated(parse, plan, monkeypatch):
    path = plan(f'target = "{URL}"\n')
    assert parse("run", "--conf", path).target == URL
    assert parse("run", f"--config={path}").target == URL
    monkeypatch.setenv("AUTHBENCH_CONFIG", path)
    assert parse("run").target == URL


def test_names_are_per_subcommand_and_project_variables_keep_their_meaning(parse, plan, monkeypatch):
    monkeypatch.setenv("AUTHBENCH_WORKERS", "3")
    monkeypatch.setenv("AUTHBENCH_PASSWORD", SECRET)  # the single account's password, no option
    monkeypatch.setenv("AUTHBENCH_DEBUG", "1")
    assert parse("lab", "up", "--config", plan("users = 5\nwith = ['privacyidea']\n")).workers == 3  # gunicorn's
    assert not hasattr(parse("lab", "status"), "workers")
    monkeypatch.setenv("AUTHBENCH_WORKERS", "x")  # not an option of `lab status`: not read
    assert parse("lab", "status").json is False


def test_help_works_whatever_the_environment_holds(monkeypatch, capsys):
    monkeypatch.setenv("AUTHBENCH_REPEAT", "x")
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--help"])
    assert exit_.value.code == 0 and "--config FILE" in capsys.readouterr().out


def test_every_subcommand_takes_config_but_authrate(capsys):
    from authbench.cli import build_parser

    commands = [[name] for name in sorted(set(build_parser()._actions[-1].choices) - {"authrate", "lab"})]
    for argv in [*commands, ["lab", "up"], ["lab", "stop"]]:
        with pytest.raises(SystemExit):
            main([*argv, "--help"])
        assert "--config FILE" in capsys.readouterr().out, argv


@pytest.mark.parametrize(("text", "message"), [
    (f'target = "{URL}"\nbogus = "{SECRET}"\n', "'bogus' is not an option of authbench run; remove it"),
    (f'target = "{URL}"\npattern = \n', "is not valid TOML: Invalid value (at line 2, column 11)"),
    (f'target = "{URL}"\n[pattern]\nx = "{SECRET}"\n', "'pattern': a table is not a value of --pattern"),
    (f'target = ["{SECRET}"]\n', "'target': --target takes one value, not an array"),
    ('target = 1979-05-27\n', "'target': a date or time is not a value of --target"),
    (f'target = "{URL}"\nrepeat = true\n', "'repeat': a boolean is not a value of --repeat"),
    (f'target = "{URL}"\nrepeat = "{SECRET}"\n', "'repeat' is not a valid value of --repeat; give a whole number"),
    (f'target = "{URL}"\norder = "{SECRET}"\n', "'order': --order takes one of sequential, random"),
    (f'target = "{URL}"\nreuse_session = "{SECRET}"\n', "--reuse-session is a flag; give true or false"),
    (f'target = "{URL}"\nrun_id = "a"\nrun-id = "b"\n', "'run-id' is given twice (with - and with _); keep one"),
    (f'target = "{URL}"\naccount = "{SECRET}"\naccounts_csv = "a.csv"\n', "are alternatives"),
    ('config = "other.toml"\n', "'config': a plan file cannot name another"),
])
def test_a_bad_plan_file_is_one_line(capsys, plan, text, message):
    assert message in refused(capsys, "run", "--config", plan(text))


def test_an_unreadable_plan_file_is_one_line(capsys, tmp_path):
    err = refused(capsys, "run", "--config", str(tmp_path / "none.toml"))
    assert "cannot read the plan file" in err and "No such file or directory; check --config" in err
    assert "Is a directory" in refused(capsys, "compare", "--config", str(tmp_path))
    (tmp_path / "latin1.toml").write_bytes(b'expect = "caf\xe9"\n')
    assert "is not UTF-8 text" in refused(capsys, "run", "--config", str(tmp_path / "latin1.toml"))


@pytest.mark.parametrize(("name", "message"), [
    ("AUTHBENCH_REUSE_SESSION", "$AUTHBENCH_REUSE_SESSION: --reuse-session is a flag; give 1, 0, true, false, yes"),
    ("AUTHBENCH_MAX_ERROR_PCT", "$AUTHBENCH_MAX_ERROR_PCT is not a valid value of --max-error-pct; give a number"),
    ("AUTHBENCH_SP", "$AUTHBENCH_SP: --sp takes one of target, virtual"),
])
def test_a_bad_environment_value_is_one_line_without_the_value(capsys, monkeypatch, name, message):
    monkeypatch.setenv(name, SECRET)
    err = refused(capsys, "run", "--target", URL)
    assert err.startswith("authbench run: error: ") and message in err


def test_alternatives_in_the_environment_are_one_line(capsys, monkeypatch):
    monkeypatch.setenv("AUTHBENCH_ACCOUNT", SECRET)
    monkeypatch.setenv("AUTHBENCH_ACCOUNTS_CSV", SECRET)
    assert "$AUTHBENCH_ACCOUNT and $AUTHBENCH_ACCOUNTS_CSV are alternatives" in refused(capsys, "run", "--target", URL)


def test_compare_dry_run_from_a_plan_file(plan, tmp_path, capsys):
    """End to end, no load: the plan is compare's."""
    path = plan('target = ["a=https://127.0.0.1:9/secure/"]\npattern = "2x5"\nrepeat = 2\nwarmup = "0"\n')
    assert main(["compare", "--config", path, "--dry-run", "--results", str(tmp_path / "res")]) == 0
    assert "1 target(s) × 1 pattern(s) × 2 repetition(s) = 2 cells" in capsys.readouterr().out


def test_authrate_keeps_its_own_parser(monkeypatch, capsys):
    """OpenDJ's options and exit codes: no --config, no variables read."""
    monkeypatch.setenv("AUTHBENCH_HOSTNAME", SECRET)
    assert main(["authrate", "-H"]) == 0
    out = capsys.readouterr().out
    assert "-h HOSTNAME" in out and "--config" not in out
