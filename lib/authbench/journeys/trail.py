"""The hops of one journey as a person reads them, and the last page with its secrets taken out.

A `Trail` collects what the browser reports for every request (step, method, URL, status) at the cost of
one list append; it is only formatted when somebody needs it: the preflight's printout, or the evidence
kept for the first failures of each reason. URLs lose their query (SAMLRequest, RelayState, session
keys), pages lose passwords, SAML messages and cookie values (`redact_page`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .saml import page_url

REDACTED = "[redacted]"
MAX_PAGE_CHARS = 256 * 1024  # a kept page is cut after this many characters
MIN_SECRET_CHARS = 6  # shorter cookie values ("1", "true") are not worth replacing everywhere
SENSITIVE_FIELDS = ("SAMLResponse", "SAMLRequest", "SAMLart", "RelayState")  # values never kept
_INPUT = re.compile(r"<(?:input|textarea)\b[^>]*>", re.IGNORECASE)
_NAME = re.compile(r"""\bname\s*=\s*["']?([^"'\s>]+)""", re.IGNORECASE)
_PASSWORD_TYPE = re.compile(r"""\btype\s*=\s*["']?password""", re.IGNORECASE)
_VALUE = re.compile(r"""(\bvalue\s*=\s*)(?:"[^"]*"|'[^']*'|[^\s>]+)""", re.IGNORECASE)
_IN_URL = re.compile(r"\b(" + "|".join(SENSITIVE_FIELDS) + r")=[^&\"'\s<>]+")

Hop = tuple[str, str, str, int, "BaseException | None"]  # (step, method, url, status, exception)


class Trail:
    """What one journey requested, hop by hop; `record` has the browser's `on_request` signature."""

    __slots__ = ("hops",)

    def __init__(self) -> None:
        self.hops: list[Hop] = []

    def record(self, name: str, method: str, url: str, status: int, _elapsed_ms: float, _length: int,
               exception: BaseException | None) -> None:
        self.hops.append((name, method, url, status, exception))

    def clear(self) -> None:
        self.hops.clear()

    @property
    def last_step(self) -> str:
        return self.hops[-1][0] if self.hops else ""

    def lines(self, titles: Iterable[str] = ()) -> list[str]:
        """One line per hop: number, method, status, URL without query, step, and the page's title.

        `titles` are those of the pages walked (`SSOOutcome.pages`): one per request that was not a
        redirect, in order, which is how they are matched to hops.
        """
        pending = iter(titles)
        lines = []
        for number, (step, method, url, status, exception) in enumerate(self.hops, 1):
            title = "" if status == 0 or 300 <= status < 400 else next(pending, "")
            shown = f"{status:>3}" if status else "---"
            line = f"{number:>2}. {method:<4} {shown} {page_url(url)}  [{step}]"
            if title:
                line += f"  {title!r}"
            if status == 0 and exception is not None:
                line += f"  {type(exception).__name__}: {exception}"
            lines.append(line)
        return lines


def redact_page(html: str, passwords: Iterable[str] = (), cookie_values: Iterable[str] = ()) -> str:
    """A page fit to keep: password and SAML fields emptied, the passwords and cookie values given replaced
    wherever they appear, and the whole cut to MAX_PAGE_CHARS."""

    def input_tag(match: re.Match[str]) -> str:
        tag = match.group(0)
        name = _NAME.search(tag)
        if _PASSWORD_TYPE.search(tag) or (name and name.group(1) in SENSITIVE_FIELDS):
            return _VALUE.sub(lambda m: f'{m.group(1)}"{REDACTED}"', tag)
        return tag

    text = _INPUT.sub(input_tag, html)
    text = _IN_URL.sub(lambda m: f"{m.group(1)}={REDACTED}", text)
    secrets = {p for p in passwords if p} | {v for v in cookie_values if len(v) >= MIN_SECRET_CHARS}
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    if len(text) > MAX_PAGE_CHARS:
        text = text[:MAX_PAGE_CHARS] + f"\n<!-- authbench: cut after {MAX_PAGE_CHARS} characters -->\n"
    return text
