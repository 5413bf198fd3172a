"""SSO through the running lab: every backend, the Test 1–3 matrix, and what the SP and IdP refuse."""

from __future__ import annotations

import base64

import pytest
import requests

from authbench.cluster.checks import Account, Cluster, check_login_across_nodes, new_sp_session, run_checks
from authbench.journeys.fastbrowser import FastBrowser
from authbench.journeys.forms import Page
from authbench.journeys.saml import BAD_CREDENTIALS, STALE_REQUEST, sso_login
from authbench_lab import lab as lab_api
from authbench_lab.config import BACKENDS, LabConfig, password_for, username

# The 2012 table, extended with the unclustered baseline: (Test 1, Test 2, Test 3).
EXPECTED_MATRIX = {
    "terracotta": (True, True, True),
    "memcached": (True, True, False),
    "repcached": (True, True, False),
    "stateless": (True, True, False),
    "local": (True, False, False),
}


def account(lab: LabConfig, index: int = 0) -> Account:
    user = username(index, lab.users)
    return Account(user, password_for(user))


def cluster(lab: LabConfig, backend: str) -> Cluster:
    return Cluster(
        sp_url=lab.sp_url(backend) + "/secure/",
        lb_url=lab.lb_url(backend),
        nodes={"A": lab.node_url(backend, "a"), "B": lab.node_url(backend, "b")},
        verify=str(lab.ca_cert),
    )


def browser(lab: LabConfig) -> FastBrowser:
    return FastBrowser(verify=str(lab.ca_cert))


@pytest.mark.parametrize("backend", BACKENDS)
def test_full_sso_through_sp(lab, backend):
    b = browser(lab)
    user = account(lab, 7)
    outcome = sso_login(b, lab.sp_url(backend) + "/secure/", user.username, user.password)
    assert outcome.ok, outcome
    assert outcome.password_asked
    page = b.get(lab.sp_url(backend) + "/secure/")
    assert f'<span id="remote-user">{user.username}@example.org</span>' in page.text
    # Shibboleth v5's pages, in order: storage read, login, storage write, then the SP's page.
    assert outcome.pages == ["Loading Session Information", "Web Login Service", "Saving Session Information",
                             "Redirecting to the service", "Protected content"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_cluster_checks_match_2012_table(lab, backend):
    results = run_checks(cluster(lab, backend), account(lab, 1))
    observed = tuple(result.passed for result in results)
    assert observed == EXPECTED_MATRIX[backend], [result.evidence for result in results]


def test_second_sp_session_reuses_sso_session(lab):
    b = browser(lab)
    user = account(lab, 2)
    url = lab.sp_url("terracotta") + "/secure/"
    assert sso_login(b, url, user.username, user.password).ok
    forgotten = new_sp_session(cluster(lab, "terracotta"), b)
    assert [name[:13] for name in forgotten.dropped] == ["_shibsession_"] and not forgotten.undecided, forgotten
    assert "shib_idp_session" in forgotten.kept and "JSESSIONID" in forgotten.kept
    again = sso_login(b, url, user.username, "not-the-password")  # would fail if the password were asked
    assert again.ok and not again.password_asked


def test_wrong_password_shows_login_form_again_with_error(lab):
    b = browser(lab)
    user = account(lab, 3)
    outcome = sso_login(b, lab.sp_url("local") + "/secure/", user.username, "wrong")
    assert not outcome.ok and outcome.reason == BAD_CREDENTIALS
    _, url, status = b.history[-1]
    page = b.get(url)
    assert status == 200 and "Web Login Service" in page.title
    assert "incorrect" in page.text and 'name="j_password"' in page.text


def test_unknown_user_is_refused_like_a_wrong_password(lab):
    outcome = sso_login(browser(lab), lab.sp_url("stateless") + "/secure/", "nosuchuser", "x")
    assert outcome.reason == BAD_CREDENTIALS


def test_unknown_execution_is_a_stale_request(lab):
    response = requests.get(lab.lb_url("memcached") + "/idp/profile/SAML2/Redirect/SSO?execution=e9s9",
                            verify=str(lab.ca_cert), timeout=10)
    assert response.status_code == 400
    assert "<title>Stale Request</title>" in response.text


def test_reused_execution_after_login_is_stale(lab):
    b = browser(lab)
    user = account(lab, 4)
    assert sso_login(b, lab.sp_url("terracotta") + "/secure/", user.username, user.password).ok
    used = next(url for method, url, _ in b.history if method == "POST" and "execution=" in url)
    outcome_page = b.request("POST", used, {"csrf_token": "x", "_eventId_proceed": ""})
    assert outcome_page.status == 400 and outcome_page.title == "Stale Request"


def test_idp_metadata_is_served_with_signing_key(lab):
    response = requests.get(lab.lb_url("stateless") + "/idp/shibboleth", verify=str(lab.ca_cert), timeout=10)
    assert response.status_code == 200
    assert "IDPSSODescriptor" in response.text and "X509Certificate" in response.text
    assert lab.lb_url("stateless") + "/idp/profile/SAML2/Redirect/SSO" in response.text


# -- the SP refuses what it must not believe ------------------------------------------------------


def _response_form(lab: LabConfig, backend: str) -> tuple[FastBrowser, Page]:
    """Walk a real login up to the auto-submit form, without posting it."""
    b = browser(lab)
    user = account(lab, 5)
    page = b.get(lab.sp_url(backend) + "/secure/")
    for _ in range(6):
        forms = page.forms()
        if any("SAMLResponse" in f.fields for f in forms):
            return b, page
        form = forms[0]
        values = {"j_username": user.username, "j_password": user.password} if form.password_fields else {}
        page = b.submit(form, values, button="_eventId_proceed" if form.password_fields else None)
    raise AssertionError(f"no SAMLResponse form, last page {page.title}")


def _post_to_acs(b: FastBrowser, page: Page, xml: bytes) -> Page:
    form = next(f for f in page.forms() if "SAMLResponse" in f.fields)
    return b.submit(form, {"SAMLResponse": base64.b64encode(xml).decode()})


def _original(page: Page) -> bytes:
    form = next(f for f in page.forms() if "SAMLResponse" in f.fields)
    return base64.b64decode(form.fields["SAMLResponse"])


def test_untouched_response_is_accepted(lab):
    b, page = _response_form(lab, "stateless")
    result = _post_to_acs(b, page, _original(page))
    assert result.status == 200 and 'id="remote-user"' in result.text


def test_tampered_response_is_refused(lab):
    b, page = _response_form(lab, "stateless")
    xml = _original(page)
    tampered = xml.replace(b">user005@example.org<", b">admin@example.org<")
    assert tampered != xml
    result = _post_to_acs(b, page, tampered)
    assert result.status == 403 and "signature not valid" in result.text


def test_unsigned_response_is_refused(lab):
    b, page = _response_form(lab, "stateless")
    xml = _original(page)
    start, end = xml.index(b"<ds:Signature"), xml.index(b"</ds:Signature>") + len(b"</ds:Signature>")
    result = _post_to_acs(b, page, xml[:start] + xml[end:])
    assert result.status == 403 and "signature not valid" in result.text


def test_response_replayed_into_another_login_is_refused(lab):
    b, page = _response_form(lab, "stateless")
    first = _original(page)
    assert _post_to_acs(b, page, first).status == 200
    b2, page2 = _response_form(lab, "stateless")
    result = _post_to_acs(b2, page2, first)
    assert result.status == 403 and "InResponseTo" in result.text


# -- losing a memcached -------------------------------------------------------------------------


def test_losing_one_memcached_loses_only_the_sharded_sessions(lab):
    logged_in = {}
    for backend in ("memcached", "repcached"):
        browsers = []
        for index in range(10, 22):
            b = browser(lab)
            user = account(lab, index)
            assert sso_login(b, lab.sp_url(backend) + "/secure/", user.username, user.password).ok
            browsers.append((b, user))
        logged_in[backend] = browsers
    lab_api.stop_component(lab.run_dir, "memcached-a")
    try:
        asked = {}
        for backend, browsers in logged_in.items():
            asked[backend] = 0
            for b, user in browsers:
                new_sp_session(cluster(lab, backend), b)
                outcome = sso_login(b, lab.sp_url(backend) + "/secure/", user.username, user.password)
                assert outcome.ok, outcome
                asked[backend] += outcome.password_asked
    finally:
        lab_api.start_component(lab.run_dir, "memcached-a")
    assert asked["repcached"] == 0
    # Consistent hashing put some of the 12 sessions on the stopped server: those users log in again.
    assert 0 < asked["memcached"] < 12, asked


def test_stale_is_reported_when_a_node_without_the_conversation_gets_the_form(lab):
    """Test 3's failure, seen as the journey reports it."""
    c = cluster(lab, "local")
    result = check_login_across_nodes(c, account(lab, 6))
    assert not result.passed and STALE_REQUEST in result.evidence[0]
