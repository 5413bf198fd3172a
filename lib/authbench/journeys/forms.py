"""HTML forms as a browser without JavaScript submits them."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urljoin

import lxml.html

SUBMITTABLE = ("input", "select", "textarea")


@dataclass
class Form:
    action: str  # absolute URL
    method: str
    fields: dict[str, str] = field(default_factory=dict)  # what a no-JS submit sends (no buttons)
    buttons: dict[str, str] = field(default_factory=dict)  # named submit buttons and their values
    password_fields: list[str] = field(default_factory=list)
    text_fields: list[str] = field(default_factory=list)

    def names(self) -> set[str]:
        return set(self.fields) | set(self.buttons)


def _form_from(element, page_url: str) -> Form:
    form = Form(action=urljoin(page_url, element.get("action") or page_url),
                method=(element.get("method") or "get").upper())
    for control in element.iter(*SUBMITTABLE, "button"):
        name = control.get("name")
        if not name:
            continue
        kind = (control.get("type") or ("submit" if control.tag == "button" else "text")).lower()
        value = control.get("value") or ""
        if kind in ("submit", "image") or control.tag == "button":
            form.buttons.setdefault(name, value)
        elif kind in ("checkbox", "radio"):
            if control.get("checked") is not None:
                form.fields[name] = value or "on"
        elif control.tag == "textarea":
            form.fields[name] = control.text or ""
        else:
            form.fields[name] = value
            if kind == "password":
                form.password_fields.append(name)
            elif kind in ("text", "email"):
                form.text_fields.append(name)
    return form


def parse_forms(html: str, page_url: str) -> list[Form]:
    if not html.strip():
        return []
    document = lxml.html.document_fromstring(html)
    return [_form_from(element, page_url) for element in document.iter("form")]


def page_title(html: str) -> str:
    if not html.strip():
        return ""
    title = lxml.html.document_fromstring(html).find(".//title")
    return (title.text or "").strip() if title is not None else ""
