"""Form parsing as a browser without JavaScript submits forms."""

from __future__ import annotations

from authbench.journeys.forms import page_title, parse_forms
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
