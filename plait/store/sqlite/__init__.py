"""SQLite long-term store: :class:`SqliteStore` and its asyncio twin :class:`AsyncSqliteStore`."""

from __future__ import annotations

from plait.store.sqlite._store import SqliteStore
from plait.store.sqlite.aio import AsyncSqliteStore

__all__ = ["AsyncSqliteStore", "SqliteStore"]
