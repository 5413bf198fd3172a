"""Where an IdP node keeps state: the four 2012 clustering designs plus the unclustered baseline.

Two kinds of state matter for clustering: the *login conversation* (which step of the flow a browser
is at, Tomcat's servlet session in 2012) and the *SSO session* (who logged in, so the next SP is not
asked for a password). `stores_for(config)` returns the pair a backend uses:

| backend     | conversation              | SSO session                                 |
|-------------|---------------------------|---------------------------------------------|
| terracotta  | Redis, replicated (WAIT)  | Redis, replicated (WAIT)                    |
| memcached   | node-local                | two memcached, sharded by consistent hash   |
| repcached   | node-local                | both memcached (written to both)            |
| stateless   | node-local                | none: sealed into a cookie (see sessions.py)|
| local       | node-local                | node-local                                  |

"Node-local" must be shared by the worker processes of one node (a JVM heap in 2012), so it is a
SQLite file in the node's own directory.
"""

from __future__ import annotations

import json
import random
import sqlite3
import threading
import time
from typing import Protocol

import redis
from pymemcache.client.base import Client, PooledClient
from pymemcache.client.hash import HashClient
from pymemcache.exceptions import MemcacheError, MemcacheUnexpectedCloseError

from ..config import NodeConfig

REDIS_TIMEOUT = 2.0  # seconds, connect and read
REPLICA_WAIT_MS = 200  # how long a write waits for the replica's acknowledgement (terracotta)
REPLICAS_REQUIRED = 1
MEMCACHED_CONNECT_TIMEOUT = 0.5
MEMCACHED_TIMEOUT = 1.0
PURGE_EVERY = 500  # SQLite: purge expired rows about once per this many writes
SQLITE_BUSY_MS = 5000


class StoreUnavailable(RuntimeError):
    """The storage server could not be reached; the IdP answers with an error page."""


class Store(Protocol):
    name: str

    def get(self, key: str) -> dict | None: ...

    def put(self, key: str, value: dict, ttl: int) -> None: ...

    def delete(self, key: str) -> None: ...


def _dump(value: dict) -> str:
    return json.dumps(value, separators=(",", ":"))


class LocalStore:
    """Node-local memory shared by the node's worker processes."""

    name = "node-local"

    def __init__(self, path: str) -> None:
        self._path = path
        self._local = threading.local()
        db = self._connect()  # created here, closed before gunicorn forks the workers
        db.execute("CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v TEXT NOT NULL, exp REAL NOT NULL)")
        db.close()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self._path, timeout=SQLITE_BUSY_MS / 1000, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=OFF")
        return db

    @property
    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = self._connect()
        return db

    def get(self, key: str) -> dict | None:
        row = self._db.execute("SELECT v, exp FROM kv WHERE k = ?", (key,)).fetchone()
        if row is None or row[1] < time.time():
            return None
        return json.loads(row[0])

    def put(self, key: str, value: dict, ttl: int) -> None:
        now = time.time()
        self._db.execute("INSERT OR REPLACE INTO kv (k, v, exp) VALUES (?, ?, ?)", (key, _dump(value), now + ttl))
        if random.randrange(PURGE_EVERY) == 0:
            self._db.execute("DELETE FROM kv WHERE exp < ?", (now,))

    def delete(self, key: str) -> None:
        self._db.execute("DELETE FROM kv WHERE k = ?", (key,))


class ReplicatedRedisStore:
    """Synchronous replication: a write returns once the replica has it (Redis WAIT)."""

    name = "redis-replicated"

    def __init__(self, url: str, prefix: str) -> None:
        self._redis = redis.Redis.from_url(url, socket_timeout=REDIS_TIMEOUT, socket_connect_timeout=REDIS_TIMEOUT)
        self._prefix = prefix

    def _call(self, build):
        try:
            return build()
        except redis.RedisError as exc:
            raise StoreUnavailable(f"redis: {exc}") from exc

    def get(self, key: str) -> dict | None:
        raw = self._call(lambda: self._redis.get(self._prefix + key))
        return json.loads(raw) if raw else None

    def _replicated(self, command, *args) -> None:
        def run():
            pipe = self._redis.pipeline(transaction=False)
            getattr(pipe, command)(*args)
            pipe.execute_command("WAIT", REPLICAS_REQUIRED, REPLICA_WAIT_MS)
            return pipe.execute()

        self._call(run)

    def put(self, key: str, value: dict, ttl: int) -> None:
        self._replicated("set", self._prefix + key, _dump(value), ttl)

    def delete(self, key: str) -> None:
        self._replicated("delete", self._prefix + key)


# What a command on a pooled connection raises when its server restarted since the connection was opened.
STALE_CONNECTION_ERRORS = (MemcacheUnexpectedCloseError, BrokenPipeError, ConnectionResetError)


class ReconnectingClient(Client):
    """One memcached connection that, found closed by a restarted server, retries the command once on a new one.

    Java memcached clients (Shibboleth's spymemcached among them) reconnect this way; without it every pooled
    connection of every IdP worker answers one command after a restart with a miss or a lost write, and the
    lab would log out users the real software keeps. A server still down refuses the new connection, so the
    error reaches the caller as before. Every command the stores send (get, set, delete) is safe to repeat.
    """

    def _retrying(self, command, *args, **kwargs):
        try:
            return command(*args, **kwargs)
        except STALE_CONNECTION_ERRORS:
            self.close()
            return command(*args, **kwargs)

    def _fetch_cmd(self, *args, **kwargs):
        return self._retrying(super()._fetch_cmd, *args, **kwargs)

    def _store_cmd(self, *args, **kwargs):
        return self._retrying(super()._store_cmd, *args, **kwargs)

    def _misc_cmd(self, *args, **kwargs):
        return self._retrying(super()._misc_cmd, *args, **kwargs)


class ReconnectingHashClient(HashClient):
    """pymemcache's consistent-hashing client, its connections `ReconnectingClient`s (re-added servers too)."""

    client_class = ReconnectingClient

    def _retry_dead(self) -> None:
        # pymemcache looks at its dead servers at most once per dead_timeout, so a server could stay out of the
        # ring for almost twice that; looking every time brings each back exactly dead_timeout (the lab's
        # timings) after it was marked dead, which is what failover analyses and tests can rely on.
        self._last_dead_check_time = 0.0
        super()._retry_dead()


def _memcached_client(server: str) -> PooledClient:
    host, port = server.rsplit(":", 1)
    client = PooledClient((host, int(port)), connect_timeout=MEMCACHED_CONNECT_TIMEOUT, timeout=MEMCACHED_TIMEOUT,
                          no_delay=True)
    client.client_class = ReconnectingClient
    return client


class ShardedMemcachedStore:
    """Each key on one memcached chosen by consistent hashing: losing a server loses its keys."""

    name = "memcached-sharded"

    def __init__(self, servers: list[str], prefix: str, dead_retry: float) -> None:
        addresses = [(host, int(port)) for host, port in (s.rsplit(":", 1) for s in servers)]
        self._client = ReconnectingHashClient(
            addresses, use_pooling=True, connect_timeout=MEMCACHED_CONNECT_TIMEOUT, timeout=MEMCACHED_TIMEOUT,
            retry_attempts=1, retry_timeout=1, dead_timeout=dead_retry, ignore_exc=True, no_delay=True,
        )
        self._prefix = prefix

    def get(self, key: str) -> dict | None:
        raw = self._client.get(self._prefix + key)
        return json.loads(raw) if raw else None

    def put(self, key: str, value: dict, ttl: int) -> None:
        self._client.set(self._prefix + key, _dump(value), expire=ttl, noreply=False)

    def delete(self, key: str) -> None:
        self._client.delete(self._prefix + key, noreply=False)


class ReplicatedMemcachedStore:
    """repcached's guarantee: every item on both servers, readable from either."""

    name = "memcached-replicated"

    def __init__(self, servers: list[str], prefix: str, prefer: int) -> None:
        clients = [_memcached_client(server) for server in servers]
        # Each node reads its "own" server first, as a repcached client talks to its local peer.
        self._clients = clients[prefer:] + clients[:prefer]
        self._prefix = prefix

    def get(self, key: str) -> dict | None:
        for client in self._clients:
            try:
                raw = client.get(self._prefix + key)
            except (MemcacheError, OSError):
                continue
            if raw:
                return json.loads(raw)
        return None

    def put(self, key: str, value: dict, ttl: int) -> None:
        stored = 0
        for client in self._clients:
            try:
                client.set(self._prefix + key, _dump(value), expire=ttl, noreply=False)
                stored += 1
            except (MemcacheError, OSError):
                continue
        if not stored:
            raise StoreUnavailable("no memcached reachable")

    def delete(self, key: str) -> None:
        for client in self._clients:
            try:
                client.delete(self._prefix + key, noreply=False)
            except (MemcacheError, OSError):
                continue


def stores_for(config: NodeConfig) -> tuple[Store, Store | None]:
    """(conversation store, SSO-session store); None means sessions live in a sealed cookie."""
    local = LocalStore(config.local_store)
    prefix = config.key_prefix
    backend = config.backend
    if backend == "terracotta":
        return (ReplicatedRedisStore(config.redis_primary, prefix + "conv:"),
                ReplicatedRedisStore(config.redis_primary, prefix + "sess:"))
    if backend == "memcached":
        return local, ShardedMemcachedStore(config.memcached, prefix + "sess:", config.memcached_dead_retry)
    if backend == "repcached":
        prefer = 0 if config.node == "a" else 1
        return local, ReplicatedMemcachedStore(config.memcached, prefix + "sess:", prefer)
    if backend == "stateless":
        return local, None
    if backend == "local":
        return local, local
    raise ValueError(f"unknown backend {backend!r}")
