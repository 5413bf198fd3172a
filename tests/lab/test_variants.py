"""Lab options that change what a client sees: no stickiness (2012's balancer) and no client storage.

These need a lab of their own (two clusters, a few seconds to start), apart from the session lab.
"""

from __future__ import annotations

import pytest

from authbench.journeys.fastbrowser import FastBrowser
from authbench.journeys.saml import STALE_REQUEST, sso_login
from authbench.journeys.sp_session import forget_sp_session
from authbench_lab import lab as lab_api
from authbench_lab.config import LabConfig, password_for

from ports import VARIANT as VARIANT_BASE_PORT

LOGINS = 6


@pytest.fixture(scope="module")
def round_robin_lab(tmp_path_factory):
    config = LabConfig(run_dir=tmp_path_factory.mktemp("variant-lab"), base_port=VARIANT_BASE_PORT,
                       backends=["terracotta", "local"], users=20, stickiness="none", client_storage=False,
                       workers=1, threads=2)
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


def test_without_stickiness_only_a_shared_conversation_completes_logins(round_robin_lab):
    assert all(outcome.ok for outcome in _logins(round_robin_lab, "terracotta"))
    local = _logins(round_robin_lab, "local")
    # Round robin moves every request to the other node: node-local conversations go stale.
    assert sum(not outcome.ok for outcome in local) >= LOGINS - 1
    assert {outcome.reason for outcome in local if not outcome.ok} == {STALE_REQUEST}


def test_without_client_storage_the_flow_has_no_storage_pages(round_robin_lab):
    b = FastBrowser(verify=str(round_robin_lab.ca_cert))
    url = round_robin_lab.sp_url("terracotta") + "/secure/"
    first = sso_login(b, url, "user001", password_for("user001"))
    assert first.ok
    assert first.pages == ["Web Login Service", "Redirecting to the service", "Protected content"]
    # The SSO session is found at the start of the next flow: the response comes at once.
    forget_sp_session(b.cookies, url, [round_robin_lab.lb_url("terracotta")])
    again = sso_login(b, url, "user001", "irrelevant")
    assert again.ok and not again.password_asked
    assert again.pages == ["Redirecting to the service", "Protected content"]
