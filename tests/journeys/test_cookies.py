"""The cookie jar keeps what a browser keeps: per host, by path, Secure only where it may, and forgets on time."""

from __future__ import annotations

from authbench.journeys.cookies import CookieJar, default_path, path_matches

HOST = "idp.example.org"
NOW = 1_800_000_000.0


def jar_with(*set_cookies: str, host: str = HOST, path: str = "/idp/profile/SSO", secure: bool = True) -> CookieJar:
    jar = CookieJar()
    for value in set_cookies:
        jar.store(value, host, path, secure, now=NOW)
    return jar


def test_path_attribute_limits_where_a_cookie_goes():
    jar = jar_with("JSESSIONID=abc; Path=/idp; Secure; HttpOnly")
    assert jar.header(HOST, "/idp", True, now=NOW) == "JSESSIONID=abc"
    assert jar.header(HOST, "/idp/profile/SAML2/Redirect/SSO", True, now=NOW) == "JSESSIONID=abc"
    assert jar.header(HOST, "/idpx", True, now=NOW) == ""
    assert jar.header(HOST, "/secure/", True, now=NOW) == ""


def test_default_path_is_the_request_directory():
    assert default_path("/idp/profile/SSO") == "/idp/profile"
    assert default_path("/login") == "/" and default_path("") == "/"
    jar = jar_with("a=1")  # set from /idp/profile/SSO without Path
    assert jar.header(HOST, "/idp/profile/other", True, now=NOW) == "a=1"
    assert jar.header(HOST, "/idp/", True, now=NOW) == ""
    assert path_matches("/a/b", "/a/") and path_matches("/a", "/a") and not path_matches("/ab", "/a")


def test_secure_cookies_need_a_secure_origin():
    assert len(jar_with("s=1; Secure; Path=/", secure=False)) == 0  # an http page may not set one
    jar = jar_with("s=1; Secure; Path=/", "plain=2; Path=/")
    assert jar.header(HOST, "/", True, now=NOW) == "s=1; plain=2"
    assert jar.header(HOST, "/", False, now=NOW) == "plain=2"  # and it is never sent over http


def test_loopback_over_http_is_a_secure_origin_as_in_browsers():
    from authbench.journeys.cookies import is_secure_origin

    assert is_secure_origin("http", "127.0.0.1") and is_secure_origin("http", "localhost")
    assert is_secure_origin("http", "127.0.0.2") and not is_secure_origin("http", "127.example.org")
    assert not is_secure_origin("http", "idp.example.org") and is_secure_origin("https", "idp.example.org")


def test_max_age_zero_and_past_expires_delete():
    jar = jar_with("a=1; Path=/", "b=2; Path=/", "c=3; Path=/")
    jar.store("a=; Path=/; Max-Age=0", HOST, "/", True, now=NOW)
    jar.store("b=; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT", HOST, "/", True, now=NOW)
    assert jar.header(HOST, "/", True, now=NOW) == "c=3"
    # Max-Age wins over Expires; deletion needs the same path
    jar.store("c=; Path=/other; Max-Age=0", HOST, "/", True, now=NOW)
    jar.store("d=4; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=60", HOST, "/", True, now=NOW)
    assert jar.header(HOST, "/", True, now=NOW) == "c=3; d=4"


def test_cookies_expire_with_time():
    jar = jar_with("short=1; Path=/; Max-Age=10", "long=2; Path=/; Max-Age=3600")
    assert jar.header(HOST, "/", True, now=NOW + 5) == "short=1; long=2"
    assert jar.header(HOST, "/", True, now=NOW + 11) == "long=2"
    assert len(jar) == 1  # the expired one is gone for good


def test_host_prefix_rules():
    accepted = jar_with("__Host-shib_idp_session=x; Path=/; Secure; HttpOnly")
    assert accepted.header(HOST, "/idp", True, now=NOW) == "__Host-shib_idp_session=x"
    assert len(jar_with("__Host-a=1; Path=/")) == 0  # not Secure
    assert len(jar_with("__Host-a=1; Path=/idp; Secure")) == 0  # not Path=/
    assert len(jar_with("__Host-a=1; Path=/; Secure; Domain=example.org")) == 0  # a Domain
    assert len(jar_with("__Host-a=1; Path=/; Secure", secure=False)) == 0  # from http
    assert len(jar_with("__Secure-a=1; Path=/")) == 0 and len(jar_with("__Secure-a=1; Path=/; Secure")) == 1


def test_hosts_are_kept_apart_and_ports_are_not():
    jar = jar_with("sp=1; Path=/", host="127.0.0.1")
    assert jar.header("127.0.0.1", "/", True, now=NOW) == "sp=1"  # whichever port the next request goes to
    assert jar.header("localhost", "/", True, now=NOW) == ""
    assert jar.get("127.0.0.1", "sp") == "1" and jar.get(HOST, "sp") is None


def test_longer_paths_first_then_older_and_replacing_keeps_the_place():
    jar = jar_with("a=1; Path=/", "b=2; Path=/idp", "c=3; Path=/")
    assert jar.header(HOST, "/idp/x", True, now=NOW) == "b=2; a=1; c=3"
    jar.store("a=9; Path=/", HOST, "/", True, now=NOW)
    assert jar.header(HOST, "/idp/x", True, now=NOW) == "b=2; a=9; c=3"
    jar.store("a=; Max-Age=0; Path=/", HOST, "/", True, now=NOW)  # deleted, then set anew: now the youngest
    jar.store("a=5; Path=/", HOST, "/", True, now=NOW)
    assert jar.header(HOST, "/idp/x", True, now=NOW) == "b=2; c=3; a=5"


def test_values_keep_equals_signs_and_odd_cookies_are_ignored():
    jar = jar_with("state=YWJj==; Path=/", "novalue; Path=/", "=anonymous; Path=/")
    assert jar.header(HOST, "/", True, now=NOW) == "state=YWJj=="


def test_clear_all_or_some_and_no_values_in_repr():
    jar = jar_with("JSESSIONID=abc; Path=/idp", "_shibsession_1=secret; Path=/")
    jar.clear(lambda host, cookie: not cookie.path.startswith("/idp"))
    assert [cookie.name for _host, cookie in jar] == ["JSESSIONID"]
    assert "abc" not in repr(next(iter(jar))[1])
    jar.clear()
    assert len(jar) == 0
