"""Lab options that change what a client sees: no stickiness (2012's balancer), no client storage, and
the IdP's cookies at / instead of Shibboleth's /idp (as SimpleSAMLphp and many other IdPs put them).

These need a lab of their own (two clusters, a few seconds to start), apart from the session lab; the
three options do not meet: stickiness only acts in the balancer, the cookie path only in the browser.
"""

from __future__ import annotations

import pytest

from authbench.cluster.checks import PASS, Account, Cluster, run_checks
from authbench.journeys.fastbrowser import FastBrowser
from authbench.journeys.saml import STALE_REQUEST, sso_login
from authbench.journeys.sp_session import forget_sp_session
from authbench_lab import lab as lab_api
from authbench_lab.config import LabConfig, password_for

from ports import VARIANT as VARIANT_BASE_PORT

LOGINS = 6


@pytest.fixture(scope="module")
def variant_lab(tmp_path_factory):
    config = LabConfig(timings="fast", run_dir=tmp_path_factory.mktemp("variant-lab"), base_port=VARIANT_BASE_PORT,
                       backends=["terracotta", "local"], users=20, stickiness="none", client_storage=False,
                       idp_cookie_path="/", workers=1, threads=2)
    try:
        lab_api.up(config)
        yield config
    finally:
        lab_api.down(config.run_dir)


def _logins(lab: LabConfig, backend: str) -> list:
    outcomes = []
    for index in range(LOGINS):
        user = f"user{index:03d}"
        outcomes.append(sso_login(FastBrowser(verify=str(lab.ca_cert)), lab.sp_url(backend) + "/secure/", user,
                                  password_for(user)))
    return outcomes


def test_without_stickiness_only_a_shared_conversation_completes_logins(variant_lab):
    assert all(outcome.ok for outcome in _logins(variant_lab, "terracotta"))
    local = _logins(variant_lab, "local")
    # Round robin moves every request to the other node: node-local conversations go stale.
    assert sum(not outcome.ok for outcome in local) >= LOGINS - 1
    assert {outcome.reason for outcome in local if not outcome.ok} == {STALE_REQUEST}


def test_without_client_storage_the_flow_has_no_storage_pages(variant_lab):
    b = FastBrowser(verify=str(variant_lab.ca_cert))
    url = variant_lab.sp_url("terracotta") + "/secure/"
    first = sso_login(b, url, "user001", password_for("user001"))
    assert first.ok
    assert first.pages == ["Web Login Service", "Redirecting to the service", "Protected content"]
    # The SSO session is found at the start of the next flow: the response comes at once.
    forget_sp_session(b.cookies, url, [variant_lab.lb_url("terracotta")])
    again = sso_login(b, url, "user001", "irrelevant")
    assert again.ok and not again.password_asked
    assert again.pages == ["Redirecting to the service", "Protected content"]


def _cluster(lab: LabConfig, backend: str) -> Cluster:
    return Cluster(sp_url=lab.sp_url(backend) + "/secure/", lb_url=lab.lb_url(backend),
                   nodes={"A": lab.node_url(backend, "a"), "B": lab.node_url(backend, "b")}, verify=str(lab.ca_cert))


@pytest.mark.parametrize(("backend", "shared"), [("terracotta", True), ("local", False)])
def test_idp_cookies_at_root_test_2_still_tells_shared_from_unshared_sessions(variant_lab, backend, shared):
    """Test 2 used to drop every cookie outside /idp: with the IdP's cookies at /, a shared cluster came out ×."""
    user = "user002" if shared else "user003"
    results = run_checks(_cluster(variant_lab, backend), Account(user, password_for(user)))
    test_2 = results[1]
    assert test_2.test == "Test 2" and test_2.passed == shared, test_2.evidence
    forgotten = test_2.evidence[1]
    assert forgotten.startswith("new SP session: dropped ['_shibsession_") and "'JSESSIONID'" in forgotten
    assert "'shib_idp_session'" in forgotten, forgotten
    assert results[0].mark == PASS  # each node logs in on its own


def test_idp_cookies_at_root_are_kept_through_the_balancer(variant_lab):
    """The 2012 set-up: every request balanced (round robin), no node pinned; the SSO session is shared."""
    b = FastBrowser(verify=str(variant_lab.ca_cert))
    url = variant_lab.sp_url("terracotta") + "/secure/"
    assert sso_login(b, url, "user004", password_for("user004")).ok
    idp_cookies = {cookie.name: cookie.path for _host, cookie in b.cookies
                   if cookie.origin == variant_lab.lb_url("terracotta")}
    assert idp_cookies == {"JSESSIONID": "/", "shib_idp_session": "/"}, idp_cookies
    forgotten = forget_sp_session(b.cookies, url, [variant_lab.lb_url("terracotta")])
    assert sorted(forgotten.kept) == ["JSESSIONID", "shib_idp_session"], forgotten
    again = sso_login(b, url, "user004", "not-the-password")
    assert again.ok and not again.password_asked, again
