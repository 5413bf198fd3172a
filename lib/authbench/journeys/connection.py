"""One HTTP/1.1 keep-alive connection, over TLS or not: send a request, read the whole response.

Why hand-written: a login is ten small requests, and per request the generic clients spend more CPU
in header objects and parser callbacks than in TLS. This speaks just the HTTP/1.1 a browser needs
from a web server (Content-Length, chunked, read-until-close, 1xx skipped) over a `transport.Stream`
(cooperative under gevent, blocking otherwise).
"""

from __future__ import annotations

import os
import ssl
import time

from .transport import Stream

MAX_HEAD_BYTES = 64 * 1024  # a response head larger than this is not a web page
MAX_BODY_BYTES = 16 * 1024 * 1024
CRLF2 = b"\r\n\r\n"
USED_HEADERS = frozenset(("content-length", "transfer-encoding", "connection", "location", "set-cookie",
                          "content-type"))


class ProtocolError(ConnectionError):
    """The server's answer is not HTTP/1.x as this client understands it."""


class NothingReceived(ConnectionError):
    """The connection ended before the first byte of a response (a stale keep-alive connection)."""


class Response:
    __slots__ = ("status", "headers", "set_cookies", "body", "elapsed_ms")

    def __init__(self, status: int, headers: dict[str, str], set_cookies: list[str], body: bytes) -> None:
        self.status, self.headers, self.set_cookies, self.body = status, headers, set_cookies, body
        self.elapsed_ms = 0.0


Resumable = tuple[ssl.SSLContext, ssl.SSLSession]  # a TLS session, and the context it may be resumed with

_CONTEXTS: dict[tuple[bool | str, float], ssl.SSLContext] = {}


def tls_context(verify: bool | str) -> ssl.SSLContext:
    """A client TLS context: system CAs (True), a CA file or directory (str), or no verification (False).

    Shared by every connection with the same setting (loading CAs is the dear part); a CA file that
    changes on disk (a lab made anew) gets a new context.
    """
    key = (verify, os.stat(verify).st_mtime if isinstance(verify, str) else 0.0)
    context = _CONTEXTS.get(key)
    if context is None:
        if verify is False:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif verify is True:
            context = ssl.create_default_context()
        elif os.path.isdir(verify):
            context = ssl.create_default_context(capath=verify)
        else:
            context = ssl.create_default_context(cafile=verify)
        _CONTEXTS[key] = context
    return context


class Connection:
    """A keep-alive connection to one origin; reconnects lazily. Not shared between users or threads."""

    def __init__(self, scheme: str, host: str, port: int, verify: bool | str, timeout: float,
                 resume: Resumable | None = None) -> None:
        self.scheme, self.host, self.port = scheme, host, port
        self.verify, self.timeout = verify, timeout
        self._stream: Stream | None = None
        # The TLS session of the last connection, with its context: the next connection resumes it, as
        # browsers do, which saves the certificate chain's work (~0.7 of ~2.7 ms of CPU per handshake here).
        self.resume = resume
        self.connects = 0  # how many times a TCP (and TLS) connection was made: for tests and reports
        self.resumptions = 0  # how many of them resumed a TLS session

    def close(self) -> None:
        if self._stream is not None:
            try:
                session = self._stream.session
                if session is not None:
                    self.resume = (self._stream.context, session)
                self._stream.close()
            finally:
                self._stream = None

    def _connect(self) -> Stream:
        host = self.host.strip("[]")
        context = tls_context(self.verify) if self.scheme == "https" else None
        session = self.resume[1] if self.resume is not None and self.resume[0] is context else None
        stream = Stream(host, self.port, context, host, self.timeout, session)
        self.connects += 1
        self.resumptions += stream.resumed
        return stream

    def exchange(self, request: bytes, head_only: bool = False) -> Response:
        """Send one request (head and body in one buffer) and read its response.

        A reused connection the server has closed meanwhile shows up as nothing received: then the
        request is sent once more on a new connection, as browsers do.
        """
        started = time.perf_counter()
        reused = self._stream is not None
        try:
            response = self._send_and_read(request, head_only)
        except NothingReceived:
            self.close()
            if not reused:
                raise
            response = self._send_and_read(request, head_only)
        except BaseException:
            self.close()
            raise
        response.elapsed_ms = (time.perf_counter() - started) * 1000
        return response

    def _send_and_read(self, request: bytes, head_only: bool) -> Response:
        if self._stream is None:
            self._stream = self._connect()
        stream = self._stream
        try:
            stream.sendall(request)
            buffer = stream.recv()
        except (ConnectionResetError, BrokenPipeError) as exc:
            raise NothingReceived(str(exc)) from exc
        if not buffer:
            raise NothingReceived("connection closed before the response")
        while True:
            end = buffer.find(CRLF2)
            while end < 0:
                if len(buffer) > MAX_HEAD_BYTES:
                    raise ProtocolError("response head too large")
                more = stream.recv()
                if not more:
                    raise ProtocolError("connection closed inside the response head")
                buffer += more
                end = buffer.find(CRLF2)
            head = buffer[:end]
            status, headers, set_cookies = _parse_head(head)
            buffer = buffer[end + 4:]
            if 100 <= status < 200 and status != 101:
                continue  # interim response: the real one follows
            break
        connection = headers.get("connection", "").lower()
        keep_alive = connection != "close" if head.startswith(b"HTTP/1.1") else connection == "keep-alive"
        if head_only or status in (204, 304):
            body = b""
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            body = self._read_chunked(buffer)
        elif "content-length" in headers:
            body = self._read_exactly(buffer, _length(headers["content-length"]))
        else:
            body, keep_alive = self._read_to_close(buffer), False
        if not keep_alive:
            self.close()
        return Response(status, headers, set_cookies, body)

    def _recv(self) -> bytes:
        assert self._stream is not None
        data = self._stream.recv()
        if not data:
            raise ProtocolError("connection closed inside the response body")
        return data

    def _read_exactly(self, buffer: bytes, length: int) -> bytes:
        if length > MAX_BODY_BYTES:
            raise ProtocolError(f"response body of {length} bytes is too large")
        if len(buffer) >= length:
            return buffer[:length]  # anything beyond would be a pipelined response: not used here
        parts, have = [buffer], len(buffer)
        while have < length:
            data = self._recv()
            parts.append(data)
            have += len(data)
        return b"".join(parts)[:length]

    def _read_to_close(self, buffer: bytes) -> bytes:
        assert self._stream is not None
        parts = [buffer]
        size = len(buffer)
        while data := self._stream.recv():
            parts.append(data)
            size += len(data)
            if size > MAX_BODY_BYTES:
                raise ProtocolError("response body too large")
        return b"".join(parts)

    def _read_chunked(self, buffer: bytes) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            line_end = buffer.find(b"\r\n")
            while line_end < 0:
                buffer += self._recv()
                line_end = buffer.find(b"\r\n")
            try:
                size = int(buffer[:line_end].split(b";", 1)[0], 16)
            except ValueError as exc:
                raise ProtocolError("bad chunk size") from exc
            buffer = buffer[line_end + 2:]
            if size == 0:
                # Trailer fields (usually none), then the blank line that ends the message.
                while not (buffer.startswith(b"\r\n") or CRLF2 in buffer):
                    buffer += self._recv()
                return b"".join(parts)
            total += size
            if total > MAX_BODY_BYTES:
                raise ProtocolError("response body too large")
            while len(buffer) < size + 2:
                buffer += self._recv()
            parts.append(buffer[:size])
            buffer = buffer[size + 2:]


def _length(value: str) -> int:
    try:
        length = int(value.split(",")[0])
    except ValueError as exc:
        raise ProtocolError(f"bad Content-Length {value!r}") from exc
    if length < 0:
        raise ProtocolError(f"bad Content-Length {value!r}")
    return length


def _parse_head(head: bytes) -> tuple[int, dict[str, str], list[str]]:
    """Status, the headers this client acts on (lower-case names), and every Set-Cookie value."""
    lines = head.decode("latin-1").split("\r\n")
    status_line = lines[0]
    if not status_line.startswith("HTTP/1.") or len(status_line) < 12:
        raise ProtocolError(f"not an HTTP/1.x response: {status_line[:40]!r}")
    try:
        status = int(status_line[9:12])
    except ValueError as exc:
        raise ProtocolError(f"bad status line {status_line[:40]!r}") from exc
    headers: dict[str, str] = {}
    set_cookies: list[str] = []
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name = name.lower()
        if name not in USED_HEADERS:
            continue
        if name == "set-cookie":
            set_cookies.append(value.strip())
        elif name in headers:
            headers[name] += ", " + value.strip()
        else:
            headers[name] = value.strip()
    return status, headers, set_cookies
