"""Bad input and setup faults, one table: what was given, the exit status, what the one line says.

Each row is a case an operator met (issue 13): nothing is measured, nothing half-written is left, no
traceback. Placeholders in braces are filled from the session lab and a scratch folder (see `scene`).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
import test_run

from authbench.cli import main
from authbench_lab import slapd
from authbench_lab.config import LDAP_IDP_DN, LDAP_PEOPLE

lab_env = test_run.lab_env  # the SAML run tests' fixture: AUTHBENCH_LAB_DIR is the session lab
URL = "https://127.0.0.1:9/secure/"  # never contacted: every row fails before the first request
RUN = ["run", "--target", URL, "--account", "u", "--results", "{tmp}/res"]
SEARCH = ["run", "--target", "lab:ldap", "--search-as", LDAP_IDP_DN, "--search-password-file", "{idp_pw}",
          "--results", "{tmp}/res"]
COMPARE = ["compare", "--lab-dir", "{lab}", "--results", "{tmp}/res", "--dry-run"]
CHECK = ["check-cluster", "--account", "user001", "--lb", "{lb}", "--node", "{node}"]

TABLE = [
    # -- a results folder is written by one run, once
    ([*RUN, "--run-id", "taken"], 2, "res/taken exists already (written by an earlier run); give another --run-id"),
    ([*RUN, "--run-id", "../../etc"], 2, "--run-id '../../etc': use letters, digits"),
    ([*RUN, "--resume"], 2, "--resume needs --run-id"),
    ([*RUN, "--resume", "--run-id", "never"], 2, "there is nothing to resume"),
    ([*RUN, "--resume", "--run-id", "done", "--pattern", "2x5"], 2, "resume with the same --pattern"),
    ([*COMPARE, "--campaign-id", "taken"], 2, "res/taken exists already"),
    ([*COMPARE, "--campaign-id", "../x"], 2, "--campaign-id '../x': use letters, digits"),
    (["compare", "--target", "../../../../x=" + URL, "--dry-run"], 2, "--target name '../../../../x': use letters"),
    (["compare", "--resume", "{tmp}/notcampaign"], 2, "campaign.json is not a campaign's (missing 'config')"),
    (["compare", "--resume", "{tmp}/brokenjson"], 2, "campaign.json is not a campaign's (cannot read"),
    # -- patterns and durations
    ([*RUN, "--pattern", "2x400,2x400"], 2, "pattern 2x400 is given more than once"),
    ([*RUN, "--pattern", "1x1,,1x1"], 2, "pattern 1x1 is given more than once"),
    ([*COMPARE, "--pattern", "2x4,3x4,2x4"], 2, "pattern 2x4 is given more than once"),
    ([*RUN, "--pattern", "\uff12x10"], 2, "is not USERSxRUNS"),  # a full-width 2
    ([*RUN, "--warmup", "99999999999h"], 2, "longer than a week"),
    ([*RUN, "--cell-time-limit", "0"], 2, "--cell-time-limit must be more than 0"),
    ([*RUN, "--warmup", "2m", "--cell-time-limit", "1m"], 2, "warm-up 120 s is longer than the cell time limit"),
    ([*COMPARE, "--cell-time-limit", "0"], 2, "--cell-time-limit must be more than 0"),
    ([*RUN, "--pace", "168h"], 2, "--pace 168h: 604800 s is longer than the cell time limit 3600 s"),
    ([*COMPARE, "--pace", "2m", "--cell-time-limit", "1m"], 2, "--pace 2m: 120 s is longer than the cell time"),
    # -- ports, before any request
    (["run", "--target", "https://127.0.0.1:99999/secure/", "--account", "u"], 2, "its port is not 1..65535"),
    (["run", "--target", "https://127.0.0.1:-1/secure/", "--account", "u"], 2, "its port is not 1..65535"),
    (["run", "--target", "ldap://127.0.0.1:70000", "--bind-dn", "uid={user}"], 2, "its port is not 1..65535"),
    ([*RUN, "--metrics-port", "80000"], 2, "--metrics-port 80000 is not a port"),
    ([*RUN, "--master", "--master-bind-port", "70000"], 2, "--master-bind-port 70000 is not a port"),
    ([*COMPARE, "--base-port", "0"], 2, "--base-port 0 is not a port"),
    # -- files and empty values
    ([*RUN, "--password-file", "{tmp}/empty.pw"], 2, "is empty: an empty password logs nobody in"),
    ([*COMPARE, "--backends", ""], 2, "unknown backend ''"),
    (["lab", "up", "--run-dir", "{tmp}/afile"], 2, "is a file, not a folder"),
    (["lab", "up", "--run-dir", "{tmp}/kc", "--keycloak-design", "owners1"], 2,
     "--keycloak-design owners1 needs --with keycloak"),
    ([*COMPARE, "--lab-dir", "{tmp}/afile"], 2, "is a file, not a folder"),
    (["sp-metadata", "--entity-id", ""], 2, "--entity-id '': give a URI"),
    (["sp-metadata", "--acs", "javascript:alert(1)"], 2, "--acs 'javascript:alert(1)' is not an http(s) URL"),
    # -- preflights do what the run will do
    ([*SEARCH, "--search-base", "ou=nowhere,dc=example,dc=org"], 2, "search-then-bind for account 'user000' "
     "failed: noSuchObject (32)"),
    ([*SEARCH, "--search-base", LDAP_PEOPLE, "--search-filter", "(uid={user}"], 2, "failed: filterError"),
    ([*CHECK, "--target", "{hang}"], 2, "could not test: --target http://127.0.0.1:"),
    ([*CHECK, "--target", "{sp}"], 2, "could not test: --target {sp}: TLS certificate not accepted"),
    (["check-cluster", "--target", "lab:local", "--node", "{node}"], 2, "--lb and --node are for URL targets"),
    ([*CHECK, "--target", "{sp}", "--ca-bundle", "{ca}", "--password-file", "{tmp}/wrong.pw"], 2,
     "could not test: no node logs user001 in through --target {sp} (bad credentials"),
    # -- the fault review's (issue 25, items 8 to 10): refused in one line, nothing left behind
    ([*RUN, "--rate", "10/s", "--duration", "1s", "--slo", "errors<0%"], 2, "the error limit must be more than 0%"),
    ([*RUN, "--rate", "10/s", "--duration", "1s", "--slo", "errors<150%"], 2, "and at most 100%"),
    ([*RUN, "--expect", ""], 2, "--expect '' matches every page"),
    (["run", "--target", URL, "--accounts-csv", "/dev/zero", "--results", "{tmp}/res"], 2,
     "accounts file '/dev/zero' is longer than 64 million characters"),
    (["run", "--target", "http://[::1:99/", "--account", "u"], 2, "--target 'http://[::1:99/' is not a URL"),
    (["lab", "up", "--lab-dir", "/proc/authbench-lab"], 2, "cannot use /proc/authbench-lab"),
    (["privacyidea-bench", "--users", "0", "--lab-dir", "{lab}", "--results", "{tmp}/res"], 2,
     "--users 0: give 1 or more"),
    ([*RUN, "--metrics-port", "{busy_port}"], 2, "cannot serve /metrics on 127.0.0.1:{busy_port}"),
    # -- traffic mixes (issue 28 part 3): names, weights, what a kind offers, enough users
    ([*RUN, "--mix", "login=20,bogus=80"], 2, "SAML SSO offers no journey 'bogus' for --mix (its variants: login, "
     "returning-sso); name one of them, or a [journey.NAME] table"),
    ([*RUN, "--mix", "login=x,returning-sso=1"], 2, "--mix weight of 'login' is 'x'; give a whole number 0..10000"),
    ([*RUN, "--mix", "login=-1"], 2, "--mix weight of 'login' is '-1'; give a whole number"),
    ([*RUN, "--mix", "login"], 2, "--mix entry 'login' is not NAME=WEIGHT; give NAME=WEIGHT[,NAME=WEIGHT…]"),
    ([*RUN, "--mix", "login=0,returning-sso=0"], 2, "--mix weights add up to 0; give at least one journey a weight"),
    ([*RUN, "--mix", "login=1,login=2"], 2, "--mix names 'login' twice"),
    (["run", "--target", "lab:ldap", "--mix", "bind=1,returning-sso=1"], 2,
     "LDAP binds offers no journey 'returning-sso' for --mix (its variants: bind, bind-new-connection)"),
    ([*RUN, "--mix", "login=1,b=1", "--config", "{tmp}/ldap-sso.toml"], 2,
     "LDAP binds offers no journey 'returning-sso' for --mix"),
    ([*RUN, "--mix", "login=1", "--config", "{tmp}/ldap-sso.toml"], 2,
     "the plan file's [journey.b] is not in --mix login=1; add b=WEIGHT or remove the table"),
    ([*RUN, "--mix", "login=1,returning-sso=9", "--pattern", "4x2"], 2, "pattern 4x2 leaves login of --mix without "
     "a user (users are split by weight); give more users (10 always do)"),
    ([*RUN, "--mix", "login=1,returning-sso=1", "--reuse-session"], 2,
     "--reuse-session contradicts the journey 'login' of --mix"),
]


@pytest.fixture(scope="module")
def hanging_url():
    """A server that accepts connections (the kernel does) and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        yield f"http://127.0.0.1:{server.getsockname()[1]}/secure/"


@pytest.fixture
def scene(lab_env, tmp_path: Path, monkeypatch, hanging_url) -> dict[str, str]:
    """The files the rows refer to, and the values of their placeholders."""
    monkeypatch.setenv("AUTHBENCH_PASSWORD", "pw-user001")
    (tmp_path / "res" / "taken").mkdir(parents=True)
    done = tmp_path / "res" / "done"
    done.mkdir()
    (done / "summary.json").write_text(json.dumps({"plan": {"patterns": ["1x1"], "warmup_s": 0.0, "repeat": 1},
                                                   "config": {"target": URL}, "cells": []}))
    (tmp_path / "empty.pw").write_text("")
    (tmp_path / "afile").write_text("a file where a folder should be")
    for name, text in (("notcampaign", "{}"), ("brokenjson", "{not json")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "campaign.json").write_text(text)
    idp_pw = tmp_path / "idp.pw"
    idp_pw.write_text(slapd.paths(lab_env).idp_password.read_text())
    (tmp_path / "wrong.pw").write_text("not-the-password")
    (tmp_path / "ldap-sso.toml").write_text('[journey.b]\ntarget = "lab:ldap"\nvariant = "returning-sso"\n')
    return {"tmp": str(tmp_path), "lab": str(lab_env.run_dir), "idp_pw": str(idp_pw), "hang": hanging_url,
            "busy_port": hanging_url.split(":")[2].split("/")[0], "ca": str(lab_env.ca_cert),
            "sp": lab_env.sp_url("local") + "/secure/", "lb": lab_env.lb_url("local"),
            "node": lab_env.node_url("local", "a")}


@pytest.mark.parametrize(("argv", "exit_code", "message"), TABLE, ids=[" ".join(row[0][:4]) for row in TABLE])
def test_bad_input(scene, capsys, argv, exit_code, message):
    argv = [part.format(**scene) if "{" in part and "{user}" not in part else part for part in argv]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own errors (made one line in another change)
        code = exc.code
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line and not line.startswith(("usage:", " "))]
    assert code == exit_code and len(lines) == 1 and message.format(**scene) in lines[0], err
    assert "Traceback" not in out + err
    assert not list(Path(scene["tmp"], "res").glob("*/samples.csv"))  # nothing measured, nothing written
    assert sorted(p.name for p in Path(scene["tmp"], "res").iterdir()) == ["done", "taken"]
