"""The IdP's SSO session: kept server-side under a cookie ID, or sealed whole into the cookie.

`shib_idp_session` carries an ID for the server-side stores; `shib_idp_session_ss` carries the
encrypted session itself (the stateless design — and what Shibboleth IdP v4/v5 does by default
with client-side storage).
"""

from __future__ import annotations

import os

from ..sealing import Sealer
from .stores import Store

SESSION_COOKIE = "shib_idp_session"
SEALED_SESSION_COOKIE = "shib_idp_session_ss"
SEALED_PURPOSE = "idp-session"


class StoredSessions:
    cookie = SESSION_COOKIE

    def __init__(self, store: Store, lifetime: int) -> None:
        self._store = store
        self._lifetime = lifetime

    def load(self, cookie_value: str | None) -> dict | None:
        return self._store.get(cookie_value) if cookie_value else None

    def save(self, session: dict) -> str:
        session_id = os.urandom(16).hex()
        self._store.put(session_id, session, self._lifetime)
        return session_id


class SealedSessions:
    cookie = SEALED_SESSION_COOKIE

    def __init__(self, sealer: Sealer, lifetime: int) -> None:
        self._sealer = sealer
        self._lifetime = lifetime

    def load(self, cookie_value: str | None) -> dict | None:
        return self._sealer.open(cookie_value, SEALED_PURPOSE)

    def save(self, session: dict) -> str:
        return self._sealer.seal(session, SEALED_PURPOSE, self._lifetime)
