"""Form parsing as a browser without JavaScript submits forms."""

from __future__ import annotations

from authbench.journeys.forms import (
    KEYCLOAK,
    PRESETS,
    SHIBBOLETH,
    SIMPLESAMLPHP,
    LoginFields,
    Page,
    encode_form,
    find_login_form,
    page_title,
    parse_forms,
    resolve_url,
)
from authbench_lab.idp import pages

PAGE_URL = "https://127.0.0.1:1/idp/profile/SAML2/Redirect/SSO?execution=e1s2"


def test_login_page_fields_and_button():
    html = pages.login("/idp/profile/SAML2/Redirect/SSO?execution=e1s2", "_tok", "https://sp/shibboleth")
    (form,) = parse_forms(html, PAGE_URL)
    assert form.action == PAGE_URL and form.method == "POST"
    assert form.fields["csrf_token"] == "_tok"
    assert form.password_fields == ["j_password"] and "j_username" in form.text_fields
    assert "_eventId_proceed" in form.buttons and "_eventId_proceed" not in form.fields
    assert "donotcache" not in form.fields  # unchecked checkboxes are not sent


def test_storage_read_page_posts_what_a_browser_without_local_storage_posts():
    (form,) = parse_forms(pages.read_storage("?execution=e1s1", "_t"), PAGE_URL)
    assert form.fields["shib_idp_ls_success.shib_idp_session_ss"] == "false"
    assert form.fields["shib_idp_ls_supported"] == ""
    assert form.action.endswith("?execution=e1s1")


def test_response_form_values_are_unescaped():
    html = pages.post_response("https://sp/acs", "PHNhbWw+", "a&b<c>")
    (form,) = parse_forms(html, PAGE_URL)
    assert form.fields == {"RelayState": "a&b<c>", "SAMLResponse": "PHNhbWw+"}
    assert form.action == "https://sp/acs"


def test_titles_and_empty_pages():
    assert page_title(pages.stale_request()) == "Stale Request"
    assert page_title("") == "" and parse_forms("  ", PAGE_URL) == []


# -- the regular-expression parser on harder markup ------------------------------------------------

TRICKY = """<html><head><title>A &amp; B</title>
<script>var s = '<form action="/fake"><input name="fake"></form>';</script></head><body>
<!-- <form action="/commented"><input name="old"></form> -->
<FORM ID="f1" Name="main" ACTION='/next?a=1&amp;b=2' Method=post>
  <input type=hidden name=bare value=v1>
  <input type="hidden" name="quoted" value="x &gt; y &quot;q&quot; &#39;s&#39;">
  <input type="text" name="greater" value="a>b">
  <input type="checkbox" name="ids" value="one" checked>
  <input type="checkbox" name="ids" value="two">
  <input type="checkbox" name="ids" value="three" CHECKED>
  <input type="radio" name="pick" value="r1"><input type="radio" name="pick" value="r2" checked>
  <input type="checkbox" name="flag" checked>
  <input type="text" name="off" value="no" disabled>
  <input type="reset" name="reset"><input type="button" name="plain" value="b"><input type="file" name="upload">
  <select name="choice"><option value="c1">One<option value="c2" selected>Two</select>
  <select name="first"><option>Alpha</option><option>Beta</option></select>
  <textarea name="note">line &lt;1&gt;
line 2</textarea>
  <button name="go" value="yes">Go</button><button type="button" name="nothing">No</button>
  <input type="image" name="img" src="x.png">
</FORM>
<form><input name="second"></form>
"""


def test_tricky_markup_as_a_browser_reads_it():
    page = Page("https://idp.example.org/idp/page?x=1", 200, TRICKY)
    assert page.title == "A & B"
    first, second = page.forms()
    assert (first.id, first.name, first.method) == ("f1", "main", "POST")
    assert first.action == "https://idp.example.org/next?a=1&b=2"
    assert first.fields == {"bare": "v1", "quoted": "x > y \"q\" 's'", "greater": "a>b", "ids": "one", "pick": "r2",
                            "flag": "on", "choice": "c2", "first": "Alpha", "note": "line <1>\nline 2"}
    assert first.repeated == [("ids", "three")]
    assert first.buttons == {"go": "yes", "img": ""}
    assert second.action == page.url and second.method == "GET" and second.fields == {"second": ""}


def test_submission_overrides_fields_and_keeps_repeated_names():
    (form,) = [f for f in Page("https://h/p", 200, TRICKY).forms() if f.id == "f1"]
    pairs = form.submission({"bare": "typed"}, button="go")
    assert ("bare", "typed") in pairs and ("go", "yes") in pairs and pairs.count(("ids", "three")) == 1
    assert encode_form([("a b", "x&y=z+/"), ("ü", "~*-._")]) == "a+b=x%26y%3Dz%2B%2F&%C3%BC=%7E*-._"


def test_relative_urls_resolved_like_urljoin():
    base = "https://idp.example.org:8443/idp/profile/SSO?execution=e1s1"
    assert resolve_url(base, "?execution=e1s2") == "https://idp.example.org:8443/idp/profile/SSO?execution=e1s2"
    assert resolve_url(base, "/other") == "https://idp.example.org:8443/other"
    assert resolve_url(base, "next") == "https://idp.example.org:8443/idp/profile/next"
    assert resolve_url(base, "//cdn.example.org/x") == "https://cdn.example.org/x"
    assert resolve_url(base, "http://sp/acs") == "http://sp/acs"


def test_login_fields_presets_and_detection():
    shib = pages.login("/idp/profile/SAML2/Redirect/SSO?execution=e1s2", "_t", "sp")
    keycloak = ('<form id="kc-form-login" action="/realms/x/login-actions/authenticate?session_code=1" method="post">'
                '<input name="username"><input name="password" type="password">'
                '<input type="submit" name="login" value="Sign In"></form>')
    ssp = ('<form action="?" method="post"><input name="username"><input type="password" name="password">'
           '<input type="hidden" name="AuthState" value="_a:b"><button type="submit">Login</button></form>')
    assert find_login_form(parse_forms(shib, PAGE_URL))[1] is SHIBBOLETH
    assert find_login_form(parse_forms(keycloak, PAGE_URL))[1] is KEYCLOAK
    assert find_login_form(parse_forms(ssp, PAGE_URL))[1] is SIMPLESAMLPHP
    assert find_login_form(parse_forms(ssp, PAGE_URL), (KEYCLOAK,)) is None  # not the Keycloak form
    assert find_login_form(parse_forms(shib, PAGE_URL), (SIMPLESAMLPHP,)) is None
    custom = LoginFields("username", "password", form="login-actions")  # matched by part of the action
    assert find_login_form(parse_forms(keycloak, PAGE_URL), (custom,))[1] is custom
    assert PRESETS == (SHIBBOLETH, KEYCLOAK, SIMPLESAMLPHP)
