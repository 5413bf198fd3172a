"""The IdP's HTML, shaped like Shibboleth IdP v5's views as a client without JavaScript sees them.

Only what a client relies on is reproduced: form actions relative to the flow execution, the field
names, the titles of error pages. The wording is this project's own.
"""

from __future__ import annotations

from html import escape

# The client-side storage keys Shibboleth v5 reads and writes through HTML5 localStorage.
STORAGE_KEYS = ("shib_idp_session_ss", "shib_idp_persistent_ss")


def _page(title: str, body: str, onload: str = "") -> str:
    onload_attr = f' onload="{onload}"' if onload else ""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{escape(title)}</title></head>\n<body{onload_attr}>\n<main>\n{body}\n</main>\n</body></html>\n"
    )


def _hidden(name: str, value: str = "") -> str:
    return f'<input type="hidden" name="{escape(name)}" value="{escape(value)}">'


def _noscript_continue() -> str:
    return (
        "<noscript><p>Your browser runs no JavaScript: press Continue to go on.</p>"
        '<button type="submit" name="_eventId_proceed">Continue</button></noscript>'
    )


def read_storage(action: str, csrf: str) -> str:
    """The page that asks the browser for its locally stored session (v5's client storage read)."""
    fields = [_hidden("csrf_token", csrf)]
    for key in STORAGE_KEYS:
        fields += [
            _hidden(f"shib_idp_ls_exception.{key}"),
            _hidden(f"shib_idp_ls_success.{key}", "false"),
            _hidden(f"shib_idp_ls_value.{key}"),
        ]
    fields += [_hidden("shib_idp_ls_supported"), _hidden("_eventId_proceed")]
    body = (
        f'<h1>Loading Session Information</h1>\n<form name="form1" action="{escape(action)}" method="post">\n'
        + "\n".join(fields) + "\n" + _noscript_continue() + "\n</form>\n"
        "<script>/* reads localStorage, fills the fields, then submits form1 */</script>"
    )
    return _page("Loading Session Information", body, onload="document.form1.submit()")


def write_storage(action: str, csrf: str) -> str:
    """The page that asks the browser to store the updated session (v5's client storage write)."""
    fields = [_hidden("csrf_token", csrf)]
    for key in STORAGE_KEYS:
        fields += [_hidden(f"shib_idp_ls_exception.{key}"), _hidden(f"shib_idp_ls_success.{key}", "false")]
    fields.append(_hidden("_eventId_proceed"))
    body = (
        f'<h1>Saving Session Information</h1>\n<form name="form1" action="{escape(action)}" method="post">\n'
        + "\n".join(fields) + "\n" + _noscript_continue() + "\n</form>\n"
        "<script>/* writes localStorage, records the outcome, then submits form1 */</script>"
    )
    return _page("Saving Session Information", body, onload="document.form1.submit()")


def login(action: str, csrf: str, sp_entity_id: str, username: str = "", error: str | None = None) -> str:
    error_html = f'<section><p class="form-element form-error">{escape(error)}</p></section>\n' if error else ""
    body = f"""<h1>Web Login Service</h1>
<p>Log in to <strong>{escape(sp_entity_id)}</strong></p>
<form action="{escape(action)}" method="post">
{_hidden("csrf_token", csrf)}
{error_html}<div class="form-element-wrapper">
<label for="username">Username</label>
<input class="form-element form-field" id="username" name="j_username" type="text" value="{escape(username)}">
</div>
<div class="form-element-wrapper">
<label for="password">Password</label>
<input class="form-element form-field" id="password" name="j_password" type="password" value="">
</div>
<div class="form-element-wrapper">
<input type="checkbox" name="donotcache" value="1" id="donotcache"><label for="donotcache">Don't remember login</label>
</div>
<div class="form-element-wrapper">
<button class="form-element form-button" type="submit" name="_eventId_proceed">Login</button>
</div>
</form>"""
    return _page("Web Login Service", body)


def stale_request() -> str:
    body = (
        "<h1>Stale Request</h1>\n<p>This login step is not known here any more: it was used already, "
        "expired, or belongs to a conversation this server never saw. Go back to the site you wanted "
        "to use and start again.</p>"
    )
    return _page("Stale Request", body)


def error(title: str, message: str) -> str:
    return _page(title, f"<h1>{escape(title)}</h1>\n<p>{escape(message)}</p>")


def post_response(acs_url: str, saml_response: str, relay_state: str | None) -> str:
    """The auto-submitting form that carries the SAML Response to the SP (HTTP-POST binding)."""
    relay = _hidden("RelayState", relay_state) if relay_state is not None else ""
    body = f"""<noscript><p><strong>Note:</strong> your browser runs no JavaScript: press Continue once.</p></noscript>
<form action="{escape(acs_url)}" method="post">
<div>{relay}{_hidden("SAMLResponse", saml_response)}</div>
<noscript><div><input type="submit" value="Continue"></div></noscript>
</form>"""
    return _page("Redirecting to the service", body, onload="document.forms[0].submit()")
