"""``SqliteCache``: a node cache in a SQLite file (stdlib ``sqlite3``), shared by processes."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from types import TracebackType

from typing_extensions import Self

from plait.cache.base import BaseCache, FullKey, Namespace, ValueT, check_ttl
from plait.checkpoint.serde.base import SerializerProtocol

__all__ = ["SqliteCache"]

_SCHEMA = """CREATE TABLE IF NOT EXISTS cache (
    ns TEXT NOT NULL,
    key TEXT NOT NULL,
    expiry REAL,
    encoding TEXT NOT NULL,
    val BLOB NOT NULL,
    PRIMARY KEY (ns, key)
)"""


def _ns(namespace: Namespace) -> str:
    return json.dumps(list(namespace))


class SqliteCache(BaseCache[ValueT]):
    """A cache in a SQLite file (WAL mode); entries outlive the process and are shared with others.

    Args:
        path: The database file (created if missing); ``":memory:"`` for a private one.
        serde: Serializer for the values (default: plait's codec).
    """

    def __init__(self, *, path: str, serde: SerializerProtocol | None = None) -> None:
        super().__init__(serde=serde)
        self.path = path
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(path, check_same_thread=False, timeout=30.0, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(_SCHEMA)

    def get(self, keys: Sequence[FullKey]) -> dict[FullKey, ValueT]:
        """The values of ``keys`` that are cached and not expired (expired ones are deleted)."""
        found: dict[FullKey, ValueT] = {}
        if not keys:
            return found
        now = time.time()
        with self._lock:
            for ns, key in keys:
                row = self._conn.execute(
                    "SELECT expiry, encoding, val FROM cache WHERE ns = ? AND key = ?", (_ns(ns), key)
                ).fetchone()
                if row is None:
                    continue
                expiry, tag, data = row
                if expiry is not None and now >= expiry:
                    self._conn.execute("DELETE FROM cache WHERE ns = ? AND key = ?", (_ns(ns), key))
                    continue
                found[(tuple(ns), key)] = self.serde.loads_typed((tag, bytes(data)))
        return found

    async def aget(self, keys: Sequence[FullKey]) -> dict[FullKey, ValueT]:
        """Async :meth:`get` (runs in a worker thread)."""
        return await asyncio.to_thread(self.get, keys)

    def set(self, pairs: Mapping[FullKey, tuple[ValueT, int | None]]) -> None:
        """Store ``{key: (value, ttl seconds or None)}`` in one transaction.

        Raises:
            ValueError: a ttl is negative or not a number.
        """
        now = time.time()
        rows: list[tuple[str, str, float | None, str, bytes]] = []
        for (ns, key), (value, ttl) in pairs.items():
            seconds = check_ttl(ttl)
            tag, data = self.serde.dumps_typed(value)
            rows.append((_ns(ns), key, None if seconds is None else now + seconds, tag, data))
        if not rows:
            return
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO cache (ns, key, expiry, encoding, val) VALUES (?, ?, ?, ?, ?)",
                    rows,
                )
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    async def aset(self, pairs: Mapping[FullKey, tuple[ValueT, int | None]]) -> None:
        """Async :meth:`set` (runs in a worker thread)."""
        await asyncio.to_thread(self.set, pairs)

    def clear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        """Delete every entry of ``namespaces`` (``None``: everything)."""
        with self._lock:
            if namespaces is None:
                self._conn.execute("DELETE FROM cache")
                return
            self._conn.executemany("DELETE FROM cache WHERE ns = ?", [(_ns(ns),) for ns in namespaces])

    async def aclear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        """Async :meth:`clear` (runs in a worker thread)."""
        await asyncio.to_thread(self.clear, namespaces)

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
