"""HTML pages and forms as a browser without JavaScript sees and submits them.

Why regular expressions and not a DOM parser: an SSO walk only needs the <title> and the forms' controls,
and building a DOM for every page cost more CPU than everything else a request does. The patterns
are precompiled, attribute values are HTML-unescaped, comments, scripts and styles are skipped.
Login pages are recognised by their field names (`LoginFields`), with presets for common IdPs.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from html import unescape
from urllib.parse import quote_plus, urljoin

# A tag's attribute text up to its ">": quoted values may contain ">"; possessive, so no backtracking.
_TAG_REST = re.compile(r"((?:[^>\"']++|\"[^\"]*+\"|'[^']*+')*+)>?")
_IGNORED = re.compile(r"<!--.*?-->|<(script|style)\b.*?</\1\s*>", re.I | re.S)
_CONTROL_START = re.compile(r"<(input|button|select|textarea)(?=[\s/>])", re.I)
_ATTR = re.compile(r"([^\s\"'>/=]+)(?:\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s\"'>]+)))?")
# The most common control, <input type="hidden" name="…" value="…">: up to three plain double-quoted
# type/name/value attributes, read with one match instead of a loop over every attribute.
_PLAIN_ATTRS = re.compile(r'\s*+(type|name|value)="([^"&]*+)"(?:\s++(type|name|value)="([^"&]*+)")?'
                          r'(?:\s++(type|name|value)="([^"&]*+)")?\s*+/?')
LONG_ATTRIBUTES = 300  # characters; longer attribute texts (a SAMLResponse value) are split, not matched
_OPTION = re.compile(r"<option\b((?:[^>\"']++|\"[^\"]*+\"|'[^']*+')*+)>([^<]*)", re.I)
_SELECT_CLOSE = re.compile(r"</select\s*>", re.I)
_TEXTAREA_CLOSE = re.compile(r"</textarea\s*>", re.I)
_TITLE = re.compile(r"<title\b[^>]*>(.*?)</title\s*>", re.I | re.S)
_TAG_NAME_END = frozenset(" \t\r\n\f/>")

SUBMIT_TYPES = frozenset(("submit", "image"))
NOT_SUBMITTED_TYPES = frozenset(("button", "reset", "file"))
TEXT_TYPES = frozenset(("text", "email"))

# application/x-www-form-urlencoded as browsers write it: ASCII alphanumerics and *-._ kept, space as +.
_URL_SAFE = (string.ascii_letters + string.digits + "*-._").encode()
_URL_ESCAPES = {c: "+" if c == 32 else f"%{c:02X}" for c in range(128)}


@dataclass
class Form:
    action: str  # absolute URL
    method: str
    fields: dict[str, str] = field(default_factory=dict)  # what a no-JS submit sends (no buttons)
    buttons: dict[str, str] = field(default_factory=dict)  # named submit buttons and their values
    password_fields: list[str] = field(default_factory=list)
    text_fields: list[str] = field(default_factory=list)
    id: str = ""
    name: str = ""
    repeated: list[tuple[str, str]] = field(default_factory=list)  # further values of a repeated name

    def names(self) -> set[str]:
        return set(self.fields) | set(self.buttons)

    def submission(self, values: dict[str, str] | None = None, button: str | None = None) -> list[tuple[str, str]]:
        """The (name, value) pairs a browser sends: fields, `values` typed in, the button pressed."""
        data = {**self.fields, **values} if values else dict(self.fields)
        if button is not None:
            data[button] = self.buttons.get(button, data.get(button, ""))
        pairs = list(data.items())
        if self.repeated:
            pairs += [(n, v) for n, v in self.repeated if not values or n not in values]
        return pairs


def encode_form(pairs: list[tuple[str, str]]) -> str:
    return "&".join(_quote(name) + "=" + _quote(value) for name, value in pairs)


def _quote(text: str) -> str:
    """quote_plus, fast for long ASCII values (a SAMLResponse is kilobytes of base64): one str.replace per
    distinct unsafe character instead of one Python step per character."""
    if not text.isascii():
        return quote_plus(text, safe="*").replace("~", "%7E")
    unsafe = text.encode("ascii").translate(None, _URL_SAFE)
    if not unsafe:
        return text
    if b"%" in unsafe:
        text = text.replace("%", "%25")
    for byte in set(unsafe):
        if byte != 37 and byte != 32:  # "%" done first, " " last: their escapes contain characters escaped here
            text = text.replace(chr(byte), _URL_ESCAPES[byte])
    return text.replace(" ", "+") if 32 in unsafe else text


def _attributes(text: str) -> dict[str, str]:
    """Attribute names (lower-cased) and values (unescaped) of one tag; the first of a repeated name wins."""
    if len(text) < LONG_ATTRIBUTES:
        plain = _PLAIN_ATTRS.fullmatch(text)
        if plain is not None:
            first, first_value, second, second_value, third, third_value = plain.groups()
            attrs = {first: first_value}
            if second is not None:
                attrs.setdefault(second, second_value)
                if third is not None:
                    attrs.setdefault(third, third_value)
            return attrs
    elif "'" not in text and "&" not in text:
        split = _split_attributes(text)
        if split is not None:
            return split
    attrs = {}
    for name, double_quoted, single_quoted, bare in _ATTR.findall(text):
        name = name.lower()
        if name not in attrs:
            value = double_quoted or single_quoted or bare
            attrs[name] = unescape(value) if "&" in value else value
    return attrs


def _split_attributes(text: str) -> dict[str, str] | None:
    """Plain markup (values double-quoted, no entities) split at the quotes: C speed for a value of many
    kilobytes (a SAMLResponse), where a regular expression steps through every character. None if not plain."""
    parts = text.split('"')
    if not len(parts) & 1:
        return None
    attrs: dict[str, str] = {}
    for index in range(0, len(parts) - 1, 2):
        head = parts[index].rstrip()
        names = head[:-1].split() if head.endswith("=") else None
        if not names or any("=" in name for name in names):
            return None
        for flag in names[:-1]:
            attrs.setdefault(flag.lower(), "")
        attrs.setdefault(names[-1].lower(), parts[index + 1])
    tail = parts[-1].split()
    if any("=" in flag for flag in tail):
        return None
    for flag in tail:
        if flag != "/":
            attrs.setdefault(flag.lower(), "")
    return attrs


def _tag_rest(html: str, start: int) -> tuple[str, int]:
    """The attribute text of the tag whose name ends at `start`, and the index after its ">"."""
    end = html.find(">", start)
    if end < 0:
        return html[start:], len(html)
    text = html[start:end]
    if "'" not in text and not text.count('"') & 1:
        return text, end + 1  # no quote left open, so this ">" ends the tag
    match = _TAG_REST.match(html, start)
    assert match is not None  # the pattern matches the empty string
    return match.group(1), match.end()


def _select_value(html: str, start: int, limit: int) -> tuple[str | None, int]:
    close = _SELECT_CLOSE.search(html, start, limit)
    end = close.start() if close else limit
    first = None
    for option in _OPTION.finditer(html, start, end):
        attrs = _attributes(option.group(1))
        value = attrs["value"] if "value" in attrs else unescape(option.group(2)).strip()
        if "selected" in attrs:
            return value, close.end() if close else limit
        if first is None and "disabled" not in attrs:
            first = value
    return first, close.end() if close else limit


def _form(open_attrs: dict[str, str], html: str, start: int, limit: int, page_url: str) -> Form:
    """The form whose controls lie in html[start:limit]."""
    action = open_attrs.get("action") or page_url
    form = Form(action=resolve_url(page_url, action), method=(open_attrs.get("method") or "get").upper(),
                id=open_attrs.get("id", ""), name=open_attrs.get("name", ""))
    position = start
    while match := _CONTROL_START.search(html, position, limit):
        tag = match.group(1).lower()
        text, position = _tag_rest(html, match.end())
        attrs = _attributes(text)
        if tag == "textarea":
            close = _TEXTAREA_CLOSE.search(html, position, limit)
            value: str | None = unescape(html[position:close.start() if close else limit])
            position = close.end() if close else limit
        elif tag == "select":
            value, position = _select_value(html, position, limit)
        else:
            value = attrs.get("value", "")
        name = attrs.get("name")
        if not name or "disabled" in attrs or value is None:
            continue
        kind = attrs.get("type", "text" if tag == "input" else "submit" if tag == "button" else tag).lower()
        if tag == "button":
            if kind == "submit":
                form.buttons.setdefault(name, value)
        elif kind in SUBMIT_TYPES:
            form.buttons.setdefault(name, value)
        elif kind in ("checkbox", "radio"):
            if "checked" in attrs:
                _add(form, name, value or "on")
        elif kind not in NOT_SUBMITTED_TYPES:
            _add(form, name, value)
            if kind == "password":
                form.password_fields.append(name)
            elif kind in TEXT_TYPES:
                form.text_fields.append(name)
    return form


def _add(form: Form, name: str, value: str) -> None:
    if name in form.fields:
        form.repeated.append((name, value))
    else:
        form.fields[name] = value


def parse_forms(html: str, page_url: str) -> list[Form]:
    lowered = html.lower()
    if "<form" not in lowered:
        return []
    if "<!--" in lowered or "<script" in lowered or "<style" in lowered:
        html = _IGNORED.sub("", html)
        lowered = html.lower()
    if len(lowered) != len(html):  # a few non-ASCII letters change length when lower-cased
        lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in html)
    forms = []
    position = 0
    while (start := lowered.find("<form", position)) >= 0:
        position = start + 5
        if position < len(html) and html[position] not in _TAG_NAME_END:
            continue  # <formula> or the like
        text, body = _tag_rest(html, position)
        close = lowered.find("</form", body)
        limit = close if close >= 0 else len(html)
        forms.append(_form(_attributes(text), html, body, limit, page_url))
        position = limit
    return forms


def page_title(html: str) -> str:
    match = _TITLE.search(html)
    return unescape(match.group(1)).strip() if match else ""


def resolve_url(base: str, reference: str) -> str:
    """urljoin, with the cases SSO pages use (absolute URL, absolute path, query only) done cheaply."""
    if reference.startswith(("https://", "http://")):
        return reference
    if reference.startswith("/") and not reference.startswith("//"):
        scheme_end = base.find("://")
        path_start = base.find("/", scheme_end + 3) if scheme_end > 0 else -1
        return (base if path_start < 0 else base[:path_start]) + reference
    if reference.startswith("?"):
        return base.split("?", 1)[0].split("#", 1)[0] + reference
    return urljoin(base, reference)


class Page:
    """A response as the walker sees it; title and forms are parsed on first use only."""

    __slots__ = ("url", "status", "text", "_title", "_forms", "kind")

    def __init__(self, url: str, status: int, text: str) -> None:
        self.url, self.status, self.text = url, status, text
        self._title: str | None = None
        self._forms: list[Form] | None = None
        self.kind: object = None  # what the page is to a journey, cached by the walker

    @property
    def title(self) -> str:
        if self._title is None:
            self._title = page_title(self.text)
        return self._title

    def forms(self) -> list[Form]:
        if self._forms is None:
            self._forms = parse_forms(self.text, self.url)
        return self._forms

    def __repr__(self) -> str:
        return f"Page({self.status} {self.title!r} at {self.url.split('?')[0]})"


@dataclass(frozen=True)
class LoginFields:
    """How an IdP's login form names its controls; `form` narrows which form (id, name or part of action)."""

    username: str
    password: str
    submit: str = ""  # the button to press, if the form names one ("" for none)
    form: str = ""

    def matches(self, form: Form) -> bool:
        if self.password not in form.password_fields or self.username not in form.fields:
            return False
        return not self.form or self.form in (form.id, form.name) or self.form in form.action


SHIBBOLETH = LoginFields("j_username", "j_password", "_eventId_proceed")
KEYCLOAK = LoginFields("username", "password", "login", form="kc-form-login")
SIMPLESAMLPHP = LoginFields("username", "password")
PRESETS = (SHIBBOLETH, KEYCLOAK, SIMPLESAMLPHP)  # most specific first


def find_login_form(forms: list[Form], candidates: tuple[LoginFields, ...] = PRESETS
                    ) -> tuple[Form, LoginFields] | None:
    """The first form that one of the candidate field sets fits (presets tried in order)."""
    for fields in candidates:
        for form in forms:
            if fields.matches(form):
                return form, fields
    return None
