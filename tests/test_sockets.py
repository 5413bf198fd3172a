"""TIME_WAIT counting and the ephemeral-port warning."""

from __future__ import annotations

import socket

import pytest

from authbench.sockets import ephemeral_ports, ports_running_low, time_wait_count

PORT_TRIES = 50


def test_warning_when_time_wait_holds_half_the_ports():
    assert ports_running_low(499, 1000) is None
    warning = ports_running_low(500, 1000)
    assert warning and "500 sockets in TIME_WAIT" in warning and "-f" in warning
    assert ephemeral_ports() > 1000


def _listener_without_time_wait() -> socket.socket:
    """A listening socket on a port no earlier connection left in TIME_WAIT: an old one expiring
    (after 60 s) during the test would otherwise hide the new one."""
    for _ in range(PORT_TRIES):
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        if time_wait_count(server.getsockname()[1]) == 0:
            server.listen()
            return server
        server.close()
    pytest.skip(f"no port free of TIME_WAIT sockets in {PORT_TRIES} tries")


def test_a_closed_connection_leaves_time_wait_behind():
    with _listener_without_time_wait() as server:
        port = server.getsockname()[1]
        before = time_wait_count(port)
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = server.accept()
        client.close()  # the side that closes first keeps the TIME_WAIT
        accepted.close()
        assert time_wait_count(port) == before + 1
