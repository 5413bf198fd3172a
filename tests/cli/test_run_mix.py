"""`authbench run --mix`: journeys side by side by weight on the session lab, each with its own figures.

The counts are exact by definition (authbench.mix): a pattern's users split by largest remainder, each doing
RUNS journeys of its own; a rate's slots by smooth weighted round robin.
"""

from __future__ import annotations

import json
from collections import Counter

import test_run

from authbench.report.load import load
from authbench.report.render import markdown
from authbench.results.recorder import read_samples

lab_env, run = test_run.lab_env, test_run.run  # the SAML run tests' fixture and helper


def test_saml_login_and_returning_sso_in_patterns(lab_env, tmp_path, capsys):
    code, out, err = run(["--target", "lab:memcached", "--mix", "login=1,returning-sso=3", "--pattern", "4x3,6x2",
                          "--max-error-pct", "0", "--results", str(tmp_path), "--run-id", "m"], capsys)
    assert code == 0, out + err
    folder = tmp_path / "m"
    document = json.loads((folder / "summary.json").read_text())
    # 4 users: 1 login + 3 returning; 6 users: 1.5/4.5, the tie to the journey named first: 2 + 4
    assert [(c["pattern"], {name: s["tests"] for name, s in c["journeys"].items()}) for c in document["cells"]] == [
        ("4x3", {"login": 3, "returning-sso": 9}), ("6x2", {"login": 4, "returning-sso": 8})]
    assert all(s["errors"] == 0 and s["p99_ms"] for c in document["cells"] for s in c["journeys"].values())
    assert set(document["journey_averages"]["6x2"]) == {"login", "returning-sso"}
    assert [(e["name"], e["kind"], e["reuse_session"]) for e in document["config"]["mix"]] == [
        ("login", "saml", False), ("returning-sso", "saml", True)]
    samples = [s for s in read_samples(folder / "samples.csv") if s.pattern == "4x3"]
    sessions = Counter((s.journey, s.session) for s in samples)
    assert sessions == {("login", ""): 3, ("returning-sso", "fresh"): 3, ("returning-sso", "reused"): 6}
    assert {s.user for s in samples if s.journey == "login"} == {0}  # users split in order: login's first
    checks = {c["title"]: c for c in document["verdicts"]["checks"]}
    assert checks["errors of login"]["journeys"] == 7 and checks["errors of returning-sso"]["passed"] is True
    assert "per journey of the mix" in out and "returning-sso 6x2 #1" in out
    report = markdown(load(folder), [], {})  # the report's text as `authbench report` writes it, without plots
    assert "| · login | 3 | 0 |" in report and "| · returning-sso | 8 | 0 |" in report
    assert "errors of returning-sso" in report


def test_a_rate_split_by_weight(lab_env, tmp_path, capsys):
    code, out, err = run(["--target", "lab:memcached", "--mix", "login=1,returning-sso=5", "--rate", "30/s",
                          "--duration", "1s", "--slo", "p99<60s,errors<50%", "--results", str(tmp_path),
                          "--run-id", "r"], capsys)
    assert code == 0, out + err  # rate held or not (a busy machine), the SLO is met: the split is what is checked
    document = json.loads((tmp_path / "r" / "summary.json").read_text())
    (cell,) = document["cells"]
    assert cell["open"]["planned"] == 30 and cell["open"]["dropped"] == 0
    assert {name: s["tests"] for name, s in cell["journeys"].items()} == {"login": 5, "returning-sso": 25}
    assert "login 30/s #1" in out and "✓ SLO p99<60000ms,errors<50% of returning-sso at 30/s #1" in out
    assert [check["met"] for check in cell["open"]["journey_slo_checks"]["login"]] == [True, True]
    assert {c["journey"] for c in document["verdicts"]["checks"] if c["check"] == "journey-slo"} == {
        "login", "returning-sso"}


def test_saml_logins_mixed_with_ldap_binds_from_a_plan_file_in_workers(lab_env, tmp_path, capsys):
    plan = tmp_path / "plan.toml"
    plan.write_text('target = "lab:memcached"\nmix = "login=1,binds=3"\npattern = "4x5"\n\n'
                    '[journey.binds]\ntarget = "lab:ldap"\nvariant = "bind-new-connection"\n')
    code, out, err = run(["--config", str(plan), "--workers", "2", "--results", str(tmp_path), "--run-id", "x"],
                         capsys)
    assert code == 0, out + err
    document = json.loads((tmp_path / "x" / "summary.json").read_text())
    (cell,) = document["cells"]
    assert {name: (s["tests"], s["errors"]) for name, s in cell["journeys"].items()} == {
        "login": (5, 0), "binds": (15, 0)}
    mix = {e["name"]: e for e in document["config"]["mix"]}
    assert (mix["binds"]["kind"], mix["binds"]["journey"], mix["binds"]["ldap"]["new_connection"]) == (
        "ldap", "ldap-bind", True)
    assert "binds 4x5 #1" in out and "[binds] preflight" in out
    samples = list(read_samples(tmp_path / "x" / "samples.csv"))
    assert len({s.worker for s in samples}) == 2  # the workers got the table as the master has it
    assert Counter(s.journey for s in samples) == {"login": 5, "binds": 15}
