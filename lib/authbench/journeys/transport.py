"""A byte stream to a server — TCP, with TLS when a context is given — for one keep-alive connection.

Why not the ssl module's sockets: under gevent (Locust monkey-patches everything), an SSLSocket is a
stack of Python layers around every read and write, and a TLS round trip cost about 200 µs of CPU
where the same round trip over a plain socket cost 120 µs. Here TLS runs on memory BIOs
(`ssl.SSLObject`, all in C) over the raw socket, and the socket waits for the gevent hub through one
IO watcher per direction, kept for the connection's life. Without monkey patching (plain threads,
tests) the raw socket is an ordinary blocking socket with a timeout.
"""

from __future__ import annotations

import errno
import os
import socket
import ssl

from greenlet import getcurrent

RECV_SIZE = 65536


def cooperative() -> bool:
    """True when gevent has patched `socket`: then sockets must wait through the hub, not block."""
    try:
        from gevent import monkey
    except ImportError:  # pragma: no cover - gevent comes with Locust
        return False
    return monkey.is_module_patched("socket")


def _addresses(host: str, port: int) -> list[tuple]:
    """getaddrinfo's answer; an IP address (the lab's 127.0.0.1) is taken as it is.

    Under gevent, getaddrinfo is cooperative: a hand-off to gevent's thread pool and back for every
    connection, even for an address (81 µs of CPU against 1 µs here).
    """
    for family, address in ((socket.AF_INET, (host, port)), (socket.AF_INET6, (host, port, 0, 0))):
        try:
            socket.inet_pton(family, host)
        except OSError:
            continue
        return [(family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", address)]
    return socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)


class _BlockingSocket:
    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def recv(self) -> bytes:
        return self.sock.recv(RECV_SIZE)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def close(self) -> None:
        self.sock.close()


class _GeventSocket:
    """A non-blocking stdlib socket that waits on the gevent hub, with watchers and a timer kept per socket.

    gevent's own socket makes a Timeout object (and its timer) for every wait; reusing one timer per
    socket saved 30–50 µs of CPU per request here.
    """

    def __init__(self, host: str, port: int, timeout: float) -> None:
        from gevent import get_hub, monkey

        self._hub = get_hub()
        # Repeating, and re-armed with again(): a libev timer that is stopped and started keeps only
        # its remaining time, so it would fire once the waits of the connection's life add up.
        self._timer = self._hub.loop.timer(timeout, timeout)
        self._watchers: tuple = ()
        self._just_sent = False
        original_socket = monkey.get_original("socket", "socket")
        error: OSError | None = None
        for family, kind, proto, _name, address in _addresses(host, port):
            self.sock = original_socket(family, kind, proto)
            self.sock.setblocking(False)
            self._reading = self._hub.loop.io(self.sock.fileno(), 1)
            self._writing = self._hub.loop.io(self.sock.fileno(), 2)
            self._watchers = (self._reading, self._writing)
            try:
                self._connect(address)
                break
            except OSError as exc:
                self._close_socket()
                error = exc
        else:
            self._timer.close()
            raise error or OSError(f"cannot resolve {host}")
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _wait(self, watcher) -> None:
        """Until the socket is ready, or TimeoutError (thrown into this greenlet by the timer)."""
        self._timer.again(getcurrent().throw, TimeoutError, "timed out")
        try:
            self._hub.wait(watcher)
        finally:
            self._timer.stop()

    def _connect(self, address: tuple) -> None:
        code = self.sock.connect_ex(address)
        if code in (errno.EINPROGRESS, errno.EWOULDBLOCK):
            self._wait(self._writing)
            code = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            raise OSError(code, os.strerror(code))  # the errno's subclass, e.g. ConnectionRefusedError

    def recv(self) -> bytes:
        if self._just_sent:
            # An answer cannot be here a few microseconds after the request left: wait for it
            # rather than spend a system call and an exception on finding the socket empty.
            self._just_sent = False
            self._wait(self._reading)
        while True:
            try:
                return self.sock.recv(RECV_SIZE)
            except BlockingIOError:
                self._wait(self._reading)

    def send(self, data: bytes) -> None:
        try:
            sent = self.sock.send(data)  # a request fits the socket buffer: one call, nothing else
        except BlockingIOError:
            sent = 0
        if sent < len(data):
            view = memoryview(data)[sent:]
            while view:
                try:
                    view = view[self.sock.send(view):]
                except BlockingIOError:
                    self._wait(self._writing)
        self._just_sent = True

    def _close_socket(self) -> None:
        for watcher in self._watchers:
            watcher.close()
        self.sock.close()

    def close(self) -> None:
        self._close_socket()
        self._timer.close()


class Stream:
    """`recv()` returns b"" at the end of the stream; `sendall` sends everything or raises."""

    def __init__(self, host: str, port: int, context: ssl.SSLContext | None, server_hostname: str,
                 timeout: float, session: ssl.SSLSession | None = None) -> None:
        self._raw = (_GeventSocket if cooperative() else _BlockingSocket)(host, port, timeout)
        self.context = context
        self._tls: ssl.SSLObject | None = None
        if context is not None:
            self._incoming, self._outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
            self._tls = context.wrap_bio(self._incoming, self._outgoing, server_hostname=server_hostname,
                                         session=session)
            try:
                self._handshake()
            except BaseException:
                self._raw.close()
                raise

    def _handshake(self) -> None:
        assert self._tls is not None
        while True:
            try:
                self._tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                self._flush()
                data = self._raw.recv()
                if not data:
                    raise ConnectionResetError("connection closed during the TLS handshake") from None
                self._incoming.write(data)
        self._flush()

    def _flush(self) -> None:
        if self._outgoing.pending:
            self._raw.send(self._outgoing.read())

    def sendall(self, data: bytes) -> None:
        if self._tls is None:
            self._raw.send(data)
            return
        self._tls.write(data)  # into a memory BIO: never partial
        self._flush()

    def recv(self) -> bytes:
        if self._tls is None:
            return self._raw.recv()
        while True:
            if not self._incoming.pending and not self._tls.pending():
                self._fill()  # nothing buffered: read the socket first rather than fail a TLS read
            try:
                data = self._tls.read(RECV_SIZE)
                if self._outgoing.pending:  # e.g. a TLS 1.3 key update to answer
                    self._flush()
                return data
            except ssl.SSLWantReadError:
                self._fill()
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                return b""  # close_notify, or (commonly) a server that just closed the socket

    def _fill(self) -> None:
        raw = self._raw.recv()
        if raw:
            self._incoming.write(raw)
        else:
            self._incoming.write_eof()

    @property
    def resumed(self) -> bool:
        return self._tls is not None and self._tls.session_reused

    @property
    def session(self) -> ssl.SSLSession | None:
        """The TLS session to resume on the next connection (TLS 1.3: known once a ticket has been read)."""
        if self._tls is None:
            return None
        session = self._tls.session
        return session if session is not None and session.has_ticket else None

    def close(self) -> None:
        self._raw.close()
