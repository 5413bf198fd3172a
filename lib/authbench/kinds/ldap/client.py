"""One LDAP connection that yields to gevent while it waits for the server.

python-ldap's synchronous calls (`simple_bind_s`, `search_s`) block inside libldap and stall every
greenlet of the process. Here every operation is sent with the asynchronous API, which returns a
message id at once; then the greenlet polls `result3(msgid, timeout=0)` and, while nothing is there,
sleeps on the connection's socket with `gevent.socket.wait_read`. Polling first matters: libldap may
already hold a whole answer in its buffer, and the socket would then never become readable again.

Left blocking (libldap offers no asynchronous form of them): the TCP connect, the TLS handshake and
StartTLS, each a short call on loopback, once per connection.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

import ldap
from gevent.socket import wait_read

from ...errors import AuthFailure

DEFAULT_TIMEOUT = 10.0  # seconds an operation (or a connect) may take before it is an error
SCOPES = {"base": ldap.SCOPE_BASE, "one": ldap.SCOPE_ONELEVEL, "sub": ldap.SCOPE_SUBTREE,
          "subordinates": ldap.SCOPE_SUBORDINATE}
DEREF = {"never": ldap.DEREF_NEVER, "always": ldap.DEREF_ALWAYS, "search": ldap.DEREF_SEARCHING,
         "find": ldap.DEREF_FINDING}
NO_ATTRIBUTES = ["1.1"]  # RFC 4511: return no attributes, the DN is all a search-then-bind needs
CONNECT_ERROR = "connect error"  # reasons that are not LDAP result codes
TIMEOUT = "timeout"
NO_ENTRY = "no entry found"
AMBIGUOUS = "more than one entry"


class LdapFailure(AuthFailure):
    """A failed operation; `reason` is the LDAP result code name and number, or a connection problem."""


@dataclass(frozen=True)
class Endpoint:
    """Where and how to connect; TLS certificates are verified unless `verify` is False."""

    url: str  # ldap://host:port or ldaps://host:port
    start_tls: bool = False
    verify: bool = True
    ca_file: str | None = None  # None: the system's CAs
    timeout: float = DEFAULT_TIMEOUT

    @property
    def port(self) -> int:
        return urlsplit(self.url).port or (636 if self.url.startswith("ldaps") else 389)


def tls_cause(endpoint: Endpoint) -> str | None:
    """Why an ldaps:// server refuses our TLS, read by a handshake of Python's own: libldap reports only "can't
    contact" (e.g. an untrusted certificate). None when the handshake succeeds or the endpoint is not ldaps."""
    if not endpoint.url.startswith("ldaps"):
        return None
    parts = urlsplit(endpoint.url)
    context = ssl.create_default_context(cafile=endpoint.ca_file)
    if not endpoint.verify:
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    try:
        with socket.create_connection((parts.hostname, endpoint.port), timeout=endpoint.timeout) as raw, \
                context.wrap_socket(raw, server_hostname=parts.hostname):
            return None
    except ssl.SSLCertVerificationError as exc:
        return f"TLS: {exc.verify_message}"
    except (ssl.SSLError, OSError) as exc:
        return f"TLS: {getattr(exc, 'reason', None) or exc}"


def reason_of(exc: ldap.LDAPError) -> LdapFailure:
    """LDAP result code as a reason (`invalidCredentials (49)`), connection problems by name."""
    info = exc.args[0] if exc.args and isinstance(exc.args[0], dict) else {}
    detail = str(info.get("info") or info.get("desc") or exc)
    if isinstance(exc, ldap.SERVER_DOWN | ldap.CONNECT_ERROR):
        return LdapFailure(CONNECT_ERROR, detail)
    if isinstance(exc, ldap.TIMEOUT):
        return LdapFailure(TIMEOUT, detail)
    name = type(exc).__name__
    code = info.get("result", getattr(exc, "errnum", None))
    words = name.lower().split("_")
    camel = words[0] + "".join(w.capitalize() for w in words[1:])
    return LdapFailure(f"{camel} ({code})" if code is not None else camel, detail)


class Connection:
    """A lazily opened connection; any failure closes it, the next operation opens a new one."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self._conn: ldap.ldapobject.SimpleLDAPObject | None = None
        self._bound_as: str | None = None  # set by bind_once only
        self.opened = 0  # connections opened so far (churn)

    @property
    def is_open(self) -> bool:
        return self._conn is not None

    def _open(self) -> ldap.ldapobject.SimpleLDAPObject:
        e = self.endpoint
        conn = ldap.initialize(e.url, bytes_mode=False)
        conn.set_option(ldap.OPT_PROTOCOL_VERSION, ldap.VERSION3)
        conn.set_option(ldap.OPT_REFERRALS, 0)
        conn.set_option(ldap.OPT_NETWORK_TIMEOUT, e.timeout)
        conn.set_option(ldap.OPT_TIMEOUT, e.timeout)
        if e.url.startswith("ldaps") or e.start_tls:
            conn.set_option(ldap.OPT_X_TLS_REQUIRE_CERT, ldap.OPT_X_TLS_DEMAND if e.verify else ldap.OPT_X_TLS_NEVER)
            if e.ca_file:
                conn.set_option(ldap.OPT_X_TLS_CACERTFILE, e.ca_file)
            conn.set_option(ldap.OPT_X_TLS_NEWCTX, 0)  # must come last: applies the TLS options above
        if e.start_tls:
            conn.start_tls_s()
        self.opened += 1
        return conn

    def close(self) -> None:
        conn, self._conn, self._bound_as = self._conn, None, None
        if conn is not None:
            with contextlib.suppress(ldap.LDAPError):
                conn.unbind_ext()

    def _wait(self, conn: ldap.ldapobject.SimpleLDAPObject, msgid: int) -> tuple:
        """Poll for the whole answer to `msgid`, sleeping on the socket between polls."""
        while True:
            rtype, rdata, _, _ = conn.result3(msgid, all=1, timeout=0)
            if rtype is not None:
                return rtype, rdata
            wait_read(conn.fileno(), timeout=self.endpoint.timeout,
                      timeout_exc=ldap.TIMEOUT({"desc": "no answer in time"}))

    def _operate(self, start: Callable[[ldap.ldapobject.SimpleLDAPObject], int]) -> tuple:
        try:
            if self._conn is None:
                self._conn = self._open()
            msgid = start(self._conn)
            return self._wait(self._conn, msgid)
        except ldap.LDAPError as exc:
            failure = reason_of(exc)
            if failure.reason in (CONNECT_ERROR, TIMEOUT):
                self.close()
            raise failure from None
        except OSError as exc:  # the socket went away under wait_read
            self.close()
            raise LdapFailure(CONNECT_ERROR, str(exc)) from None

    def bind(self, dn: str, password: str) -> None:
        """Simple bind; raises LdapFailure with the result code when the server refuses it."""
        self._operate(lambda conn: conn.simple_bind(dn, password))

    def bind_once(self, dn: str, password: str) -> None:
        """Bind unless already bound as `dn` on this connection (a service account's searches)."""
        if self._conn is not None and self._bound_as == dn:
            return
        try:
            self.bind(dn, password)
        except LdapFailure:
            self.close()  # never search on as whoever the connection was before
            raise
        self._bound_as = dn

    def search_dns(self, base: str, scope: int, filterstr: str, deref: int = ldap.DEREF_NEVER) -> list[str]:
        def start(conn: ldap.ldapobject.SimpleLDAPObject) -> int:
            conn.set_option(ldap.OPT_DEREF, deref)
            return conn.search_ext(base, scope, filterstr, NO_ATTRIBUTES)

        _, entries = self._operate(start)
        return [dn for dn, _ in entries if dn is not None]

    def find_dn(self, base: str, scope: int, filterstr: str, deref: int = ldap.DEREF_NEVER) -> str:
        """The one DN the filter selects, as a search-then-bind needs it."""
        dns = self.search_dns(base, scope, filterstr, deref)
        if not dns:
            raise LdapFailure(NO_ENTRY, filterstr)
        if len(dns) > 1:
            raise LdapFailure(AMBIGUOUS, filterstr)
        return dns[0]
