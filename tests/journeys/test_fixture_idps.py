"""The SSO walk through IdPs that cannot run here: Shibboleth v4/v5 (with consent), SimpleSAMLphp 1.19, Keycloak.

Each IdP's pages come from tests/journeys/fixtures/, served by fixture_idps.py with the product's
flow and checks; the last test makes sure every fixture page was walked.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fixture_idps import FIXTURES, FLAVOURS, FixtureServer

from authbench.cluster.checks import Account, Cluster, check_sso_across_nodes
from authbench.journeys.fastbrowser import FastBrowser
from authbench.journeys.forms import KEYCLOAK, PRESETS, SHIBBOLETH, SIMPLESAMLPHP, LoginFields
from authbench.journeys.saml import (
    ACS,
    BAD_CREDENTIALS,
    CONSENT,
    IDP_RESPONSE,
    IDP_SSO,
    LOGIN_FORM,
    LOGIN_POST,
    NO_LOGIN_FORM,
    SAML_STATUS_NOT_SUCCESS,
    SP_AFTER_LOGIN,
    SP_PAGE,
    STALE_REQUEST,
    STORAGE_READ,
    STORAGE_WRITE,
    sso_login,
)
from authbench.journeys.sp_session import forget_sp_session

SHIBBOLETH_STEPS = [("GET", SP_PAGE), ("GET", IDP_SSO), ("GET", STORAGE_READ), ("POST", STORAGE_READ),
                    ("GET", LOGIN_FORM), ("POST", LOGIN_POST), ("GET", CONSENT), ("POST", CONSENT),
                    ("GET", STORAGE_WRITE), ("POST", STORAGE_WRITE), ("POST", ACS), ("GET", SP_AFTER_LOGIN)]
EXPECTED_STEPS = {
    "shibboleth-v4": SHIBBOLETH_STEPS,
    "shibboleth-v5": SHIBBOLETH_STEPS,
    "simplesamlphp-1.19": [("GET", SP_PAGE), ("GET", IDP_SSO), ("GET", LOGIN_FORM), ("POST", LOGIN_POST),
                           ("GET", IDP_RESPONSE), ("POST", ACS), ("GET", SP_AFTER_LOGIN)],
    "keycloak": [("GET", SP_PAGE), ("GET", IDP_SSO), ("POST", LOGIN_POST), ("POST", ACS), ("GET", SP_AFTER_LOGIN)],
}
EXPECTED_PAGES = {
    "shibboleth-v4": ["Loading Session Information", "Web Login Service", "Information Release",
                      "Saving Session Information", "", "Protected content"],
    "shibboleth-v5": ["Loading Session Information", "Web Login Service", "Information Release",
                      "Saving Session Information", "Continue to the service", "Protected content"],
    "simplesamlphp-1.19": ["Log in with your account", "Passing your login on", "Protected content"],
    "keycloak": ["Sign in to demo", "Sending you back to the service", "Protected content"],
}
FIELDS = {"shibboleth-v4": SHIBBOLETH, "shibboleth-v5": SHIBBOLETH, "simplesamlphp-1.19": SIMPLESAMLPHP,
          "keycloak": KEYCLOAK}


@pytest.fixture(scope="module")
def server():
    with FixtureServer() as running:
        yield running


def _sso_url(browser: FastBrowser) -> str:
    return next(url for _method, url, _status in browser.history if "SAMLRequest=" in url)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_login_walks_every_page_with_named_steps(server, flavour):
    steps = []

    def record(name, method, url, status, elapsed_ms, length, exception):
        steps.append((method, name, status, exception))
        assert "?" not in name and elapsed_ms >= 0 and length >= 0

    browser = FastBrowser(on_request=record)
    outcome = sso_login(browser, server.protected_url(flavour), "alice", "alice-pw")
    assert outcome.ok, outcome
    assert outcome.password_asked
    assert [(method, name) for method, name, _, _ in steps] == EXPECTED_STEPS[flavour]
    assert all(exception is None for _, _, _, exception in steps)
    assert outcome.pages == EXPECTED_PAGES[flavour]


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_login_with_the_products_own_field_names(server, flavour):
    assert sso_login(FastBrowser(), server.protected_url(flavour), "alice", "alice-pw", fields=FIELDS[flavour]).ok


def test_other_field_names_find_no_login_form(server):
    outcome = sso_login(FastBrowser(), server.protected_url("keycloak"), "alice", "alice-pw", fields=SHIBBOLETH)
    assert outcome.reason == NO_LOGIN_FORM and "Sign in to demo" in outcome.detail


def test_custom_field_names(server):
    custom = LoginFields(username="username", password="password", submit="login", form="login-actions")
    assert sso_login(FastBrowser(), server.protected_url("keycloak"), "alice", "alice-pw", fields=[custom]).ok


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_wrong_password_is_bad_credentials(server, flavour):
    outcome = sso_login(FastBrowser(), server.protected_url(flavour), "alice", "not-her-password")
    assert outcome.reason == BAD_CREDENTIALS, outcome
    assert "not-her-password" not in outcome.detail


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_error_status_from_the_idp(server, flavour):
    outcome = sso_login(FastBrowser(), server.protected_url(flavour), "blocked", "blocked-pw")
    assert outcome.reason == SAML_STATUS_NOT_SUCCESS, outcome
    assert "Responder" in outcome.detail


@pytest.mark.parametrize("flavour", ["shibboleth-v4", "shibboleth-v5", "keycloak"])
def test_form_from_an_older_tab_is_stale(server, flavour):
    def open_second_tab(browser):
        browser.get(_sso_url(browser))  # the IdP starts over: the form in hand is now stale

    outcome = sso_login(FastBrowser(), server.protected_url(flavour), "alice", "alice-pw",
                        before_credentials=open_second_tab)
    assert outcome.reason == STALE_REQUEST, outcome


def test_lost_state_is_stale(server):
    outcome = sso_login(FastBrowser(), server.protected_url("simplesamlphp-1.19"), "alice", "alice-pw",
                        before_credentials=lambda browser: browser.clear_cookies())
    assert outcome.reason == STALE_REQUEST, outcome


@pytest.mark.parametrize("flavour", ["shibboleth-v4", "shibboleth-v5"])
def test_idp_session_cookie_spares_the_password(server, flavour):
    browser = FastBrowser()
    assert sso_login(browser, server.protected_url(flavour), "alice", "alice-pw").ok
    session_cookie = "__Host-shib_idp_session" if flavour == "shibboleth-v5" else "shib_idp_session"
    assert session_cookie in browser.cookie_names() and "JSESSIONID" in browser.cookie_names()
    # a new SP session: SP and IdP share the fixture's origin, so the IdP's base path tells them apart
    forgotten = forget_sp_session(browser.cookies, server.protected_url(flavour), [f"{server.site.base}/{flavour}/idp"])
    assert forgotten.dropped == [f"_spsession_{FLAVOURS.index(flavour)}"] and session_cookie in forgotten.kept
    again = sso_login(browser, server.protected_url(flavour), "alice", "irrelevant")
    assert again.ok and not again.password_asked


def test_test_2_on_a_shared_origin_is_told_apart_by_the_idp_path_or_left_undecided(server):
    """SP and IdP on one origin: the IdP's base path tells their cookies apart; without one, no verdict is guessed."""
    flavour, sp_url = "shibboleth-v5", server.protected_url("shibboleth-v5")
    idp_base = f"{server.site.base}/{flavour}/idp"
    with_path = check_sso_across_nodes(Cluster(sp_url, idp_base, {"A": idp_base, "B": idp_base}),
                                       Account("alice", "alice-pw"))
    assert with_path.passed and "told apart by the IdP's base path" in with_path.evidence[1], with_path.evidence
    whole = server.site.base
    without = check_sso_across_nodes(Cluster(sp_url, whole, {"A": whole, "B": whole}), Account("alice", "alice-pw"))
    assert not without.passed and "undecided: " in without.evidence[1] and "dropped []" in without.evidence[1]


def test_presets_are_tried_in_order():
    assert PRESETS[0] is SHIBBOLETH and KEYCLOAK in PRESETS and SIMPLESAMLPHP in PRESETS


def test_walk_without_gevent_in_plain_threads(server):
    """The same walk in a process where gevent has patched nothing: blocking sockets, a real thread server."""
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent.parent.parent)!r})
        from tests.journeys.fixture_idps import FixtureServer
        from authbench.journeys import transport
        from authbench.journeys.fastbrowser import FastBrowser
        from authbench.journeys.saml import sso_login
        assert not transport.cooperative()
        with FixtureServer() as server:
            for flavour in ("shibboleth-v5", "keycloak"):
                outcome = sso_login(FastBrowser(), server.protected_url(flavour), "alice", "alice-pw")
                assert outcome.ok, outcome
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout.strip() == "ok", done.stderr


@pytest.mark.runs_last
def test_every_fixture_was_walked(server):
    """Runs last in this module: every page under fixtures/ was served to the walk at least once."""
    fixtures = {(path.parent.name, path.stem) for path in FIXTURES.glob("*/*.html")}
    assert fixtures - server.site.seen == set()
