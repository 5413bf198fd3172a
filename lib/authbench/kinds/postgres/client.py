"""One database login, timed by its caller: connect, authenticate, one query, disconnect.

pg8000 is pure Python over the standard `socket` module, so under Locust (gevent's patched sockets)
the users of one process overlap their logins instead of queueing behind each other (measured in
docs/database-logins.md). Failures become a `LoginFailure` whose reason is stable per cause:
the server's SQLSTATE with its condition name (`invalid_authorization_specification (28000)`),
or `connect error` / `timeout` when no server answered.
"""

from __future__ import annotations

import contextlib
import socket
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

import pg8000.native

from ...errors import AuthFailure

DEFAULT_PORT = 5432
DEFAULT_DATABASE = "postgres"
DEFAULT_TIMEOUT = 10.0
QUERY = "SELECT 1"
SCHEMES = ("postgresql://", "postgres://")
CONNECT_ERROR = "connect error"
TIMEOUT = "timeout"
PROTOCOL_ERROR = "protocol error"

# The SQLSTATEs a login meets (PostgreSQL's appendix A); others keep their bare code.
CONDITIONS = {
    "28000": "invalid_authorization_specification",  # what an LDAP (or any hba) refusal says to a client
    "28P01": "invalid_password",
    "3D000": "invalid_catalog_name",  # no such database
    "53300": "too_many_connections",
    "57P03": "cannot_connect_now",  # starting up or shutting down
    "08P01": "protocol_violation",
}


class LoginFailure(AuthFailure):
    """A database login that failed; `reason` from the SQLSTATE condition or the connection."""


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int = DEFAULT_PORT
    database: str = DEFAULT_DATABASE
    timeout: float = DEFAULT_TIMEOUT

    @property
    def url(self) -> str:
        return f"postgresql://{self.host}:{self.port}/{self.database}"

    @classmethod
    def from_url(cls, url: str, timeout: float = DEFAULT_TIMEOUT) -> Endpoint:
        """postgresql://host[:port][/database]; ValueError naming what is wrong (user info is not taken)."""
        if not url.startswith(SCHEMES):
            raise ValueError(f"{url!r} is not a postgresql://host:port/database URL")
        parts = urlsplit(url)
        if parts.username or parts.password:
            raise ValueError("put no user or password in the postgresql:// URL: accounts come from --accounts")
        try:
            port = parts.port or DEFAULT_PORT
        except ValueError:
            raise ValueError(f"{url!r} has an invalid port") from None
        if not parts.hostname:
            raise ValueError(f"{url!r} names no host")
        return cls(parts.hostname, port, unquote(parts.path.lstrip("/")) or DEFAULT_DATABASE, timeout)


def reason_of(exc: Exception) -> LoginFailure:
    """pg8000's exception → a stable reason and the server's message as detail."""
    if isinstance(exc, pg8000.native.DatabaseError) and exc.args and isinstance(exc.args[0], dict):
        fields = exc.args[0]
        code = str(fields.get("C", ""))
        name = CONDITIONS.get(code)
        return LoginFailure(f"{name} ({code})" if name else f"SQLSTATE {code}", str(fields.get("M", "")))
    cause = exc.__cause__ or exc.__context__
    if isinstance(exc, TimeoutError | socket.timeout) or isinstance(cause, TimeoutError | socket.timeout):
        return LoginFailure(TIMEOUT, str(exc))
    if isinstance(exc, pg8000.native.InterfaceError):
        text = str(exc)
        if "create a connection" in text or isinstance(cause, OSError):
            return LoginFailure(CONNECT_ERROR, f"{text} ({cause})" if cause else text)
        return LoginFailure(PROTOCOL_ERROR, text)
    if isinstance(exc, OSError):
        return LoginFailure(CONNECT_ERROR, f"{type(exc).__name__}: {exc}")
    raise exc


def login(endpoint: Endpoint, user: str, password: str) -> None:
    """Connect, authenticate, run QUERY, disconnect; raises LoginFailure."""
    try:
        conn = pg8000.native.Connection(user, host=endpoint.host, port=endpoint.port, database=endpoint.database,
                                        password=password, timeout=endpoint.timeout)
    except Exception as exc:  # noqa: BLE001 - classified, or re-raised when unknown
        raise reason_of(exc) from None
    try:
        rows = conn.run(QUERY)
    except Exception as exc:  # noqa: BLE001
        raise reason_of(exc) from None
    finally:
        with contextlib.suppress(Exception):  # a failed goodbye does not undo a login
            conn.close()
    if rows != [[1]]:
        raise LoginFailure("unexpected answer", f"{QUERY} returned {rows!r}")
