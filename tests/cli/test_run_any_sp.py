"""`authbench run` through an SP that is not ours (pysaml2's): the preflight trail, failure evidence, no secrets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from authbench.cli import main
from authbench.results.recorder import read_samples

from pysaml2_sp import XMLSEC1, Pysaml2Server, Pysaml2SP

pytestmark = pytest.mark.skipif(not Path(XMLSEC1).exists(), reason=f"{XMLSEC1} is missing (make setup)")
BACKEND = "stateless"
WRONG = "Wr0ng-Passw0rd"  # every third account's: a known secret to look for in everything written


@pytest.fixture
def sp(lab, tmp_path):
    from authbench.journeys.fastbrowser import FastBrowser

    with FastBrowser(verify=str(lab.ca_cert)) as browser:  # the IdP's metadata, as an SP's admin fetches it
        (tmp_path / "idp.xml").write_text(browser.get(lab.lb_url(BACKEND) + "/idp/shibboleth").text)
    with Pysaml2Server(Pysaml2SP(tmp_path / "idp.xml"), lab.metadata_dir) as server:
        yield server


def accounts(tmp_path: Path) -> Path:
    rows = ["user,password"] + [f"user{i:03d},{WRONG if i % 3 == 2 else f'pw-user{i:03d}'}" for i in range(9)]
    path = tmp_path / "accounts.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def run(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(["run", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_run_through_pysaml2_sp_keeps_evidence_and_no_secret(lab, sp, tmp_path, capsys):
    code, out, err = run(["--target", sp.protected_url, "--ca-bundle", str(lab.ca_cert), "--accounts-csv",
                          str(accounts(tmp_path)), "--pattern", "3x6", "--results", str(tmp_path), "--run-id", "r"],
                         capsys)
    assert code == 0, err
    # The preflight: one login, hop by hop, before any load.
    assert "preflight: one login as user000" in out and "verdict: logged in" in out
    assert "[SP ACS (SAMLResponse)]" in out and "/saml/acs" in out and "'pysaml2 SP'" in out
    run_dir = tmp_path / "r"
    assert "[IdP login POST]" in (run_dir / "preflight.txt").read_text()

    samples = list(read_samples(run_dir / "samples.csv"))
    failed = [s for s in samples if s.outcome == "error"]
    assert len(samples) == 18 and len(failed) == 6 and {s.reason for s in failed} == {"bad credentials"}
    assert all(s.detail.startswith("IdP login form: login form shown again: 200 ") for s in failed)
    assert all(not s.detail for s in samples if s.outcome == "ok")

    document = json.loads((run_dir / "summary.json").read_text())
    assert document["failures"]["bad credentials"]["journeys"] == 6
    examples = document["failures"]["bad credentials"]["examples"]
    assert examples == [f"failures/bad-credentials-{n}.txt" for n in (1, 2, 3)]
    example = (run_dir / "failures" / "bad-credentials-1.txt").read_text()
    assert "[IdP login POST]" in example and "last page: bad-credentials-1.html" in example
    assert "j_password" in (run_dir / "failures" / "bad-credentials-1.html").read_text()
    assert "failures:" in out and "bad credentials: 6 measured — e.g. " in out

    # No password, SAMLResponse or session cookie in anything written or printed.
    written = "".join(p.read_text(errors="replace") for p in run_dir.rglob("*") if p.is_file()) + out + err
    secrets = [WRONG, "pw-user0", *sp.app.sessions, *sp.app.responses]
    assert len(sp.app.responses) >= 13 and len(sp.app.sessions) >= 13
    assert not [s for s in secrets if s in written]

    # The report names the reason and where its examples are.
    assert main(["report", str(run_dir)]) == 0
    report = (run_dir / "report.md").read_text()
    assert "## Failures" in report
    assert f"| {sp.protected_url} | 3x6 | bad credentials | 6 | failures/bad-credentials-1.txt |" in report


def test_expect_failing_in_the_preflight_is_one_line_with_the_fix(lab, sp, tmp_path, capsys):
    code, out, err = run(["--target", sp.protected_url, "--ca-bundle", str(lab.ca_cert), "--accounts-csv",
                          str(accounts(tmp_path)), "--pattern", "1x1", "--expect", "Welcome, {user}",
                          "--results", str(tmp_path), "--run-id", "e"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "failed at step 'SP protected page (after login)'" in err and "page lacks --expect 'Welcome, user000'" in err
    assert "likely fix: the page after login lacks what --expect" in err and "preflight.txt" in err
    assert "verdict: failed: page not as expected" in (tmp_path / "e" / "preflight.txt").read_text()
    assert "Signed in: <b>user000</b>" in (tmp_path / "e" / "preflight-page.html").read_text()
    assert not (tmp_path / "e" / "samples.csv").exists()  # nothing was loaded


EXAMPLE = Path(__file__).resolve().parents[2] / "locustfiles" / "sso_then_page.py"


def test_the_docs_example_journey_through_pysaml2_sp(lab, sp, tmp_path, capsys):
    """docs/custom-journeys.md's example, as written, on an SP we did not write: SSO then the protected page."""
    code, out, err = run(["-f", str(EXAMPLE), "--target", sp.protected_url, "--ca-bundle", str(lab.ca_cert),
                          "--accounts-csv", str(accounts(tmp_path)), "--pattern", "3x6", "--results", str(tmp_path),
                          "--run-id", "own"], capsys)
    assert code == 0, err
    document = json.loads((tmp_path / "own" / "summary.json").read_text())
    (cell,) = document["cells"]
    assert cell["summary"]["tests"] == 18 and cell["summary"]["reasons"] == {"bad credentials": 6}
    assert cell["steps"]["SP protected page (second call)"]["requests"] == 12  # after each of the 12 logins
    assert document["config"]["journey"] == "custom: SSOThenPage"


def test_an_own_journey_fails_with_its_own_reason(lab, sp, tmp_path, capsys):
    """The example's own reason: here a variant forgets the SP's session before the second call, so the SP
    sends the user back to the IdP, which is not the SP's page."""
    journey = tmp_path / "forgetful.py"
    journey.write_text(EXAMPLE.read_text() + '''

class Forgetful(SSOThenPage):
    def still_logged_in(self, page):
        return False
''')
    common = ["--target", sp.protected_url, "--ca-bundle", str(lab.ca_cert), "--accounts-template", "user{000..009}",
              "--pattern", "1x1", "--results", str(tmp_path)]
    code, out, err = run(["-f", str(journey), "--user-class", "SSOThenPage", *common], capsys)
    assert code == 0, err  # SSOThenPage, chosen among two
    code, out, err = run(["-f", str(journey), "--user-class", "Forgetful", *common], capsys)
    assert code == 2 and "protected page refused after SSO at step 'SP protected page (second call)'" in err, err
    code, out, err = run(["-f", str(journey), *common], capsys)
    assert code == 2 and "several journeys (Forgetful, SSOThenPage); choose one with --user-class" in err
