"""Returning users: where the IdP is learnt from a journey's steps, and how each journey is classified."""

from __future__ import annotations

from authbench.journeys.cookies import CookieJar
from authbench.journeys.returning import FRESH, LOST, REUSED, SP_SESSION, ReturningUser, classify, idp_bases
from authbench.journeys.saml import ACS, IDP_SSO, LOGIN_POST, SP_PAGE

SP = "https://sp.example.org/secure/"
IDP = "https://sp.example.org/idp/profile/SAML2/Redirect/SSO"  # one origin: told apart by /idp


def hops(*steps: tuple[str, str]) -> list:
    return [(step, "GET", url, 200, None) for step, url in steps]


def test_idp_bases_are_origin_and_first_segment_of_idp_steps_only():
    seen = hops((SP_PAGE, SP), (IDP_SSO, IDP + "?SAMLRequest=x"), (LOGIN_POST, "https://idp.example.org:8443/login"),
                (ACS, "https://sp.example.org/Shibboleth.sso/SAML2/POST"))
    assert idp_bases(seen) == {"https://sp.example.org/idp", "https://idp.example.org:8443/login"}


def test_classes():
    assert classify(False, True, True, True) == FRESH
    assert classify(True, True, False, True) == REUSED
    assert classify(True, True, True, True) == LOST
    assert classify(True, True, True, False) == LOST  # asked again, then failed: still a lost session
    assert classify(True, False, False, True) == SP_SESSION
    assert classify(True, False, False, False) == ""  # failed before the IdP: nothing known


def test_a_returning_user_keeps_the_idp_cookies_on_a_shared_origin_and_drops_the_sps():
    user, jar = ReturningUser(), CookieJar()
    jar.store("_shibsession_x=s; Path=/", "sp.example.org", "/Shibboleth.sso/SAML2/POST", True,
              origin="https://sp.example.org:443")
    jar.store("shib_idp_session=i; Path=/idp", "sp.example.org", "/idp/profile/SAML2/Redirect/SSO", True,
              origin="https://sp.example.org:443")
    assert user.after(hops((SP_PAGE, SP), (IDP_SSO, IDP), (LOGIN_POST, IDP)), True, True) == FRESH
    forgotten = user.new_sp_session(jar, SP)
    assert forgotten is not None and forgotten.dropped == ["_shibsession_x"] and forgotten.kept == ["shib_idp_session"]
    assert user.after(hops((SP_PAGE, SP), (IDP_SSO, IDP)), True, False) == REUSED


def test_before_any_idp_was_seen_the_jar_is_emptied():
    user, jar = ReturningUser(), CookieJar()
    jar.store("a=1; Path=/", "sp.example.org", "/", True, origin="https://sp.example.org:443")
    assert user.new_sp_session(jar, SP) is None and not list(jar)
