"""`--rp target`: a real RP we did not write (Apache with mod_auth_openidc, apache_rp.py) walked like an SP against
panva's oidc-provider: a pattern reaching the app's page, returning users, the form_post response mode, an app
that refuses the code, and the one-line errors; no secret (the app's cookies, codes, passwords) in the results."""

from __future__ import annotations

import csv
from pathlib import Path

import apache_rp
import pytest
from results_kit import assert_no_secret_in, run_summary

from authbench.cli import main
from authbench.kinds.oidc import rp_walk

ACCOUNTS = ["--accounts-template", "user{000..009}"]  # the lab's rule, authbench's default: pw-{user}


@pytest.fixture(scope="module")
def app(op):
    if not apache_rp.installed():
        pytest.fail("Apache with mod_auth_openidc is missing: run `make setup` (apache2, libapache2-mod-auth-openidc)")
    with apache_rp.running(op.issuer, op.secret) as rp:
        yield rp


SECRET_MARKERS = ("code=", "state=", "eyJhb", "mod_auth_openidc_session=")  # eyJhb: a JOSE header


def run(target: str, tmp_path: Path, *args: str, run_id: str = "r") -> tuple[int, dict | None]:
    return run_summary(["--kind", "oidc", "--rp", "target", "--target", target, *args, "--warmup", "0"], tmp_path,
                       run_id)


def no_secret_in(folder: Path, *secrets: str) -> None:
    assert_no_secret_in(folder, secrets, SECRET_MARKERS)


def test_a_pattern_through_the_app_reaches_its_page(app, op, tmp_path, capsys):
    code, summary = run(app.protected(), tmp_path, *ACCOUNTS, "--pattern", "2x5", "--expect", apache_rp.PAGE_TEXT)
    assert code == 0, capsys.readouterr().out + app.log()
    (cell,) = summary["cells"]
    assert cell["summary"]["tests"] == 10 and cell["summary"]["errors"] == 0
    steps = cell["steps"]
    assert steps[rp_walk.RP_AFTER_LOGIN]["requests"] == 10 and steps[rp_walk.RP_CALLBACK]["requests"] == 10
    assert steps[rp_walk.LOGIN_POST]["requests"] == 10
    assert summary["config"]["rp"].startswith("target") and summary["config"]["target"] == app.protected()
    no_secret_in(tmp_path / "r", op.secret, "pw-user00")


def test_returning_users_keep_the_providers_session_and_lose_the_apps(app, tmp_path, capsys):
    code, summary = run(app.protected(), tmp_path, *ACCOUNTS, "--pattern", "2x3", "--reuse-session")
    assert code == 0, capsys.readouterr().out + app.log()
    assert summary["cells"][0]["summary"]["errors"] == 0
    with (tmp_path / "r" / "samples.csv").open() as samples:
        rows = sorted(csv.DictReader(samples), key=lambda row: float(row["start"]))
    sessions: dict[str, list[str]] = {}
    for row in rows:
        sessions.setdefault(row["user"], []).append(row["session"])
    assert sorted(sessions.values()) == [["fresh", "reused", "reused"]] * 2, sessions
    steps = summary["cells"][0]["steps"]
    assert steps[rp_walk.RP_PAGE]["requests"] == 6  # every journey began without the app's session
    assert steps[rp_walk.LOGIN_POST]["requests"] == 2  # the password only at each user's first


def test_the_form_post_response_mode(app, tmp_path, capsys):
    code, summary = run(app.protected("form_post"), tmp_path, *ACCOUNTS, "--pattern", "1x2")
    assert code == 0, capsys.readouterr().out + app.log()
    steps = summary["cells"][0]["steps"]
    assert summary["cells"][0]["summary"]["errors"] == 0
    assert steps[rp_walk.RP_CALLBACK]["method"] == "POST" and steps[rp_walk.RP_AFTER_LOGIN]["requests"] == 2


@pytest.mark.parametrize(("host", "args", "words"), [
    ("refusing", [], ["at step 'RP redirect URI (code)'", "rp refused the code", "its redirect URI answered",
                      "likely fix: the app could not redeem the code", "client secret"]),
    ("open", [], ["no login form found: no redirect to a provider", "--target must be a page the RP protects"]),
    ("unregistered", [], ["at step 'OP authorization'", "provider error: invalid_redirect_uri",
                          "check the app's registration there"]),
    ("app", ["--expect", "Welcome, {user}"], ["page not as expected: page lacks --expect 'Welcome, user000'"]),
    ("app", ["--password-rule", "nope-{user}"], ["at step 'OP login POST'", "bad credentials"]),
])
def test_preflight_failures_point_at_the_app_in_one_line(host, args, words, app, op, tmp_path, capsys):
    target = app.open_page() if host == "open" else app.protected(host)
    code, _summary = run(target, tmp_path, *ACCOUNTS, *args, "--pattern", "1x1")
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, err
    assert op.secret not in err and "code=" not in err


def test_failures_are_kept_without_a_secret(app, op, tmp_path, capsys):
    accounts = tmp_path / "accounts.csv"
    accounts.write_text("user,password\n" + "".join(
        f"user{i:03d},{'wrong-pass' if i % 2 else f'pw-user{i:03d}'}\n" for i in range(4)))
    code, summary = run(app.protected(), tmp_path, "--accounts-csv", str(accounts), "--pattern", "1x4",
                        "--max-error-pct", "60")
    assert code == 0, capsys.readouterr().out
    assert summary["cells"][0]["summary"]["reasons"] == {"bad credentials": 2}
    kept = summary["failures"]["bad credentials"]["examples"]
    assert kept and (tmp_path / "r" / kept[0]).exists()
    no_secret_in(tmp_path / "r", op.secret, "wrong-pass", "pw-user00")


@pytest.mark.parametrize(("args", "message"), [
    (["--client-id", "rp-basic"], "--client-id is the virtual RP's: with --rp target the app at --target holds"),
    (["--grant", "refresh"], "--grant is the virtual RP's"),
    (["--validate-id-token"], "--validate-id-token is the virtual RP's"),
    (["--target", "ftp://app/"], "--target 'ftp://app/' is not an http(s) URL"),
])
def test_options_refused_before_any_request(args, message, tmp_path, capsys):
    target = [] if "--target" in args else ["--target", "http://127.0.0.1:9/protected/"]
    code = main(["run", "--kind", "oidc", "--rp", "target", *target, *ACCOUNTS, *args, "--results", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert not any(tmp_path.iterdir())


def test_an_apps_url_without_rp_target_says_so(app, tmp_path, capsys):
    code = main(["run", "--kind", "oidc", "--target", app.protected(), "--client-id", "rp-apache", *ACCOUNTS,
                 "--pattern", "1x1", "--results", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "discovery error" in err and "add --rp target" in err, err
