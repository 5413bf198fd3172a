"""A small cookie jar that keeps what a browser keeps during an SSO login, and nothing more.

Why not http.cookiejar: it costs tens of microseconds per request (policy objects, domain matching
over every cookie, request adapters), which is a noticeable share of a load generator's CPU. A
login needs far less: cookies are kept per host (without the port, as browsers do) and are always
host-only — a `Domain` attribute is not widened to sibling hosts; `Path`, `Secure`, `Max-Age` and
`Expires` (including deletion) and the `__Host-`/`__Secure-` prefixes are honoured.

Loopback hosts count as secure origins over plain http, as they do in current browsers, so `Secure`
cookies work against a local test server.

Each cookie also remembers the origin (scheme://host:port) and the path of the response that set it:
the browser does not need them to send cookies, but "a new SP session" is made by forgetting exactly
what the SP set (journeys/sp_session.py), whatever path and name the IdP gave its own cookies.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from http.cookiejar import http2time

LOOPBACK_HOSTS = frozenset(("127.0.0.1", "localhost", "::1", "[::1]"))  # and all of 127.0.0.0/8
MAX_COOKIES_PER_HOST = 50  # browsers keep at least 50; a misbehaving server must not grow a user's memory


class Cookie:
    __slots__ = ("name", "value", "path", "secure", "expires", "pair", "origin", "set_at")

    def __init__(self, name: str, value: str, path: str, secure: bool, expires: float | None,
                 origin: str = "", set_at: str = "") -> None:
        self.name, self.value, self.path = name, value, path
        self.secure, self.expires = secure, expires
        self.pair = f"{name}={value}"  # as the Cookie header sends it
        self.origin = origin  # scheme://host:port of the response that set it ("" when not told)
        self.set_at = set_at  # the path of the request that response answered

    def __repr__(self) -> str:  # values may be session secrets: leave them out
        return f"Cookie({self.name!r}, path={self.path!r}, secure={self.secure}, origin={self.origin!r})"


def default_path(request_path: str) -> str:
    """RFC 6265 5.1.4: the directory of the request path."""
    if not request_path.startswith("/"):
        return "/"
    cut = request_path.rfind("/")
    return request_path[:cut] if cut > 0 else "/"


def path_matches(request_path: str, cookie_path: str) -> bool:
    """RFC 6265 5.1.4 path-match."""
    if request_path == cookie_path:
        return True
    return request_path.startswith(cookie_path) and (cookie_path.endswith("/")
                                                     or request_path[len(cookie_path)] == "/")


def host_and_port(scheme: str, authority: str) -> tuple[str, int]:
    """The host (lower case, IPv6 in brackets) and port of a URL's authority; the scheme's port if none."""
    if authority.startswith("["):
        host, _, port_text = authority.partition("]")
        host += "]"
        port_text = port_text.lstrip(":")
    else:
        host, _, port_text = authority.partition(":")
    return host.lower(), int(port_text) if port_text else (443 if scheme == "https" else 80)


def origin_text(scheme: str, host: str, port: int) -> str:
    """An origin as `Cookie.origin` spells it: scheme://host:port, the port always written."""
    return f"{scheme}://{host}:{port}"


def is_secure_origin(scheme: str, host: str) -> bool:
    return scheme == "https" or host in LOOPBACK_HOSTS or (host.startswith("127.") and host[-1].isdigit())


class CookieJar:
    def __init__(self) -> None:
        self._hosts: dict[str, dict[tuple[str, str], Cookie]] = {}  # per host, oldest first

    def __iter__(self) -> Iterator[tuple[str, Cookie]]:
        """(host, cookie) for every cookie kept, expired ones included until they are next looked at."""
        for host, cookies in self._hosts.items():
            for cookie in cookies.values():
                yield host, cookie

    def __len__(self) -> int:
        return sum(len(cookies) for cookies in self._hosts.values())

    def clear(self, where: Callable[[str, Cookie], bool] | None = None) -> None:
        """Forget every cookie, or those for which `where(host, cookie)` is true."""
        if where is None:
            self._hosts.clear()
            return
        for host, cookies in self._hosts.items():
            for key in [key for key, cookie in cookies.items() if where(host, cookie)]:
                del cookies[key]

    def get(self, host: str, name: str) -> str | None:
        """The value of a cookie by name (any path), for tests and diagnostics."""
        for cookie in self._hosts.get(host, {}).values():
            if cookie.name == name:
                return cookie.value
        return None

    # -- from responses ---------------------------------------------------------------------------
    def store(self, set_cookie: str, host: str, request_path: str, secure_origin: bool,
              now: float | None = None, origin: str = "") -> None:
        """Apply one Set-Cookie header value received from `host` (at `origin`) for `request_path`."""
        pair, _, attributes = set_cookie.partition(";")
        name, sep, value = pair.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name:
            return  # a nameless cookie: ignored, as most browsers did for years
        path, secure, has_domain = "", False, False
        max_age: int | None = None
        expires_text = ""
        for attribute in attributes.split(";") if attributes else ():
            key, _, arg = attribute.partition("=")
            key = key.strip().lower()
            if key == "path":
                path = arg.strip()
            elif key == "secure":
                secure = True
            elif key == "max-age":
                arg = arg.strip()
                if arg.lstrip("-").isdigit():
                    max_age = int(arg)
            elif key == "expires":
                expires_text = arg
            elif key == "domain" and arg.strip():
                has_domain = True
        if not path.startswith("/"):
            path = default_path(request_path)
        if secure and not secure_origin:
            return  # RFC 6265bis: an insecure origin may not set Secure cookies
        if name.startswith("__Secure-") and not secure:
            return
        if name.startswith("__Host-") and (not secure or path != "/" or has_domain):
            return
        now = time.time() if now is None else now
        expires: float | None = None
        if max_age is not None:  # Max-Age wins over Expires
            expires = now + max_age if max_age > 0 else 0.0
        elif expires_text:
            expires = http2time(expires_text.strip())
        cookies = self._hosts.setdefault(host, {})
        key = (name, path)
        if expires is not None and expires <= now:
            cookies.pop(key, None)  # deletion
            return
        if key not in cookies and len(cookies) >= MAX_COOKIES_PER_HOST:
            return
        # a cookie set again keeps its place, and takes the origin that set it last
        cookies[key] = Cookie(name, value, path, secure, expires, origin, request_path)

    # -- for requests -----------------------------------------------------------------------------
    def header(self, host: str, request_path: str, secure_origin: bool, now: float | None = None) -> str:
        """The Cookie header value for a request, "" when there is none to send."""
        cookies = self._hosts.get(host)
        if not cookies:
            return ""
        chosen: list[Cookie] = []
        expired = longer_paths = False
        for cookie in cookies.values():
            if cookie.expires is not None:
                if now is None:
                    now = time.time()
                if cookie.expires <= now:
                    expired = True
                    continue
            if cookie.secure and not secure_origin:
                continue
            if cookie.path != "/":
                if not path_matches(request_path, cookie.path):
                    continue
                longer_paths = True
            chosen.append(cookie)
        if expired:
            limit = time.time() if now is None else now
            self.clear(lambda h, c: h == host and c.expires is not None and c.expires <= limit)
        if longer_paths and len(chosen) > 1:
            # Longer paths first, then older (RFC 6265). A host's cookies are kept oldest first (a cookie
            # set again keeps its place and age), so a stable sort by path length is enough.
            chosen.sort(key=_longer_path_first)
        return "; ".join([cookie.pair for cookie in chosen])


def _longer_path_first(cookie: Cookie) -> int:
    return -len(cookie.path)
