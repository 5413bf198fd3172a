"""Password checks against LDAP the way Shibboleth's LDAP authenticator does them: search, then bind.

Each worker thread keeps two connections: one bound as the IdP's service account for searches, one
for binding as users. A dropped connection (slapd restarted) is reopened once before giving up.
"""

from __future__ import annotations

import contextlib
import threading

import ldap
from ldap.filter import escape_filter_chars

NETWORK_TIMEOUT = 2.0  # seconds to connect
OPERATION_TIMEOUT = 5.0  # seconds for one LDAP operation
ATTRIBUTES = ["uid", "mail", "displayName", "givenName", "sn", "cn"]


class DirectoryUnavailable(RuntimeError):
    """slapd could not be reached; the login cannot be decided either way."""


class Directory:
    def __init__(self, url: str, bind_dn: str, bind_password: str, base: str) -> None:
        self._url = url
        self._bind_dn = bind_dn
        self._bind_password = bind_password
        self._base = base
        self._local = threading.local()

    def _open(self) -> ldap.ldapobject.LDAPObject:
        conn = ldap.initialize(self._url)
        conn.set_option(ldap.OPT_PROTOCOL_VERSION, 3)
        conn.set_option(ldap.OPT_NETWORK_TIMEOUT, NETWORK_TIMEOUT)
        conn.set_option(ldap.OPT_TIMEOUT, OPERATION_TIMEOUT)
        conn.set_option(ldap.OPT_REFERRALS, 0)
        return conn

    def _connection(self, role: str) -> ldap.ldapobject.LDAPObject:
        conn = getattr(self._local, role, None)
        if conn is None:
            conn = self._open()
            if role == "search":
                conn.simple_bind_s(self._bind_dn, self._bind_password)
            setattr(self._local, role, conn)
        return conn

    def _drop(self, role: str) -> None:
        conn = getattr(self._local, role, None)
        setattr(self._local, role, None)
        if conn is not None:
            with contextlib.suppress(ldap.LDAPError):
                conn.unbind_s()

    def _with_retry(self, role: str, action):
        for attempt in (1, 2):
            try:
                return action(self._connection(role))
            except (ldap.SERVER_DOWN, ldap.TIMEOUT, ldap.CONNECT_ERROR, ldap.UNAVAILABLE) as exc:
                self._drop(role)
                if attempt == 2:
                    raise DirectoryUnavailable(f"LDAP {self._url}: {type(exc).__name__}") from exc
        raise AssertionError("unreachable")

    def lookup(self, user: str) -> tuple[str, dict[str, str]] | None:
        """(DN, attributes) of the user, or None when there is no such user."""
        query = f"(uid={escape_filter_chars(user)})"

        def search(conn):
            return conn.search_ext_s(self._base, ldap.SCOPE_ONELEVEL, query, ATTRIBUTES, sizelimit=2)

        found = [(dn, attrs) for dn, attrs in self._with_retry("search", search) if dn]
        if len(found) != 1:
            return None
        dn, raw = found[0]
        return dn, {name: values[0].decode() for name, values in raw.items() if values}

    def authenticate(self, user: str, password: str) -> dict[str, str] | None:
        """The user's attributes when the password is right, None when user or password is wrong."""
        if not user or not password:  # an empty password would be an anonymous bind: never a login
            return None
        entry = self.lookup(user)
        if entry is None:
            return None
        dn, attributes = entry

        def bind(conn):
            try:
                conn.simple_bind_s(dn, password)
                return True
            except ldap.INVALID_CREDENTIALS:
                return False

        return attributes if self._with_retry("bind", bind) else None
