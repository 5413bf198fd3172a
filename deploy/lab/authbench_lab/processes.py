"""A small supervisor for the lab's real server processes.

Each server runs detached in its own session, so it outlives the `lab up` that started it and can be
stopped as a whole process group. A pid alone is never trusted: before signalling, the command line
in /proc is compared with what we started, so a recycled pid is left alone.
"""

from __future__ import annotations

import http.client
import os
import signal
import socket
import ssl
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

LOOPBACK = "127.0.0.1"
STOP_TIMEOUT = 5.0  # seconds between SIGTERM and SIGKILL
KILL_TIMEOUT = 2.0  # seconds to wait for the kernel after SIGKILL
HEALTH_TIMEOUT = 30.0  # seconds a component may take to answer its probe
POLL_INTERVAL = 0.1
PROBE_TIMEOUT = 2.0  # one probe attempt (connect + answer)
LOG_TAIL_LINES = 12

# Popen handles of the children started by this interpreter, so that stopping them also reaps them
# (no zombies, no "subprocess still running" warnings in long-lived callers such as pytest).
_children: dict[int, subprocess.Popen] = {}

Probe = Callable[[], str]  # returns a short detail on success, raises ProbeError (or OSError) otherwise


class ProbeError(Exception):
    """A health probe got an answer, but not the healthy one."""


class UnhealthyError(Exception):
    """A component did not become healthy; carries what a human needs to look into it."""

    def __init__(self, name: str, reason: str, log_path: Path, tail: list[str]) -> None:
        super().__init__(f"{name} did not become healthy ({reason}); log: {log_path}")
        self.name = name
        self.reason = reason
        self.log_path = log_path
        self.tail = tail


@dataclass(frozen=True)
class Started:
    pid: int
    started_at: float


# -- processes ---------------------------------------------------------------------------------------


def start(
    command: list[str], *, log_path: Path, pid_path: Path, cwd: Path, env: dict[str, str] | None = None
) -> Started:
    """Launch detached (own session, so its group can be signalled), output appended to its log."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    full_env = {**os.environ, **(env or {})}
    with open(log_path, "ab") as log:
        log.write(f"=== {time.strftime('%Y-%m-%d %H:%M:%S')} starting {command[0]}\n".encode())
        log.flush()
        proc = subprocess.Popen(
            command,
            cwd=cwd,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    _children[proc.pid] = proc
    pid_path.write_text(f"{proc.pid}\n")
    return Started(pid=proc.pid, started_at=time.time())


def _cmdline(pid: int) -> str | None:
    """Command line of a live process, or None when it is gone or a zombie."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None
    if not raw or state in ("Z", "X"):
        return None
    return " ".join(part for part in raw.decode(errors="replace").split("\0") if part)


def is_running(pid: int | None, expected_cmd_fragment: str) -> bool:
    """Our own unreaped child is asked directly: while it execs (unshare turning into postgres) its command
    line is briefly empty, which must not read as "exited". Anyone else's pid needs the command line."""
    if not pid or pid <= 0:
        return False
    proc = _children.get(pid)
    if proc is not None:
        if proc.poll() is None:
            return True
        del _children[pid]
        return False
    cmdline = _cmdline(pid)
    return cmdline is not None and expected_cmd_fragment in cmdline


def _wait_gone(pid: int, fragment: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not is_running(pid, fragment):
            return True
        time.sleep(POLL_INTERVAL / 2)
    return not is_running(pid, fragment)


def _signal_group(pid: int, sig: int) -> None:
    """The whole group when the process leads one (ours do: gunicorn workers go too), else just it."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        return


def stop(pid: int | None, expected_cmd_fragment: str, timeout: float = STOP_TIMEOUT) -> bool:
    """SIGTERM the process group, then SIGKILL after `timeout`; False when it was not running."""
    if not is_running(pid, expected_cmd_fragment):
        return False
    assert pid is not None
    _signal_group(pid, signal.SIGTERM)
    if not _wait_gone(pid, expected_cmd_fragment, timeout):
        _signal_group(pid, signal.SIGKILL)
        _wait_gone(pid, expected_cmd_fragment, KILL_TIMEOUT)
    return True


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> list[str]:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 16_384))
            text = handle.read().decode(errors="replace")
    except OSError:
        return []
    return text.splitlines()[-lines:]


def rss_bytes(pid: int) -> int:
    """Resident memory of a process and all its descendants (gunicorn workers included)."""
    total, pending = 0, [pid]
    while pending:
        current = pending.pop()
        try:
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        pending.extend(int(child) for child in children)
    return total


# -- health probes -----------------------------------------------------------------------------------


def _request_line(port: int, payload: bytes, timeout: float) -> str:
    with socket.create_connection((LOOPBACK, port), timeout=timeout) as sock:
        sock.sendall(payload)
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(1024)
            if not chunk:
                break
            data += chunk
    return data.decode(errors="replace").strip()


def memcached_probe(port: int, timeout: float = PROBE_TIMEOUT) -> Probe:
    def probe() -> str:
        answer = _request_line(port, b"version\r\n", timeout)
        if not answer.startswith("VERSION "):
            raise ProbeError(f"unexpected answer {answer[:40]!r}")
        return answer.lower()

    return probe


def redis_probe(port: int, timeout: float = PROBE_TIMEOUT) -> Probe:
    def probe() -> str:
        answer = _request_line(port, b"PING\r\n", timeout)
        if answer != "+PONG":
            raise ProbeError(f"unexpected answer {answer[:40]!r}")
        return "PONG"

    return probe


def http_probe(
    url_path: str, port: int, *, tls_ca: Path | None = None, timeout: float = PROBE_TIMEOUT
) -> Probe:
    """GET on loopback expecting 200; with `tls_ca` the request goes over https verified by that CA."""

    def probe() -> str:
        if tls_ca is None:
            conn: http.client.HTTPConnection = http.client.HTTPConnection(LOOPBACK, port, timeout=timeout)
        else:
            context = ssl.create_default_context(cafile=str(tls_ca))
            conn = http.client.HTTPSConnection(LOOPBACK, port, timeout=timeout, context=context)
        try:
            conn.request("GET", url_path)
            response = conn.getresponse()
            response.read()
        finally:
            conn.close()
        if response.status != 200:
            raise ProbeError(f"GET {url_path} answered {response.status}")
        return f"GET {url_path} 200"

    return probe


def check(probe: Probe) -> tuple[bool, str]:
    """One probe attempt as (healthy, detail); never raises for a failing server."""
    try:
        return True, probe()
    except (ProbeError, OSError, http.client.HTTPException) as exc:
        return False, _describe(exc)
    except Exception as exc:  # a client library's own error type (python-ldap, …)
        return False, _describe(exc)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.split())[:160]


def wait_healthy(
    name: str,
    probe: Probe,
    *,
    pid: int,
    cmd_fragment: str,
    log_path: Path,
    timeout: float = HEALTH_TIMEOUT,
) -> str:
    """Poll until the probe passes; fail early if the process dies, and always within `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        healthy, detail = check(probe)
        if healthy:
            return detail
        reason = detail
        if not is_running(pid, cmd_fragment):
            reason = f"process exited; last probe: {reason}"
        elif time.monotonic() >= deadline:
            reason = f"no healthy answer in time: {reason}"
        else:
            time.sleep(POLL_INTERVAL)
            continue
        raise UnhealthyError(name, reason, log_path, log_tail(log_path))


def port_is_free(port: int) -> bool:
    """Whether a server could bind 127.0.0.1:port now (SO_REUSEADDR, as servers do)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return False
    return True
