"""TIME_WAIT counting and the ephemeral-port warning."""

from __future__ import annotations

import socket

from authbench.sockets import ephemeral_ports, ports_running_low, time_wait_count


def test_warning_when_time_wait_holds_half_the_ports():
    assert ports_running_low(499, 1000) is None
    warning = ports_running_low(500, 1000)
    assert warning and "500 sockets in TIME_WAIT" in warning and "-f" in warning
    assert ephemeral_ports() > 1000


def test_a_closed_connection_leaves_time_wait_behind():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        before = time_wait_count(port)
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = server.accept()
        client.close()  # the side that closes first keeps the TIME_WAIT
        accepted.close()
        assert time_wait_count(port) == before + 1
