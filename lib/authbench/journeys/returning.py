"""Returning users: one account and one browser per virtual user, a new SP session each journey.

Why: "do logged-in users stay logged in?" is only measurable when a user comes back with the IdP's
cookies it had, to an SP that has forgotten it. Each journey therefore starts by dropping what the
SP's origin set (`sp_session.forget_sp_session`) and keeping what the IdP's origins set, learnt from
the IdP steps of the user's earlier journeys. The journey is then classified by whether the IdP asked
for the password (`SESSION_CLASSES`); a failed journey keeps the class of what was seen before it failed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from .cookies import CookieJar
from .saml import CONSENT, IDP_RESPONSE, IDP_SSO, LOGIN_FORM, LOGIN_POST, STORAGE_READ, STORAGE_WRITE
from .sp_session import Forgotten, forget_sp_session
from .trail import Hop

# What a journey of a returning-user run was (the samples' `session` column; "" outside such runs).
FRESH = "fresh"  # the user had no IdP session yet: the password was asked, as expected
REUSED = "reused"  # SSO: the IdP knew the user, no password asked
LOST = "lost"  # the user had logged in, yet the IdP asked for the password again: its SSO session was lost
SP_SESSION = "sp-session"  # the journey never reached the IdP: the SP still knew the user (not an SSO measure)
SESSION_CLASSES = (FRESH, REUSED, LOST, SP_SESSION)
IDP_STEPS = frozenset((IDP_SSO, STORAGE_READ, STORAGE_WRITE, LOGIN_FORM, LOGIN_POST, CONSENT, IDP_RESPONSE))


def idp_bases(hops: Iterable[Hop], steps: frozenset[str] = IDP_STEPS) -> set[str]:
    """The IdP's base URLs seen in a journey: origin and first path segment of each IdP step's URL.

    The first segment (`/idp` for Shibboleth) is what tells the IdP's cookies from the SP's when both
    live on one origin; on separate origins the origin alone decides (see sp_session).
    """
    bases = set()
    for step, _method, url, _status, _exception in hops:
        if step in steps:
            parts = urlsplit(url)
            segment = parts.path.lstrip("/").split("/", 1)[0]
            bases.add(f"{parts.scheme}://{parts.netloc}/{segment}" if segment else f"{parts.scheme}://{parts.netloc}")
    return bases


def classify(logged_in: bool, reached_idp: bool, password_asked: bool, ok: bool) -> str:
    """The class of one journey of a returning user (see the module's constants); "" for a journey that
    failed before reaching the IdP (nothing is known of its SSO session)."""
    if not reached_idp:
        return SP_SESSION if ok else ""
    if password_asked:
        return LOST if logged_in else FRESH
    return REUSED


@dataclass
class ReturningUser:
    """One virtual user's memory across journeys: its account, whether it logged in, where its IdP is."""

    account: object = None  # accounts.Account, picked at the first journey and kept
    logged_in: bool = False
    idp_urls: set[str] = field(default_factory=set)
    idp_steps: frozenset[str] = IDP_STEPS  # the steps that are the IdP's (another protocol's: the OIDC provider's)

    def new_sp_session(self, jar: CookieJar, sp_url: str) -> Forgotten | None:
        """Forget the SP's cookies before a journey; nothing to do before the first IdP was seen."""
        if not self.idp_urls:
            jar.clear()  # nothing learnt yet (e.g. the first journey failed before the IdP): start clean
            return None
        return forget_sp_session(jar, sp_url, sorted(self.idp_urls))

    def after(self, hops: list[Hop], ok: bool, password_asked: bool) -> str:
        """Learn from a finished journey; returns its class."""
        bases = idp_bases(hops, self.idp_steps)
        kind = classify(self.logged_in, bool(bases), password_asked, ok)
        self.idp_urls |= bases
        if ok:
            self.logged_in = True
        return kind


def journey_account(returning: ReturningUser | None, browser, accounts, sp_url: str | None):
    """Who logs in this journey, with the cookies it starts with: anyone, with none (every journey a full
    authentication), or a returning user's own account, its IdP's cookies kept and the SP's (at `sp_url`; None for
    a virtual SP or RP, which keeps none) dropped. `browser` has `cookies` and `clear_cookies`, `accounts` `pick`."""
    if returning is None:
        browser.clear_cookies()
        return accounts.pick()
    returning.account = returning.account or accounts.pick()
    if sp_url is not None:
        returning.new_sp_session(browser.cookies, sp_url)
    return returning.account

