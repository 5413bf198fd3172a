"""The SSO walk against the running lab: named steps, failure reasons, both clients, connections and cookies."""

from __future__ import annotations

import base64
import time

import pytest

from authbench.cluster.checks import Cluster, pinned_to
from authbench.journeys.browser import Browser
from authbench.journeys.fastbrowser import FastBrowser
from authbench.journeys.saml import (
    ACS,
    BAD_CREDENTIALS,
    CONNECTION_ERROR,
    HTTP_STATUS,
    IDP_SSO,
    LOGIN_FORM,
    LOGIN_POST,
    REASONS,
    SP_AFTER_LOGIN,
    SP_PAGE,
    SP_REFUSED,
    STALE_REQUEST,
    STEP_NAMES,
    STORAGE_READ,
    STORAGE_WRITE,
    sso_login,
)
from authbench_lab import lab as lab_api
from authbench_lab.config import BACKENDS, LabConfig, password_for, username

LAB_STEPS = [("GET", SP_PAGE), ("GET", IDP_SSO), ("GET", STORAGE_READ), ("POST", STORAGE_READ), ("GET", LOGIN_FORM),
             ("POST", LOGIN_POST), ("GET", STORAGE_WRITE), ("POST", STORAGE_WRITE), ("POST", ACS),
             ("GET", SP_AFTER_LOGIN)]
RESTART_TIMEOUT = 15.0  # seconds for HAProxy to see a restarted IdP node healthy again


class Recorder(list):
    """An on_request callback that keeps (name, method, url, status, exception) of every request."""

    def __call__(self, name, method, url, status, elapsed_ms, length, exception) -> None:
        assert elapsed_ms >= 0 and length >= 0
        self.append((name, method, url, status, exception))

    def steps(self) -> list[tuple[str, str]]:
        return [(method, name) for name, method, *_ in self]


def protected(lab: LabConfig, backend: str = "terracotta") -> str:
    return lab.sp_url(backend) + "/secure/"


def account(lab: LabConfig, index: int) -> tuple[str, str]:
    user = username(index, lab.users)
    return user, password_for(user)


def test_reasons_are_the_documented_strings():
    assert REASONS == ("http status", "no login form found", "bad credentials", "stale request",
                       "saml status not success", "sp refused the response", "page not as expected", "timeout",
                       "connection error")


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_request_is_reported_as_a_named_step(lab, backend):
    recorder = Recorder()
    browser = FastBrowser(verify=str(lab.ca_cert), on_request=recorder)
    outcome = sso_login(browser, protected(lab, backend), *account(lab, 30))
    assert outcome.ok, outcome
    assert recorder.steps() == LAB_STEPS
    assert all(name in STEP_NAMES and "?" not in name for name, *_ in recorder)
    assert all(status < 400 and exception is None for *_, status, exception in recorder)
    assert [(method, url, status) for _, method, url, status, _ in recorder] == list(browser.history)


def test_requests_browser_walks_the_same_steps(lab):
    fast, slow = Recorder(), Recorder()
    assert sso_login(FastBrowser(verify=str(lab.ca_cert), on_request=fast), protected(lab), *account(lab, 31)).ok
    assert sso_login(Browser(verify=str(lab.ca_cert), on_request=slow), protected(lab), *account(lab, 31)).ok
    assert fast.steps() == slow.steps() == LAB_STEPS


def test_iterations_share_connections_and_start_without_cookies(lab):
    browser = FastBrowser(verify=str(lab.ca_cert))
    for index in range(3):
        browser.clear_cookies()
        outcome = sso_login(browser, protected(lab), *account(lab, 32 + index))
        assert outcome.ok and outcome.password_asked, outcome
    assert browser.connects == 2  # one kept connection to the SP, one to the balancer, for all three logins
    assert browser.resumptions == 0
    browser.close_connections()
    browser.clear_cookies()
    assert sso_login(browser, protected(lab), *account(lab, 35)).ok
    assert browser.connects == 2  # new ones
    assert browser.resumptions == 2  # resuming the TLS sessions of the closed ones, as --new-connection does


def test_kept_session_goes_straight_to_the_page(lab):
    """--reuse-session: the caller keeps the cookies, so the next iteration is one request."""
    browser = FastBrowser(verify=str(lab.ca_cert))
    assert sso_login(browser, protected(lab), *account(lab, 36)).ok
    recorder = Recorder()
    browser.on_request = recorder
    again = sso_login(browser, protected(lab), *account(lab, 36))
    assert again.ok and not again.password_asked and again.pages == ["Protected content"]
    assert recorder.steps() == [("GET", SP_PAGE)]


def test_wrong_password_is_bad_credentials(lab):
    user, _ = account(lab, 37)
    outcome = sso_login(FastBrowser(verify=str(lab.ca_cert)), protected(lab, "memcached"), user, "pw-wrong-secret")
    assert outcome.reason == BAD_CREDENTIALS and "Web Login Service" in outcome.detail
    assert "pw-wrong-secret" not in outcome.detail


def _wait_until_served(browser: FastBrowser, url: str) -> None:
    deadline = time.monotonic() + RESTART_TIMEOUT
    while True:
        try:
            if browser.get(url).status == 200:
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{url} not served again after {RESTART_TIMEOUT} s")
        time.sleep(0.2)


def test_stopped_idp_node_is_an_http_status_or_connection_error(lab):
    cluster = Cluster(sp_url=protected(lab), lb_url=lab.lb_url("terracotta"),
                      nodes={"A": lab.node_url("terracotta", "a"), "B": lab.node_url("terracotta", "b")},
                      verify=str(lab.ca_cert))
    lab_api.stop_component(lab.run_dir, "terracotta/idp-a")
    try:
        browser = FastBrowser(verify=cluster.verify, route=pinned_to(cluster, "A"))
        outcome = sso_login(browser, cluster.sp_url, *account(lab, 38))
        assert outcome.reason in (HTTP_STATUS, CONNECTION_ERROR), outcome
        if outcome.reason == HTTP_STATUS:
            assert outcome.detail.startswith("503 ")  # HAProxy: no server for node A
    finally:
        lab_api.start_component(lab.run_dir, "terracotta/idp-a")
        _wait_until_served(FastBrowser(verify=str(lab.ca_cert)), cluster.nodes["A"] + "/idp/status")


def test_tampered_response_is_refused_by_the_sp(lab):
    user, password = account(lab, 39)

    def tamper(fields: dict[str, str]) -> dict[str, str]:
        xml = base64.b64decode(fields["SAMLResponse"])
        forged = xml.replace(f">{user}@example.org<".encode(), b">admin@example.org<")
        assert forged != xml
        return {"SAMLResponse": base64.b64encode(forged).decode()}

    recorder = Recorder()
    outcome = sso_login(FastBrowser(verify=str(lab.ca_cert), on_request=recorder), protected(lab, "stateless"),
                        user, password, edit_response=tamper)
    assert outcome.reason == SP_REFUSED and outcome.detail.startswith("403 Login refused at "), outcome
    assert recorder[-1][:2] == (ACS, "POST") and recorder[-1][3] == 403


def test_form_from_an_older_tab_is_stale(lab):
    def open_second_tab(browser: FastBrowser) -> None:
        browser.get(next(url for _, url, _ in browser.history if "SAMLRequest=" in url))

    outcome = sso_login(FastBrowser(verify=str(lab.ca_cert)), protected(lab, "repcached"), *account(lab, 40),
                        before_credentials=open_second_tab)
    assert outcome.reason == STALE_REQUEST and "Stale Request" in outcome.detail, outcome


def test_unknown_ca_is_a_connection_error_unless_insecure(lab):
    refused = sso_login(FastBrowser(verify=True), protected(lab), *account(lab, 41))  # system CAs only
    assert refused.reason == CONNECTION_ERROR and "certificate" in refused.detail.lower()
    assert sso_login(FastBrowser(verify=False), protected(lab), *account(lab, 41)).ok
