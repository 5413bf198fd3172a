"""The HTTP/1.1 client against a scripted server: framing, keep-alive, retries, timeouts, failures as reasons."""

from __future__ import annotations

import socket
import threading

import pytest

from authbench.journeys.fastbrowser import FastBrowser, HTTPStatusError
from authbench.journeys.saml import CONNECTION_ERROR, HTTP_STATUS, TIMEOUT, sso_login


class ScriptedServer:
    """Answers each request read with the next scripted response; `close` after it, `slow` (0.1 s) before
    it, or `hang` without one."""

    def __init__(self, script: list[tuple[bytes, str]]) -> None:
        self.script = list(script)
        self.requests: list[bytes] = []
        self.accepted = 0
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while self.script:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            buffer = b""
            while self.script:
                while b"\r\n\r\n" not in buffer:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                while len(buffer) < length:
                    buffer += conn.recv(65536)
                self.requests.append(head + b"\r\n\r\n" + buffer[:length])
                buffer = buffer[length:]
                response, then = self.script.pop(0)
                if then == "hang":
                    threading.Event().wait(5)
                    return
                if then == "slow":
                    threading.Event().wait(0.1)
                conn.sendall(response)
                if then == "close":
                    return

    def close(self) -> None:
        self.listener.close()


def ok(body: bytes, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n" + extra + b"Content-Length: %d\r\n\r\n" % len(body) + body


@pytest.fixture
def serve():
    servers = []

    def start(*script: tuple[bytes, str]) -> ScriptedServer:
        servers.append(ScriptedServer(list(script)))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def test_keep_alive_reuses_one_connection(serve):
    server = serve((ok(b"<title>one</title>"), "keep"), (ok(b"<title>two</title>"), "keep"))
    browser = FastBrowser()
    assert browser.get(server.url + "/a").title == "one"
    assert browser.get(server.url + "/b").title == "two"
    assert server.accepted == 1 and browser.connects == 1


def test_chunked_body_with_extensions_and_trailer(serve):
    chunked = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"7;ext=1\r\n<title>\r\n5\r\nhello\r\n8\r\n</title>\r\n0\r\nX-Trailer: t\r\n\r\n")
    server = serve((chunked, "keep"), (ok(b"next"), "keep"))
    browser = FastBrowser()
    assert browser.get(server.url).title == "hello"
    assert browser.get(server.url).text == "next"  # the trailer was consumed: the connection stays in step
    assert browser.connects == 1


def test_body_to_end_of_connection_and_interim_response(serve):
    interim_then_unframed = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\n\r\nuntil close"
    server = serve((interim_then_unframed, "close"), (ok(b"again"), "keep"))
    browser = FastBrowser()
    assert browser.get(server.url).text == "until close"
    assert browser.get(server.url).text == "again"
    assert server.accepted == 2


def test_connection_closed_while_idle_is_retried_once(serve):
    server = serve((ok(b"first", b"Connection: keep-alive\r\n"), "close"), (ok(b"second"), "keep"))
    browser = FastBrowser()
    assert browser.get(server.url).text == "first"
    # The server closed the kept connection without saying so; the request goes again on a new one.
    assert browser.get(server.url).text == "second"
    assert server.accepted == 2


def test_post_body_cookies_and_redirect_to_get(serve):
    redirect = b"HTTP/1.1 303 See Other\r\nLocation: /done?x=1\r\nSet-Cookie: s=1; Path=/\r\nContent-Length: 0\r\n\r\n"
    server = serve((redirect, "keep"), (ok(b"done"), "keep"))
    seen = []
    browser = FastBrowser(on_request=lambda *args: seen.append(args))
    page = browser.request("POST", server.url + "/form", {"a b": "x&y=z", "u": "\u00fc~"}, name="form post")
    assert page.text == "done" and page.url == server.url + "/done?x=1"
    first, second = server.requests
    assert first.startswith(b"POST /form HTTP/1.1\r\n") and first.endswith(b"\r\n\r\na+b=x%26y%3Dz&u=%C3%BC%7E")
    assert second.startswith(b"GET /done?x=1 HTTP/1.1\r\n") and b"\r\nCookie: s=1\r\n" in second
    assert [(name, method, status) for name, method, _url, status, *_ in seen] == [
        ("form post", "POST", 303), ("form post", "GET", 200)]


def test_error_status_is_reported_as_a_failed_request(serve):
    body = b"<title>No server</title>"
    server = serve((b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: %d\r\n\r\n" % len(body) + body, "keep"))
    seen = []
    outcome = sso_login(FastBrowser(on_request=lambda *args: seen.append(args)), server.url + "/secure/", "u", "p")
    assert outcome.reason == HTTP_STATUS and outcome.detail.startswith("503 No server at ")
    assert isinstance(seen[0][-1], HTTPStatusError) and str(seen[0][-1]) == "HTTP 503 No server"


def test_silent_server_is_a_timeout(serve):
    server = serve((b"", "hang"))
    seen = []
    outcome = sso_login(FastBrowser(timeout=0.3, on_request=lambda *args: seen.append(args)), server.url, "u", "p")
    assert outcome.reason == TIMEOUT, outcome
    assert isinstance(seen[0][-1], TimeoutError) and seen[0][3] == 0


def test_timeout_is_per_wait_not_per_connection(serve):
    """Waits that add up to more than the timeout on one kept connection are not a timeout."""
    server = serve(*[(ok(b"slow"), "slow")] * 5)
    browser = FastBrowser(timeout=0.3)
    assert [browser.get(server.url).text for _ in range(5)] == ["slow"] * 5
    assert browser.connects == 1


def test_nothing_listening_is_a_connection_error():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nobody listens there
    outcome = sso_login(FastBrowser(), f"http://127.0.0.1:{port}/secure/", "u", "p")
    assert outcome.reason == CONNECTION_ERROR and "refused" in outcome.detail.lower()


def test_redirect_loop_is_an_http_status_failure(serve):
    loop = b"HTTP/1.1 302 Found\r\nLocation: /again\r\nContent-Length: 0\r\n\r\n"
    server = serve(*[(loop, "keep")] * 11)
    outcome = sso_login(FastBrowser(), server.url, "u", "p")
    assert outcome.reason == HTTP_STATUS and "redirects" in outcome.detail


def test_redirect_a_browser_cannot_follow_is_an_http_status_failure(serve):
    elsewhere = b"HTTP/1.1 302 Found\r\nLocation: ftp://files.example.org/x\r\nContent-Length: 0\r\n\r\n"
    outcome = sso_login(FastBrowser(), serve((elsewhere, "keep")).url, "u", "p")
    assert outcome.reason == HTTP_STATUS and "ftp://" in outcome.detail


def test_close_connections_opens_new_ones(serve):
    server = serve((ok(b"a"), "keep"), (ok(b"b"), "keep"))
    browser = FastBrowser()
    browser.get(server.url)
    browser.close_connections()
    browser.get(server.url)
    assert server.accepted == 2


def test_rerouted_requests_keep_cookies_for_the_url_asked_for(serve):
    """Node A answers for the balancer, then node B does: B gets A's cookie, as behind a real balancer."""
    balancer = "http://idp.balancer.test:8443"
    set_by_a = (b"HTTP/1.1 302 Found\r\nLocation: /idp/next\r\nSet-Cookie: idp_sso=1; Path=/\r\n"
                b"Content-Length: 0\r\n\r\n")
    node_a = serve((set_by_a, "keep"), (ok(b"at a"), "keep"))
    node_b = serve((ok(b"at b"), "keep"))
    browser = FastBrowser(route=lambda url: url.replace(balancer, node_a.url))
    page = browser.get(balancer + "/idp/start")
    assert page.text == "at a" and page.url == balancer + "/idp/next"  # the redirect resolved as the browser sees it
    assert [url for _method, url, _status in browser.history] == [node_a.url + "/idp/start", node_a.url + "/idp/next"]
    assert [(host, cookie.origin, cookie.set_at) for host, cookie in browser.cookies] == [
        ("idp.balancer.test", balancer, "/idp/start")]
    browser.route = lambda url: url.replace(balancer, node_b.url)
    assert browser.get(balancer + "/idp/again").text == "at b"
    assert b"\r\nCookie: idp_sso=1\r\n" in node_b.requests[0]
    assert b"Host: 127.0.0.1:" in node_b.requests[0]  # the connection itself goes to the node
    browser.route = None
    assert browser.cookies.header("127.0.0.1", "/", True) == ""  # nothing was kept for the nodes' own host
