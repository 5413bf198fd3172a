"""What an operator may demand of the page a login ends on, beyond the walk's own rule.

The walk's rule needs no marker of any SP: after the SAMLResponse is posted, the login succeeded when the
SP answers with a 2xx page that is neither a login form nor a page of the IdP (see `journeys.saml`). Real
SPs show the user however they like, or not at all; when a given SP is known to show something, say so:
`--expect 'Welcome, {user}'`, `--expect-regex`, `--expect-status 200`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

USER_PLACEHOLDER = "{user}"  # replaced by the account's user name (escaped inside a regex)


@dataclass(frozen=True)
class SuccessRule:
    """Extra demands on the final page; the empty rule (the default) demands nothing more."""

    text: str = ""  # literal text the page must contain
    regex: str = ""  # a regular expression the page must match (re.search)
    status: int | None = None  # the exact HTTP status of the final page (default: any 2xx)
    _compiled: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.regex:
            try:
                compiled = re.compile(self.regex.replace(USER_PLACEHOLDER, "user"))
            except re.error as exc:
                raise ValueError(f"--expect-regex {self.regex!r} is not a regular expression: {exc}") from None
            if USER_PLACEHOLDER not in self.regex:  # compile once; with {user} it depends on the account
                object.__setattr__(self, "_compiled", compiled)
        if self.status is not None and not 100 <= self.status <= 599:
            raise ValueError(f"--expect-status {self.status} is not an HTTP status (100-599)")

    @property
    def empty(self) -> bool:
        return not self.text and not self.regex and self.status is None

    def status_ok(self, status: int) -> bool:
        return status == self.status if self.status is not None else 200 <= status < 300

    def unmet(self, text: str, username: str) -> str | None:
        """Why a page's text does not satisfy the rule (never quoting the page), or None if it does."""
        if self.text:
            wanted = self.text.replace(USER_PLACEHOLDER, username)
            if wanted not in text:
                return f"page lacks --expect {wanted!r}"
        if self.regex:
            pattern = self._compiled or re.compile(self.regex.replace(USER_PLACEHOLDER, re.escape(username)))
            if pattern.search(text) is None:
                return f"page does not match --expect-regex {pattern.pattern!r}"
        return None

    def describe(self) -> dict[str, object]:
        """For the run's record: what was demanded (no secrets in it by construction)."""
        rule: dict[str, object] = {"default": "2xx page of the SP after the SAML response, not a login form "
                                              "and not an IdP page"}
        if self.text:
            rule["expect"] = self.text
        if self.regex:
            rule["expect_regex"] = self.regex
        if self.status is not None:
            rule["expect_status"] = self.status
        return rule


DEFAULT_RULE = SuccessRule()
