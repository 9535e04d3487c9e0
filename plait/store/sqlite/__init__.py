"""SQLite long-term store: :class:`SqliteStore` (async: :mod:`plait.store.sqlite.aio`)."""

from __future__ import annotations

from plait.store.sqlite._store import SqliteStore

__all__ = ["SqliteStore"]
