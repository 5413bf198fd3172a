"""A browser without JavaScript, made to cost a load generator as little CPU as possible.

Keep-alive connections per origin, the small cookie jar, redirects followed one by one (each hop is
its own named request, reported through `on_request`, and may be rerouted by `route`), forms parsed
with regular expressions. One instance per simulated user; not shared between threads or greenlets.

A rerouted request (say, the balancer's URL sent to one node) is still, to the browser, a request for
the URL it asked for: cookies are kept and sent for that URL's host and origin, relative links and
redirects resolve against it, and `Page.url` names it; only the connection (and `history`, and what
`on_request` reports) goes where `route` says. So moving a browser from node A to node B carries the
IdP's cookies exactly as a real browser's would when the balancer sends it to the other node.

Works with and without gevent's monkey patching: sockets come from the `socket`/`ssl` modules as
they are when a connection is opened.
"""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Callable
from urllib.parse import quote

from .connection import Connection, Response, Resumable
from .cookies import CookieJar, host_and_port, is_secure_origin, origin_text
from .forms import Form, Page, encode_form, resolve_url

MAX_REDIRECTS = 10
TIMEOUT = 10.0  # seconds per socket operation (connect, send, each read)
HISTORY_SIZE = 64  # hops remembered for diagnostics; bounded, a user runs thousands of journeys
USER_AGENT = "authbench/0.1 (no JavaScript)"
ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
REDIRECTS = frozenset((301, 302, 303, 307, 308))
FORM_TYPE = "application/x-www-form-urlencoded"

_URL = re.compile(r"(https?)://([^/?#]+)([^#]*)")
_SAFE_TARGET = "/?&=%:@!$'()*+,;~-._"

OnRequest = Callable[[str, str, str, int, float, int, BaseException | None], None]
# namer(method, url, page, previous_name) → the name of a redirect hop, once its response is known
Namer = Callable[[str, str, Page, str], str]


class TooManyRedirects(RuntimeError):
    pass


class UnsupportedURL(ValueError):
    """A link or redirect a browser without JavaScript cannot follow here (not http or https)."""


class HTTPStatusError(Exception):
    """What a request reports to statistics when its answer is a 4xx or 5xx status."""


def _strip_query(url: str) -> str:
    cut = url.find("?")
    return url if cut < 0 else url[:cut]


class FastBrowser:
    """`verify`: True (system CAs), a CA file/directory path, or False (insecure: no TLS verification)."""

    def __init__(self, *, verify: bool | str = True, route: Callable[[str], str] | None = None,
                 timeout: float = TIMEOUT, on_request: OnRequest | None = None, user_agent: str = USER_AGENT,
                 max_redirects: int = MAX_REDIRECTS, catch: Callable[[str], bool] | None = None,
                 accept: str = ACCEPT) -> None:
        self.verify = verify
        self.catch = catch  # a redirect to a URL it accepts is returned, not followed (an RP's redirect_uri)
        self.route = route
        self.timeout = timeout
        self.on_request = on_request
        self.max_redirects = max_redirects
        self.cookies = CookieJar()
        self.history: deque[tuple[str, str, int]] = deque(maxlen=HISTORY_SIZE)  # (method, url, status)
        self._connections: dict[str, Connection] = {}  # by scheme://authority
        self._tls_sessions: dict[str, Resumable] = {}  # by origin: what a new connection resumes
        self._fixed_head = f"User-Agent: {user_agent}\r\nAccept: {accept}\r\n"

    # -- the browser's state ----------------------------------------------------------------------
    def clear_cookies(self) -> None:
        """A new visitor: no cookies (connections are kept; see close_connections)."""
        self.cookies.clear()

    def forget_cookies(self, where: Callable[[str, str, str], bool]) -> None:
        """Drop the cookies for which where(host, path, name) is true."""
        self.cookies.clear(lambda host, cookie: where(host, cookie.path, cookie.name))

    def cookie_names(self) -> list[str]:
        return sorted({cookie.name for _host, cookie in self.cookies})

    def close_connections(self) -> None:
        """Close every keep-alive connection: the next request opens a new one (resuming the TLS session)."""
        for origin, connection in self._connections.items():
            connection.close()
            if connection.resume is not None:
                self._tls_sessions[origin] = connection.resume
        self._connections.clear()

    close = close_connections

    def __enter__(self) -> FastBrowser:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close_connections()

    @property
    def connects(self) -> int:
        """Connections opened by the currently kept connection objects (for tests and reports)."""
        return sum(connection.connects for connection in self._connections.values())

    @property
    def resumptions(self) -> int:
        """Of `connects`, those that resumed an earlier connection's TLS session."""
        return sum(connection.resumptions for connection in self._connections.values())

    # -- requests ---------------------------------------------------------------------------------
    def get(self, url: str, *, name: str | None = None, namer: Namer | None = None) -> Page:
        return self.request("GET", url, name=name, namer=namer)

    def submit(self, form: Form, values: dict[str, str] | None = None, button: str | None = None, *,
               name: str | None = None, namer: Namer | None = None) -> Page:
        pairs = form.submission(values, button)
        if form.method == "GET":
            return self.request("GET", _strip_query(form.action) + "?" + encode_form(pairs), name=name, namer=namer)
        return self.request("POST", form.action, pairs, name=name, namer=namer)

    def request(self, method: str, url: str, data: dict[str, str] | list[tuple[str, str]] | str | None = None, *,
                name: str | None = None, namer: Namer | None = None, headers: str = "") -> Page:
        """Send one request and follow its redirects; every hop is reported and named.

        The first hop is called `name` (default: the URL without its query); later hops are named
        by `namer` once their response is known, or inherit the name before them. `headers`: extra header
        lines ("Name: value\r\n" each) for the first hop. A redirect to a URL `catch` accepts ends the
        request: the Page returned has that URL, the redirect's status and no text.
        """
        if data is None:
            body = b""
        elif isinstance(data, str):
            body = data.encode()
        else:
            body = encode_form(list(data.items()) if isinstance(data, dict) else data).encode()
        hop_name = name or _strip_query(url)
        for hop in range(self.max_redirects + 1):
            sent = url if self.route is None else self.route(url)
            response, page, hop_name = self._hop(method, url, sent, body, hop_name if hop == 0 else None, namer,
                                                 hop_name, headers if hop == 0 else "")
            status = response.status
            if status in REDIRECTS and "location" in response.headers:
                url = resolve_url(url, response.headers["location"])  # against the URL asked for, as a browser
                if self.catch is not None and self.catch(url):
                    return Page(url, status, "")
                if status in (301, 302, 303) and method != "HEAD":
                    method, body = "GET", b""
                continue
            return page
        raise TooManyRedirects(f"more than {self.max_redirects} redirects from {_strip_query(url)}")

    def _hop(self, method: str, url: str, sent: str, body: bytes, name: str | None, namer: Namer | None,
             previous: str, headers: str = "") -> tuple[Response, Page, str]:
        """One request: `sent` is where it goes, `url` what the browser asked for (the same unless rerouted)."""
        scheme, authority, target = _split(sent)
        origin = scheme + "://" + authority
        connection = self._connections.get(origin) or self._connect(origin, scheme, authority)
        if sent == url:
            host, port, path = connection.host, connection.port, _strip_query(target)
        else:  # the browser's view: cookies for the URL it asked for
            scheme, asked, asked_target = _split(url)
            host, port = host_and_port(scheme, asked)
            path = _strip_query(asked_target)
        secure = is_secure_origin(scheme, host)
        head = f"{method} {target} HTTP/1.1\r\nHost: {authority}\r\n{self._fixed_head}{headers}"
        cookie = self.cookies.header(host, path, secure)
        if cookie:
            head += f"Cookie: {cookie}\r\n"
        if body or method == "POST":
            head += f"Content-Type: {FORM_TYPE}\r\nContent-Length: {len(body)}\r\n"
        started = time.perf_counter()
        try:
            response = connection.exchange((head + "\r\n").encode("latin-1") + body, head_only=method == "HEAD")
        except Exception as exc:
            self.history.append((method, sent, 0))
            if self.on_request is not None:
                self.on_request(name or previous, method, sent, 0, (time.perf_counter() - started) * 1000, 0, exc)
            raise
        if response.set_cookies:
            set_by = origin_text(scheme, host, port)
            for set_cookie in response.set_cookies:
                self.cookies.store(set_cookie, host, path, secure, origin=set_by)
        page = Page(url, response.status, _decode(response))
        if name is None:
            name = namer(method, url, page, previous) if namer is not None else previous
        self.history.append((method, sent, response.status))
        if self.on_request is not None:
            error = HTTPStatusError(f"HTTP {response.status} {page.title}".rstrip()) if response.status >= 400 \
                else None
            self.on_request(name, method, sent, response.status, response.elapsed_ms, len(response.body), error)
        return response, page, name

    def _connect(self, origin: str, scheme: str, authority: str) -> Connection:
        host, port = host_and_port(scheme, authority)
        connection = Connection(scheme, host, port, self.verify, self.timeout, self._tls_sessions.get(origin))
        self._connections[origin] = connection
        return connection


def _split(url: str) -> tuple[str, str, str]:
    """(scheme, authority, request target) of an http(s) URL, the target made ASCII."""
    match = _URL.match(url)
    if match is None:
        raise UnsupportedURL(f"not an http(s) URL: {url[:80]!r}")
    scheme, authority, target = match.groups()
    if not target:
        target = "/"
    elif not target.isascii():
        target = quote(target, safe=_SAFE_TARGET)
    return scheme, authority, target


def _decode(response: Response) -> str:
    content_type = response.headers.get("content-type", "")
    cut = content_type.find("charset=")
    charset = content_type[cut + 8:].split(";")[0].strip().strip('"') if cut >= 0 else "utf-8"
    try:
        return response.body.decode(charset, "replace")
    except LookupError:
        return response.body.decode("utf-8", "replace")
