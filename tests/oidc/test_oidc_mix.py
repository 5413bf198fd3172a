"""The issue's OIDC traffic mix against panva's oidc-provider: code-flow logins and refreshes 1:5, in a pattern
and at a rate, each journey with its own figures (docs/running.md, "Mixes")."""

from __future__ import annotations

from test_oidc import ACCOUNTS, BASIC, no_secret_in, run


def test_code_flow_and_refresh_one_to_five(op_env, tmp_path, capsys):
    code, summary = run(op_env, tmp_path, *BASIC, *ACCOUNTS, "--mix", "code-flow=1,refresh=5", "--pattern", "6x3")
    assert code == 0, capsys.readouterr()
    (cell,) = summary["cells"]
    assert {name: (s["tests"], s["errors"]) for name, s in cell["journeys"].items()} == {
        "code-flow": (3, 0), "refresh": (15, 0)}
    assert cell["steps"]["OP token (refresh)"]["requests"] == 15
    assert [(e["variant"], e["kind"]) for e in summary["config"]["mix"]] == [("code-flow", "oidc"), ("refresh", "oidc")]
    code, summary = run(op_env, tmp_path, *BASIC, *ACCOUNTS, "--mix", "code-flow=1,refresh=5", "--rate", "12/s",
                        "--duration", "1s", "--slo", "errors<1%", run_id="rate")
    assert code == 0, capsys.readouterr()
    (cell,) = summary["cells"]
    assert {name: s["tests"] for name, s in cell["journeys"].items()} == {"code-flow": 2, "refresh": 10}
    no_secret_in(tmp_path, op_env.secret, "pw-user00")
