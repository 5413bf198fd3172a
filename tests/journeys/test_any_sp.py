"""The walk's success rule on an SP that is not ours: pysaml2's, in front of the lab's IdP clusters.

Nothing here prints the lab SP's marker, so these tests fail if the walk ever depends on it again.
"""

from __future__ import annotations

import ssl
import urllib.request
from pathlib import Path

import pytest

from authbench.journeys import saml
from authbench.journeys.fastbrowser import FastBrowser
from authbench.journeys.success import DEFAULT_RULE, SuccessRule
from authbench.journeys.trail import Trail
from authbench_lab.config import LabConfig, password_for, username

from pysaml2_sp import LANDING, XMLSEC1, Pysaml2Server, Pysaml2SP

pytestmark = pytest.mark.skipif(not Path(XMLSEC1).exists(), reason=f"{XMLSEC1} is missing (make setup)")
BACKEND = "memcached"


@pytest.fixture(scope="module")
def idp_metadata(lab: LabConfig, tmp_path_factory) -> Path:
    """The lab cluster's IdP metadata, fetched as an SP's administrator would."""
    context = ssl.create_default_context(cafile=str(lab.ca_cert))
    with urllib.request.urlopen(lab.lb_url(BACKEND) + "/idp/shibboleth", context=context, timeout=10) as answer:
        document = answer.read()
    path = tmp_path_factory.mktemp("pysaml2") / "idp-metadata.xml"
    path.write_bytes(document)
    return path


def serve(lab: LabConfig, idp_metadata: Path, **options) -> Pysaml2Server:
    return Pysaml2Server(Pysaml2SP(idp_metadata, **options), lab.metadata_dir)


def login(lab: LabConfig, url: str, index: int = 1, password: str | None = None,
          rule: SuccessRule = DEFAULT_RULE, trail: Trail | None = None) -> saml.SSOOutcome:
    user = username(index, lab.users)
    with FastBrowser(verify=str(lab.ca_cert), on_request=trail.record if trail else None) as browser:
        return saml.sso_login(browser, url, user, password or password_for(user), rule=rule)


def test_pysaml2_sp_login_succeeds_by_the_default_rule(lab, idp_metadata):
    trail = Trail()
    with serve(lab, idp_metadata) as sp:
        outcome = login(lab, sp.protected_url, trail=trail)
    assert outcome.ok, outcome
    page = outcome.page
    assert page is not None and page.url == sp.protected_url and "Signed in: <b>user001</b>" in page.text
    assert 'id="remote-user"' not in page.text  # the lab SP's marker plays no part
    steps = [hop[0] for hop in trail.hops]
    assert steps[0] == saml.SP_PAGE and saml.IDP_SSO in steps and saml.LOGIN_POST in steps
    assert steps[-2:] == [saml.ACS, saml.SP_AFTER_LOGIN]
    lines = trail.lines(outcome.pages)
    assert "SAMLRequest" not in "\n".join(lines) and lines[-1].endswith("'pysaml2 SP'")


def test_expect_demands_what_the_page_shows(lab, idp_metadata):
    with serve(lab, idp_metadata) as sp:
        shown = login(lab, sp.protected_url, index=2, rule=SuccessRule(text="Signed in: <b>{user}</b>"))
        missing = login(lab, sp.protected_url, index=3, rule=SuccessRule(text="Welcome, {user}"))
        wrong_status = login(lab, sp.protected_url, index=4, rule=SuccessRule(status=201))
        regex = login(lab, sp.protected_url, index=5, rule=SuccessRule(regex=r"<b>{user}</b>"))
    assert shown.ok and regex.ok
    assert not missing.ok and missing.reason == saml.UNEXPECTED_PAGE
    assert missing.detail.startswith("page lacks --expect 'Welcome, user003': 200 pysaml2 SP at http://127.0.0.1:")
    assert not wrong_status.ok and wrong_status.reason == saml.UNEXPECTED_PAGE and "--expect-status 201" in \
        wrong_status.detail


def test_a_wrong_password_is_not_mistaken_for_success(lab, idp_metadata):
    with serve(lab, idp_metadata) as sp:
        outcome = login(lab, sp.protected_url, index=6, password="not-the-password")
    assert not outcome.ok and outcome.reason == saml.BAD_CREDENTIALS and outcome.password_asked


def test_sp_showing_only_ok(lab, idp_metadata):
    with serve(lab, idp_metadata, mode="ok") as sp:
        outcome = login(lab, sp.protected_url, index=7)
        demanding = login(lab, sp.protected_url, index=8, rule=SuccessRule(text="{user}"))
    assert outcome.ok and outcome.page is not None and "<body>OK</body>" in outcome.page.text
    assert not demanding.ok and demanding.reason == saml.UNEXPECTED_PAGE


def test_sp_sending_users_to_a_landing_page_after_the_acs(lab, idp_metadata):
    with serve(lab, idp_metadata, mode="landing") as sp:
        outcome = login(lab, sp.protected_url, index=9)
    assert outcome.ok and outcome.page is not None and outcome.page.url.endswith(LANDING)


def test_sp_refusing_the_response(lab, idp_metadata):
    with serve(lab, idp_metadata, strict=True) as sp:  # wants signed assertions: the lab signs the Response only
        outcome = login(lab, sp.protected_url, index=10)
    assert not outcome.ok and outcome.reason == saml.SP_REFUSED and outcome.detail.startswith("403 pysaml2 SP at")
