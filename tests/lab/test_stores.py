"""The lab IdP's memcached stores against real memcached servers that restart, as in a failover run."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

from authbench_lab.idp.stores import ReplicatedMemcachedStore, ShardedMemcachedStore

from ports import STORES as BASE_PORT

START_TIMEOUT = 5.0
KEYS = [f"session-{i}" for i in range(40)]


class Memcached:
    """One memcached on loopback that the test may restart on the same port."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen([shutil.which("memcached") or "memcached", "-l", "127.0.0.1",
                                         "-p", str(self.port), "-U", "0", "-u", "nobody"])
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"memcached did not listen on {self.port}")

    def stop(self) -> None:
        if self.process:
            self.process.terminate()
            self.process.wait(timeout=START_TIMEOUT)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


@pytest.fixture
def servers() -> Iterator[list[Memcached]]:
    pair = [Memcached(BASE_PORT), Memcached(BASE_PORT + 1)]
    for server in pair:
        server.start()
    yield pair
    for server in pair:
        server.stop()


def stored(store) -> int:
    return sum(store.get(key) == {"key": key} for key in KEYS)


def write_all(store) -> None:
    for key in KEYS:
        store.put(key, {"key": key}, 60)


@pytest.mark.parametrize("kind", ["sharded", "replicated"])
def test_a_restarted_memcached_is_used_again_at_once(servers, kind):
    """Pooled connections opened before the restart are dead; the store must reconnect, not lose a write."""
    addresses = [server.address for server in servers]
    store = (ShardedMemcachedStore(addresses, "t:", dead_retry=1.0) if kind == "sharded"
             else ReplicatedMemcachedStore(addresses, "t:", prefer=0))
    write_all(store)
    assert stored(store) == len(KEYS)
    servers[0].stop()
    servers[0].start()
    write_all(store)  # the first command to the restarted server meets the old, closed connection
    assert stored(store) == len(KEYS)
    if kind == "replicated":  # and it was written to the restarted server too, not only to the other
        servers[1].stop()
        assert stored(store) == len(KEYS)
