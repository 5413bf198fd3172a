"""The cluster checks against an IdP that is not Shibboleth: pysaml2 nodes, SSO cookie at /, SP on another host.

Test 2 must follow the cluster, not the IdP product: ○ when the nodes share SSO sessions (memcached),
× when each keeps its own. The balancer itself (round robin, every request to the next node) is
checked too: a shared cluster spares the password there as well.
"""

from __future__ import annotations

import pytest
from pysaml2_cluster import ACCOUNTS, IDP_HOST, SP_COOKIE, SSO_COOKIE, Pysaml2Cluster

from authbench.cluster.checks import Account, Cluster, check_each_node, check_sso_across_nodes
from authbench.journeys.fastbrowser import FastBrowser
from authbench.journeys.saml import sso_login
from authbench.journeys.sp_session import forget_sp_session

from ports import PYSAML2_SHARED, PYSAML2_UNSHARED


@pytest.fixture(scope="module")
def shared(lab, tmp_path_factory):
    memcached = (lab.host, lab.shared_port("memcached-a"))
    with Pysaml2Cluster(tmp_path_factory.mktemp("pysaml2-shared"), PYSAML2_SHARED, memcached) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def unshared(tmp_path_factory):
    with Pysaml2Cluster(tmp_path_factory.mktemp("pysaml2-unshared"), PYSAML2_UNSHARED, None) as cluster:
        yield cluster


def _cluster(idp: Pysaml2Cluster) -> Cluster:
    return Cluster(sp_url=idp.protected_url, lb_url=idp.lb_url, nodes=idp.nodes)


def _account(user: str) -> Account:
    return Account(user, ACCOUNTS[user])


def test_each_node_logs_in_through_the_real_sp(unshared):
    result = check_each_node(_cluster(unshared), _account("carol"))
    assert result.passed, result.evidence
    assert len(result.evidence) == 2 and all("; password asked;" in line for line in result.evidence)


@pytest.mark.parametrize("fixture", ["shared", "unshared"])
def test_test_2_follows_the_session_store_not_the_idp_product(request, fixture):
    idp = request.getfixturevalue(fixture)
    result = check_sso_across_nodes(_cluster(idp), _account("dave"))
    assert result.passed == (fixture == "shared"), result.evidence
    login, forgotten, again = result.evidence
    assert forgotten == f"new SP session: dropped ['{SP_COOKIE}'] (the SP's), kept ['{SSO_COOKIE}']", forgotten
    assert ("no password asked" in again) == (fixture == "shared"), again


def test_through_the_round_robin_balancer_a_shared_session_spares_the_password(shared):
    browser = FastBrowser()
    first = sso_login(browser, shared.protected_url, "erin", ACCOUNTS["erin"])
    assert first.ok and first.password_asked, first
    assert {(host, cookie.name, cookie.path) for host, cookie in browser.cookies} == {
        (IDP_HOST, SSO_COOKIE, "/"), ("127.0.0.1", SP_COOKIE, "/")}
    for _ in range(3):  # each login meets the nodes in another order
        forgotten = forget_sp_session(browser.cookies, shared.protected_url, [shared.lb_url])
        assert forgotten.dropped == [SP_COOKIE] and forgotten.kept == [SSO_COOKIE], forgotten
        again = sso_login(browser, shared.protected_url, "erin", "not-her-password")
        assert again.ok and not again.password_asked, again


def test_wrong_password_is_refused(unshared):
    outcome = sso_login(FastBrowser(), unshared.protected_url, "carol", "wrong")
    assert not outcome.ok and outcome.password_asked
