"""HOTP counters that are never used twice: by two users' journeys, two processes, or two runs.

privacyIDEA refuses an HOTP value at or below the last accepted counter, so a reused or out-of-order
value is a failure the server did not cause. The next counter of each token lives in a small SQLite
file beside the lab's token secrets; taking one is a single atomic UPDATE … RETURNING, so every
process of a run (and every later run) moves on from where the others stopped.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

BUSY_TIMEOUT_S = 10.0


class CounterStore:
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                   check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=OFF")  # a lost counter after a crash only skips values
        self._db.execute("CREATE TABLE IF NOT EXISTS counters (serial TEXT PRIMARY KEY, next INTEGER NOT NULL)")

    def take(self, serial: str) -> int:
        """The next unused counter of token `serial` (0 for a token never used)."""
        self._db.execute("INSERT OR IGNORE INTO counters VALUES (?, 0)", (serial,))
        row = self._db.execute("UPDATE counters SET next = next + 1 WHERE serial = ? RETURNING next - 1",
                               (serial,)).fetchone()
        return int(row[0])

    def close(self) -> None:
        self._db.close()
