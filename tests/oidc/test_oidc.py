"""The OIDC kind against a provider we did not write (panva's oidc-provider): exact patterns, an arrival rate,
ID-token validation, the preflight's one-line errors, a replayed code, and no secret in the results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from results_kit import assert_no_secret_in, run_summary

from authbench.cli import main
from authbench.journeys.fastbrowser import FastBrowser
from authbench.kinds.oidc import flow as oidc
from authbench.kinds.oidc.idtoken import Validator

ACCOUNTS = ["--accounts-template", "user{000..009}"]  # the lab's rule, authbench's default: pw-{user}
BASIC = ["--client-id", "rp-basic"]


SECRET_MARKERS = ("code_verifier", "access_token", "eyJhb", "client_secret=")  # eyJhb: a JWT's header


def run(op, tmp_path: Path, *args: str, run_id: str = "r") -> tuple[int, dict | None]:
    return run_summary(["--target", op.target, *args], tmp_path, run_id)


def no_secret_in(folder: Path, *secrets: str) -> None:
    assert_no_secret_in(folder, secrets, SECRET_MARKERS)


def test_a_pattern_of_code_flows_all_ok_and_no_secret_kept(op_env, tmp_path, capsys):
    code, summary = run(op_env, tmp_path, *BASIC, *ACCOUNTS, "--pattern", "2x5", "--warmup", "0")
    out = capsys.readouterr().out
    assert code == 0, out
    (cell,) = summary["cells"]
    assert cell["summary"]["tests"] == 10 and cell["summary"]["errors"] == 0
    config = json.dumps(summary["config"])
    assert '"client_auth": "client_secret_basic"' in config and '"client_id": "rp-basic"' in config
    no_secret_in(tmp_path / "r", op_env.secret, "pw-user00")


def test_an_arrival_rate_with_post_auth_validated_id_tokens_and_userinfo(op_env, tmp_path, capsys):
    code, summary = run(op_env, tmp_path, "--client-id", "rp-post", "--client-auth", "client_secret_post", *ACCOUNTS,
                        "--validate-id-token", "--userinfo", "--rate", "5/s", "--duration", "2s", "--warmup", "0")
    assert code == 0, capsys.readouterr().out
    (cell,) = summary["cells"]
    assert cell["open"]["planned"] == 10 and cell["open"]["dropped"] == 0
    assert cell["summary"]["errors"] == 0
    no_secret_in(tmp_path / "r", op_env.secret)


def test_a_public_client(op, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("AUTHBENCH_CLIENT_SECRET", raising=False)
    code, summary = run(op, tmp_path, "--client-id", "rp-public", *ACCOUNTS, "--validate-id-token",
                        "--pattern", "1x3", "--warmup", "0")
    assert code == 0, capsys.readouterr().out
    assert summary["config"]["client_auth"] == "none" and summary["cells"][0]["summary"]["errors"] == 0


def test_failures_are_kept_without_a_secret(op_env, tmp_path, capsys):
    accounts = tmp_path / "accounts.csv"
    accounts.write_text("user,password\n" + "".join(
        f"user{i:03d},{'wrong-pass' if i % 2 else f'pw-user{i:03d}'}\n" for i in range(6)))
    code, summary = run(op_env, tmp_path, *BASIC, "--accounts-csv", str(accounts), "--pattern", "1x6", "--warmup",
                        "0", "--max-error-pct", "60")
    assert code == 0, capsys.readouterr().out
    (cell,) = summary["cells"]
    assert cell["summary"]["reasons"] == {"bad credentials": 3}
    kept = summary["failures"]["bad credentials"]["examples"]
    assert kept and (tmp_path / "r" / kept[0]).exists()
    no_secret_in(tmp_path / "r", op_env.secret, "wrong-pass")


def preflight_error(op_env, tmp_path: Path, capsys: pytest.CaptureFixture, args: list[str]) -> str:
    """A 1x1 run with `args` (`TARGET /suffix` at their end: the provider's issuer + suffix; `SECRET_FILE`: a file
    with a wrong client secret) that must stop in its preflight: one line, exit 2, no secret; that line."""
    target = op_env.target
    if "TARGET" in args:
        at = args.index("TARGET")
        target, args = target + args[at + 1], args[:at]
    if "SECRET_FILE" in args:
        (tmp_path / "secret").write_text("not-the-secret\n")
        args = [a if a != "SECRET_FILE" else str(tmp_path / "secret") for a in args]
    code = main(["run", "--target", target, *BASIC, *ACCOUNTS, *args, "--pattern", "1x1", "--results",
                 str(tmp_path / "results")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "not-the-secret" not in err and op_env.secret not in err
    return err


@pytest.mark.parametrize(("args", "words"), [
    (["--password-rule", "nope-{user}"], ["at step 'OP login POST'", "bad credentials", "likely fix"]),
    (["--client-secret-file", "SECRET_FILE"], ["at step 'OP token'", "token error: invalid_client", "client secret"]),
    (["--redirect-uri", "http://127.0.0.1:9/not-registered"],
     ["at step 'OP authorization'", "provider error: invalid_redirect_uri", "--redirect-uri exactly as registered"]),
    (["--client-id", "rp-unknown"], ["provider error: invalid_client", "likely fix: register the RP"]),
    (["TARGET", "/broken"], ["at step 'OP discovery'", "http status: no discovery document: 500"]),
    (["TARGET", "/partial"], ["discovery error: the discovery document lacks token_endpoint", "oidc+https://ISSUER"]),
    (["TARGET", "/failing"], ["at step 'OP authorization'", "http status: 500 Error at", "check its logs"]),
])
def test_preflight_failures_are_one_line_exit_2(args, words, op_env, tmp_path, capsys):
    err = preflight_error(op_env, tmp_path, capsys, args)
    for word in words:
        assert word in err, err


def test_a_replayed_code_is_invalid_grant(op):
    client = oidc.Client("rp-basic", op.redirect_uri, auth=oidc.BASIC, secret=op.secret)
    with FastBrowser(catch=client.caught) as browser, FastBrowser(accept="application/json") as rp:
        provider = oidc.discover(rp, op.issuer)
        flow = oidc.Flow()
        oidc.authorize(browser, flow, provider, client, "user003", "pw-user003", oidc_fields())
        tokens = oidc.exchange(rp, flow, provider, client)
        claims = Validator(provider, client.client_id).validate(rp, tokens.id_token, flow.nonce)
        assert claims["sub"] == "user003"
        with pytest.raises(oidc.FlowFailed) as replayed:
            oidc.exchange(rp, flow, provider, client)
        assert replayed.value.reason == oidc.TOKEN_ERROR and replayed.value.detail.startswith("invalid_grant")
        with pytest.raises(oidc.FlowFailed) as other_nonce:
            Validator(provider, client.client_id).validate(rp, tokens.id_token, "another nonce")
        assert other_nonce.value.reason == oidc.ID_TOKEN_INVALID and "nonce" in other_nonce.value.detail
        with pytest.raises(oidc.FlowFailed) as other_audience:
            Validator(provider, "rp-post").validate(rp, tokens.id_token, flow.nonce)
        assert other_audience.value.reason == oidc.ID_TOKEN_INVALID and "Audience" in other_audience.value.detail


def test_a_token_endpoint_that_answers_500_is_http_status(op):
    """The RP's side of a provider that fails: the token request's 500 is `http status`, not a token error."""
    client = oidc.Client("rp-basic", op.redirect_uri, auth=oidc.BASIC, secret=op.secret)
    with FastBrowser(catch=client.caught) as browser, FastBrowser(accept="application/json") as rp:
        provider = oidc.discover(rp, op.issuer)
        flow = oidc.Flow()
        oidc.authorize(browser, flow, provider, client, "user004", "pw-user004", oidc_fields())
        failing = oidc.Provider(provider.issuer, provider.authorization_endpoint, op.issuer + "/broken/token")
        with pytest.raises(oidc.FlowFailed) as failed:
            oidc.exchange(rp, flow, failing, client)
        assert failed.value.reason == oidc.HTTP_STATUS and "500" in failed.value.detail


def oidc_fields():
    from authbench.journeys.settings import login_fields

    return login_fields()


@pytest.mark.parametrize(("args", "message"), [
    (["--expect", "x"], "--expect is for a real RP: a virtual RP's journey ends with tokens"),
    (["--client-id", ""], "an OIDC target needs --client-id"),
    (["--no-token-exchange", "--userinfo"], "--no-token-exchange ends the journey with the code: no tokens"),
    (["--client-auth", "client_secret_post"], "--client-auth client_secret_post needs the client secret"),
    (["--scope", "profile"], "--scope 'profile' lacks openid"),
    (["--redirect-uri", "urn:x"], "--redirect-uri 'urn:x' is not an http(s) URL"),
])
def test_options_refused_before_any_request(args, message, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("AUTHBENCH_CLIENT_SECRET", raising=False)
    code = main(["run", "--target", "oidc+http://127.0.0.1:9", *BASIC, *ACCOUNTS, *args, "--results", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert not any(tmp_path.iterdir())


def test_kind_oidc_takes_the_issuer_itself(op_env, tmp_path, capsys):
    code = main(["run", "--kind", "oidc", "--target", op_env.issuer, *BASIC, *ACCOUNTS, "--pattern", "1x2",
                 "--warmup", "0", "--new-connection", "--results", str(tmp_path), "--run-id", "k"])
    assert code == 0, capsys.readouterr().out
    assert json.loads((tmp_path / "k" / "summary.json").read_text())["config"]["target"] == op_env.issuer


def test_returning_users_reuse_the_providers_session(op_env, tmp_path, capsys):
    """--reuse-session: each user's first journey asks for the password (fresh), the next ones are SSO (reused)."""
    code, summary = run(op_env, tmp_path, *BASIC, *ACCOUNTS, "--reuse-session", "--pattern", "2x3", "--warmup", "0")
    assert code == 0, capsys.readouterr().out
    assert summary["config"]["reuse_session"] is True
    rows = (tmp_path / "r" / "samples.csv").read_text().splitlines()
    header = rows[0].split(",")
    sessions = sorted(row.split(",")[header.index("session")] for row in rows[1:])
    assert sessions == ["fresh", "fresh", "reused", "reused", "reused", "reused"], sessions
    no_secret_in(tmp_path / "r", op_env.secret)


def test_check_cluster_on_an_op_tests_1_to_3(op_env, capsys):
    """check-cluster's Tests 1-3 with the code flow as the login; both "nodes" are the one provider, so all pass."""
    code = main(["check-cluster", "--target", op_env.target, "--lb", op_env.issuer, "--node", op_env.issuer,
                 "--node", op_env.issuer, *BASIC, *ACCOUNTS])
    out = capsys.readouterr().out
    assert code == 0, out
    assert [line.split()[:3] for line in out.splitlines() if line.startswith("Test ")] == [
        ["Test", "1", "○"], ["Test", "2", "○"], ["Test", "3", "○"]], out
    assert "new SP session via B: ok; no password asked" in out and op_env.secret not in out


def test_check_cluster_on_an_op_that_logs_nobody_in_could_not_test(op_env, capsys):
    code = main(["check-cluster", "--target", op_env.target, "--lb", op_env.issuer, "--node", op_env.issuer,
                 "--client-id", "rp-basic", "--accounts-template", "user{000..001}", "--password-rule", "no-{user}"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "could not test: no node logs user000 in" in err, err
    assert "bad credentials" in err


def test_a_refused_code_in_the_preflight_points_at_clustering_not_the_secret():
    from authbench.kinds.oidc.user import likely_fix

    assert "needs clustering" in likely_fix(oidc.FlowFailed(oidc.TOKEN_ERROR, "invalid_grant (Code not valid)"))
    assert "client secret" in likely_fix(oidc.FlowFailed(oidc.TOKEN_ERROR, "invalid_client (bad)"))


def test_no_token_exchange_ends_each_journey_with_the_code(op_env, tmp_path, capsys):
    code, summary = run(op_env, tmp_path, *BASIC, *ACCOUNTS, "--no-token-exchange", "--pattern", "1x3", "--warmup", "0")
    out = capsys.readouterr().out
    assert code == 0, out
    assert summary["config"]["token_exchange"] is False and summary["cells"][0]["summary"]["errors"] == 0
    assert "OP token" not in (tmp_path / "r" / "summary.json").read_text()
