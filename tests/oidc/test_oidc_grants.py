"""The OIDC kind's other journeys (--grant) against panva's oidc-provider: refresh with rotation, client
credentials, introspection, RP-initiated logout; their preflight errors in one line; no secret in the results."""

from __future__ import annotations

import pytest
from test_oidc import ACCOUNTS, BASIC, no_secret_in, preflight_error, run

from authbench.cli import main
from authbench.journeys.fastbrowser import FastBrowser
from authbench.journeys.settings import login_fields
from authbench.kinds.oidc import flow as oidc
from authbench.kinds.oidc import grant_flows
from authbench.kinds.oidc.grants import GRANTS, VARIANTS

PLAN = ["--pattern", "2x3", "--warmup", "0"]


@pytest.mark.parametrize(("grant", "args", "steps"), [
    ("refresh", [], ["OP token (refresh)", "OP token"]),
    ("client-credentials", [], ["OP token (client credentials)"]),
    ("introspection", ["--client-id", "rp-post", "--client-auth", "client_secret_post"], ["OP introspection"]),
    ("logout", ["--validate-id-token"], ["OP end session", "OP logout confirm"]),
    ("logout", ["--post-logout-redirect-uri", "POST_LOGOUT"], ["OP end session", "OP logout confirm"]),
])
def test_each_grant_runs_a_pattern_with_no_error_and_keeps_no_secret(grant, args, steps, op_env, tmp_path, capsys):
    args = [op_env.post_logout_redirect_uri if a == "POST_LOGOUT" else a for a in args]
    code, summary = run(op_env, tmp_path, *BASIC, *ACCOUNTS, "--grant", grant, *args, *PLAN)
    assert code == 0, capsys.readouterr()
    (cell,) = summary["cells"]
    assert cell["summary"]["tests"] == 6 and cell["summary"]["errors"] == 0, cell["summary"]
    for step in steps:
        assert step in cell["steps"], sorted(cell["steps"])
    assert summary["config"]["grant"] == grant
    no_secret_in(tmp_path / "r", op_env.secret, "pw-user00")


def test_refresh_logs_in_once_per_user_and_a_rotated_token_replaces_the_old(op, tmp_path, capsys, monkeypatch):
    """A public client's refresh token is rotated at every use (oidc-provider revokes the whole grant when an old
    one comes back): 8 refreshes by 2 users pass only if each keeps the newest."""
    monkeypatch.delenv("AUTHBENCH_CLIENT_SECRET", raising=False)
    code, summary = run(op, tmp_path, "--client-id", "rp-public", *ACCOUNTS, "--grant", "refresh", "--pattern",
                        "2x4", "--warmup", "0")
    assert code == 0, capsys.readouterr()
    (cell,) = summary["cells"]
    assert cell["summary"]["errors"] == 0
    assert cell["steps"]["OP token"]["requests"] == 2 and cell["steps"]["OP token (refresh)"]["requests"] == 8


def test_a_rotated_refresh_token_is_kept(op):
    client = oidc.Client("rp-public", op.redirect_uri, auth=oidc.NONE)
    with FastBrowser(catch=client.caught) as browser, FastBrowser(accept="application/json") as rp:
        provider, _ = grant_flows.discover(rp, op.issuer)
        flow = oidc.Flow()
        oidc.authorize(browser, flow, provider, client, "user004", "pw-user004", login_fields())
        tokens = oidc.exchange(rp, flow, provider, client)
        first = tokens.refresh_token
        grant_flows.refresh(rp, provider, client, tokens)
        assert tokens.refresh_token and tokens.refresh_token != first
        stale = oidc.Tokens("", refresh_token=first)
        with pytest.raises(oidc.FlowFailed) as reused:
            grant_flows.refresh(rp, provider, client, stale)
        assert reused.value.reason == grant_flows.REFRESH_ERROR and reused.value.detail.startswith("invalid_grant")


@pytest.mark.parametrize(("args", "words"), [
    (["--grant", "logout", "TARGET", "/bare"],
     ["--grant logout:", "discovery error: the discovery document lacks end_session_endpoint, which --grant logout "
      "needs", "turn the endpoint on at the provider"]),
    (["--grant", "introspection", "TARGET", "/bare"], ["lacks introspection_endpoint"]),
    (["--grant", "refresh", "TARGET", "/bare"], ["grant_types_supported lacks refresh_token"]),
    (["--grant", "client-credentials", "--client-id", "rp-unknown"],
     ["client rp-unknown failed at step 'OP token (client credentials)'", "token error: invalid_client"]),
    (["--grant", "refresh", "--client-secret-file", "SECRET_FILE"],
     ["login as user000 failed at step 'OP token'", "token error: invalid_client"]),
    (["--grant", "logout", "--post-logout-redirect-uri", "http://127.0.0.1:9/not-registered"],
     ["at step 'OP end session'", "logout error", "post-logout-redirect-uri"]),
])
def test_grant_preflight_failures_are_one_line_exit_2(args, words, op_env, tmp_path, capsys):
    err = preflight_error(op_env, tmp_path, capsys, args)
    for word in words:
        assert word in err, err


@pytest.mark.parametrize(("args", "message"), [
    (["--grant", "client-credentials", "--client-id", "rp-public"], "--grant client-credentials needs a confidential "
                                                                     "client"),
    (["--grant", "introspection", "--client-auth", "none"], "--grant introspection needs a confidential client"),
    (["--post-logout-redirect-uri", "http://127.0.0.1:9/x"], "--post-logout-redirect-uri is for --grant logout"),
    (["--grant", "logout", "--post-logout-redirect-uri", "urn:x"], "--post-logout-redirect-uri 'urn:x' is not"),
    (["--grant", "refresh", "--scope", "profile"], "--scope 'profile' lacks openid"),
])
def test_grant_options_refused_before_any_request(args, message, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("AUTHBENCH_CLIENT_SECRET", raising=False)
    code = main(["run", "--target", "oidc+http://127.0.0.1:9", *BASIC, *ACCOUNTS, *args, "--results", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert not any(tmp_path.iterdir())


def test_client_credentials_needs_no_accounts_and_each_grant_is_a_variant(op_env, tmp_path, capsys):
    code, summary = run(op_env, tmp_path, *BASIC, "--grant", "client-credentials", "--rate", "5/s", "--duration", "1s",
                        "--warmup", "0")
    assert code == 0, capsys.readouterr()
    assert summary["cells"][0]["summary"]["errors"] == 0
    assert summary["config"]["accounts"]["type"] == "none: the client's own token"
    assert list(VARIANTS) == list(GRANTS) and VARIANTS["refresh"] == {"grant": "refresh"}


def test_failed_grant_journeys_are_kept_without_a_secret(op_env, tmp_path, capsys):
    """Users whose login fails keep failing (a refresh user keeps its account); their evidence keeps the login page
    with the password, the flow's and the tokens' secrets taken out."""
    accounts = tmp_path / "accounts.csv"
    accounts.write_text("user,password\n" + "".join(
        f"user{i:03d},{'wrong-pass' if i % 2 else f'pw-user{i:03d}'}\n" for i in range(4)))
    code, summary = run(op_env, tmp_path, *BASIC, "--grant", "refresh", "--accounts-csv", str(accounts),
                        "--pattern", "2x2", "--warmup", "0", "--max-error-pct", "60")
    assert code == 0, capsys.readouterr()
    (cell,) = summary["cells"]
    assert cell["summary"]["reasons"] == {"bad credentials": 2}
    assert (tmp_path / "r" / summary["failures"]["bad credentials"]["examples"][0]).exists()
    no_secret_in(tmp_path / "r", op_env.secret, "wrong-pass", "pw-user00")
