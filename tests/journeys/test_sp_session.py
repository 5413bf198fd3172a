"""A new SP session forgets what the SP set and keeps what the IdP set, wherever the IdP puts its cookies."""

from __future__ import annotations

import pytest

from authbench.journeys.cookies import CookieJar
from authbench.journeys.sp_session import forget_sp_session, origin_of

NOW = 1_800_000_000.0


def store(jar: CookieJar, url: str, *set_cookies: str) -> None:
    """Cookies as FastBrowser stores them for a response from `url`."""
    scheme, host, port = origin_of(url)
    path = "/" + url.split("/", 3)[3] if url.count("/") >= 3 else "/"
    for set_cookie in set_cookies:
        jar.store(set_cookie, host, path, True, now=NOW, origin=f"{scheme}://{host}:{port}")


# (IdP product, where it puts its SSO cookies) — the rule must not care
IDP_COOKIES = {
    "shibboleth": ("JSESSIONID=1; Path=/idp", "shib_idp_session=2; Path=/idp"),
    "simplesamlphp": ("SimpleSAMLSessionID=1; Path=/", "SimpleSAMLAuthToken=2; Path=/"),
    "keycloak": ("AUTH_SESSION_ID=1; Path=/realms/demo/", "KEYCLOAK_IDENTITY=2; Path=/realms/demo/"),
}


@pytest.mark.parametrize("product", IDP_COOKIES)
def test_same_host_other_port_keeps_every_idp_cookie(product):
    """The lab's shape: SP and IdP on one host (cookies are shared by port), told apart by origin."""
    jar = CookieJar()
    store(jar, "https://127.0.0.1:9443/Shibboleth.sso/SAML2/POST", "_shibsession_x=s; Path=/")
    store(jar, "https://127.0.0.1:9001/idp/profile/SAML2/Redirect/SSO", *IDP_COOKIES[product])  # node A for the LB
    forgotten = forget_sp_session(jar, "https://127.0.0.1:9443/secure/", ["https://127.0.0.1:9000",
                                                                         "https://127.0.0.1:9001"])
    assert forgotten.dropped == ["_shibsession_x"] and not forgotten.undecided and not forgotten.note
    assert forgotten.kept == sorted(value.split("=")[0] for value in IDP_COOKIES[product])
    assert sorted(cookie.name for _host, cookie in jar) == forgotten.kept


def test_other_hosts_lose_every_cookie_of_the_sp_host_and_keep_the_rest():
    jar = CookieJar()
    store(jar, "https://sp.example.org/acs", "sp_session=1; Path=/")
    store(jar, "http://sp.example.org/", "sp_http=1; Path=/")  # the SP's host on another port: also the SP's
    store(jar, "https://idp.example.org/sso", "idp_session=1; Path=/")
    store(jar, "https://wayf.example.net/ds", "chosen_idp=1; Path=/")  # neither: a browser keeps it
    forgotten = forget_sp_session(jar, "https://sp.example.org/secure/", ["https://idp.example.org/"])
    assert forgotten.dropped == ["sp_http", "sp_session"]
    assert forgotten.kept == ["chosen_idp", "idp_session"]
    assert jar.header("sp.example.org", "/", True, now=NOW) == ""


def test_shared_origin_is_told_apart_by_the_idp_base_path_and_says_so():
    jar = CookieJar()
    store(jar, "https://www.example.org/Shibboleth.sso/SAML2/POST", "_shibsession_x=s; Path=/")
    store(jar, "https://www.example.org/idp/profile/SAML2/Redirect/SSO", "idp_session=i; Path=/")
    forgotten = forget_sp_session(jar, "https://www.example.org/secure/", ["https://www.example.org/idp/"])
    assert forgotten.dropped == ["_shibsession_x"] and forgotten.kept == ["idp_session"]
    assert "share https://www.example.org:443" in forgotten.note and not forgotten.undecided


def test_shared_origin_without_a_base_path_is_undecided_and_guesses_nothing():
    jar = CookieJar()
    store(jar, "https://www.example.org/acs", "sp_session=1; Path=/")
    store(jar, "https://www.example.org/sso", "idp_session=1; Path=/")
    forgotten = forget_sp_session(jar, "https://www.example.org/secure/", ["https://www.example.org"])
    assert forgotten.dropped == [] and forgotten.kept == ["idp_session", "sp_session"]
    assert forgotten.undecided.startswith("undecided: ") and "undecided" in str(forgotten)


def test_evidence_names_cookies_never_values():
    jar = CookieJar()
    store(jar, "https://sp.example.org/acs", "sp_session=secret-sp-value; Path=/")
    store(jar, "https://idp.example.org/sso", "idp_session=secret-idp-value; Path=/")
    text = str(forget_sp_session(jar, "https://sp.example.org/", ["https://idp.example.org"]))
    assert "sp_session" in text and "idp_session" in text and "secret" not in text


def test_origin_fills_in_default_ports_and_brackets_ipv6():
    assert origin_of("https://IdP.example.org/x") == ("https", "idp.example.org", 443)
    assert origin_of("http://[::1]:8080/") == ("http", "[::1]", 8080)
