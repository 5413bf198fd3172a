"""A tiny HTTP server that sleeps before every answer, and a journey user that GETs it.

It stands for an IdP slowed down in a way the tests control: its service time is known, so a run
can show latency from the intended start growing while the service time stays put.
"""

from __future__ import annotations

import contextlib
import http.client
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from authbench.user import JourneyOutcome, JourneyUser

LOOPBACK = "127.0.0.1"


class SleepyServer:
    """`serial`: one request served at a time, the others queue (a server that keeps a backlog)."""

    def __init__(self, delay: float, serial: bool = False) -> None:
        server_delay = delay
        one_at_a_time = threading.Lock() if serial else contextlib.nullcontext()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                with one_at_a_time:
                    time.sleep(server_delay)
                self.wfile.write(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")  # one segment: no Nagle wait

            def log_message(self, *_args) -> None:
                pass

        self.server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> SleepyServer:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


class SleepyUser(JourneyUser):
    """settings: the sleepy server's port."""

    journey_name = "sleepy GET"
    request_type = "GET"

    def journey(self) -> JourneyOutcome:
        conn = http.client.HTTPConnection(LOOPBACK, self.run_context.settings, timeout=10)
        try:
            conn.request("GET", "/")
            response = conn.getresponse()
            response.read()
        finally:
            conn.close()
        return JourneyOutcome(response.status == 200, "" if response.status == 200 else "http status")
