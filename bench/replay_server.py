"""One SSO journey recorded against the lab, then served again by HAProxy at wire speed.

Why: against the lab the generator spends most of its time waiting — the lab's Python servers answer
in milliseconds — and on this shared 2-core machine every wake-up from that wait costs ~100 µs of
CPU in cold caches, once per request. That cost is paid only while the generator has nothing else
to do. What limits a run is the CPU a journey costs once the generator is busy, when responses queue
and one wake-up serves several. To measure that, the generator must be the slower side: here every
page of a real journey (same sizes, cookies, redirects and forms) comes from HAProxy's
`http-request return`, which answers from memory in microseconds.

The replay answers exactly one account's journey (the recorded SAMLResponse names that user); it
checks nothing, so it measures clients, never an IdP. Loopback only, ports of our choosing.
"""

from __future__ import annotations

import shutil
import socket
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from authbench.journeys.connection import Connection
from authbench.journeys.fastbrowser import FastBrowser
from authbench.journeys.saml import sso_login
from authbench_lab import processes

START_TIMEOUT = 10.0  # seconds for HAProxy to listen
HAPROXY_BUFFER = 65536  # bytes: a response page (the SAMLResponse form is ~8 KB) must fit in one buffer


@dataclass
class Exchange:
    port: int
    method: str
    target: str  # path and query, as sent
    sent_cookie: bool
    status: int
    content_type: str
    location: str
    set_cookies: list[str]
    body: bytes


def record_journey(sp_url: str, ca: str, username: str, password: str) -> list[Exchange]:
    """Every request of one complete login through `sp_url`, with what the server answered."""
    exchanges: list[Exchange] = []
    original = Connection.exchange

    def recording(connection: Connection, request: bytes, head_only: bool = False):
        response = original(connection, request, head_only)
        head = request.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
        method, target, _version = head[0].split(" ")
        exchanges.append(Exchange(
            connection.port, method, target, any(line.lower().startswith("cookie:") for line in head[1:]),
            response.status, response.headers.get("content-type", ""), response.headers.get("location", ""),
            list(response.set_cookies), response.body))
        return response

    Connection.exchange = recording  # type: ignore[method-assign]
    try:
        with FastBrowser(verify=ca) as browser:
            outcome = sso_login(browser, sp_url, username, password)
    finally:
        Connection.exchange = original  # type: ignore[method-assign]
    if not outcome.ok:
        raise RuntimeError(f"recording the journey failed: {outcome}")
    return exchanges


def _acl_argument(text: str) -> str:
    """An argument of HAProxy's configuration, double-quoted."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _quoted(text: str) -> str:
    """A log-format argument (a header's value): also '%' literal."""
    return _acl_argument(text.replace("%", "%%"))


def haproxy_config(exchanges: list[Exchange], ports: dict[int, int], pem: Path, bodies: Path) -> str:
    """HAProxy answering each recorded request with its recorded response, on `ports` (recorded → replay).

    Requests are told apart by method and target, and, where those repeat (the SP's protected page
    before and after login), by whether a Cookie header came with them.
    """
    def moved(text: str) -> str:
        for old, new in ports.items():
            text = text.replace(f"127.0.0.1:{old}", f"127.0.0.1:{new}")
        return text

    # noreuseport: a port still held by another HAProxy is an error, not a silent share of the connections
    lines = ["global", "    nbthread 1", "    noreuseport", f"    tune.bufsize {HAPROXY_BUFFER}", "defaults",
             "    mode http", "    timeout connect 5s", "    timeout client 60s", "    timeout server 60s"]
    seen: dict[tuple[int, str, str], int] = {}
    for exchange in exchanges:
        key = (exchange.port, exchange.method, exchange.target)
        seen[key] = seen.get(key, 0) + 1
    for old, new in ports.items():
        lines += [f"frontend replay-{old}", f"    bind 127.0.0.1:{new} ssl crt {pem}"]
        for index, exchange in enumerate(e for e in exchanges if e.port == old):
            target = moved(exchange.target)
            condition = f"{{ method {exchange.method} }} {{ url -m str {_acl_argument(target)} }}"
            if seen[(exchange.port, exchange.method, exchange.target)] > 1:
                condition += (" " if exchange.sent_cookie else " !") + "{ req.hdr(cookie) -m found }"
            rule = f"    http-request return status {exchange.status}"
            if exchange.body:
                body_file = bodies / f"{old}-{index}.body"
                body_file.write_bytes(moved(exchange.body.decode("utf-8")).encode("utf-8"))
                rule += f" content-type {_quoted(exchange.content_type or 'text/html')} file {body_file}"
            if exchange.location:
                rule += f" hdr location {_quoted(moved(exchange.location))}"
            for cookie in exchange.set_cookies:
                rule += f" hdr set-cookie {_quoted(cookie)}"
            lines.append(f"{rule} if {condition}")
        lines.append("    http-request return status 404")
    return "\n".join(lines) + "\n"


class ReplayServer:
    """`with ReplayServer(exchanges, sp_url, base_port, pem, directory) as replay_sp_url:` HAProxy serving
    the recorded journey on base_port, base_port + 1, … (one port per recorded origin)."""

    def __init__(self, exchanges: list[Exchange], sp_url: str, base_port: int, pem: Path, directory: Path) -> None:
        recorded_ports = sorted({exchange.port for exchange in exchanges})
        self.ports = {old: base_port + index for index, old in enumerate(recorded_ports)}
        sp = urlsplit(sp_url)
        assert sp.port is not None, sp_url
        self.sp_url = sp._replace(netloc=f"{sp.hostname}:{self.ports[sp.port]}").geturl()
        self.directory = directory = directory.resolve()  # HAProxy runs in it: paths must not be relative
        shutil.rmtree(directory, ignore_errors=True)
        (directory / "bodies").mkdir(parents=True)
        self.config = directory / "haproxy.cfg"
        self.config.write_text(haproxy_config(exchanges, self.ports, pem, directory / "bodies"))
        self.log = directory / "haproxy.log"
        self.pid: int | None = None

    def __enter__(self) -> str:
        """Start HAProxy with the lab's own process helpers: its log, its process group, a readiness wait
        that fails early (with the log's tail) if HAProxy exits."""
        haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
        started = processes.start([haproxy, "-db", "-f", str(self.config)], log_path=self.log,
                                  pid_path=self.directory / "haproxy.pid", cwd=self.directory)
        self.pid = started.pid
        try:
            for port in self.ports.values():
                processes.wait_healthy(f"replay on port {port}", _listening(port), pid=self.pid,
                                       cmd_fragment=str(self.config), log_path=self.log, timeout=START_TIMEOUT)
        except BaseException:
            self.__exit__()
            raise
        return self.sp_url

    def __exit__(self, *_exc: object) -> None:
        if self.pid is not None:
            processes.stop(self.pid, str(self.config))
            self.pid = None


def _listening(port: int) -> processes.Probe:
    def probe() -> str:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return "listening"

    return probe
