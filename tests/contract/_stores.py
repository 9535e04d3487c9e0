"""Store factories for the store contract: memory, SQLite files, PostgreSQL (shared server), pgvector (private).

Async stores are driven from a plain test through :class:`AsyncClient`: it runs every
``a``-method on an event loop of its own thread, so one test body covers both APIs.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from typing import Any

from _pg import PG_DSN, private_schema, require_pg

SYNC_NAMES = {"get", "put", "delete", "search", "list_namespaces", "batch", "sweep_ttl"}


class AsyncClient:
    """The sync face of an async store: ``client.put(...)`` awaits ``store.aput(...)`` on the store's loop."""

    def __init__(self, factory: Callable[[], Any], exits: ExitStack) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        exits.callback(self._close)
        self.manager = factory()
        self.store = self.call(self.manager.__aenter__())
        exits.callback(lambda: self.call(self.manager.__aexit__(None, None, None)))

    def call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(60)

    def _close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()

    def __getattr__(self, name: str) -> Any:
        if name == "sweep_ttl":
            return lambda: self.call(_maybe_await(self.store.sweep_ttl()))
        if name in SYNC_NAMES:
            method = getattr(self.store, "a" + name)
            return lambda *a, **k: self.call(method(*a, **k))
        return getattr(self.store, name)


async def _maybe_await(value: Any) -> Any:
    return await value if asyncio.iscoroutine(value) else value


def _memory_async(index: Any, ttl: Any) -> Any:
    from plait.store.memory import InMemoryStore

    @asynccontextmanager
    async def manager() -> Any:
        yield InMemoryStore(index=index, ttl=ttl)

    return manager()


def _pgvector_schema_dsn(exits: ExitStack) -> str:
    import psycopg
    from _pgvector import pgvector_dsn

    base = pgvector_dsn()
    schema = f"plait_v_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
        admin.execute(f"CREATE SCHEMA {schema}")
    exits.callback(lambda: _drop(base, schema))
    return f"{base}?options=-csearch_path%3D{schema},public"


def _drop(dsn: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f"DROP SCHEMA {schema} CASCADE")


def _dsn(kind: str, exits: ExitStack) -> str:
    if kind == "pgvector":
        return _pgvector_schema_dsn(exits)
    require_pg()
    return exits.enter_context(private_schema("plait_st"))


def open_store(  # noqa: PLR0913 - the store, how it is called, and its settings
    kind: str, mode: str, tmp: Any, exits: ExitStack, index: Any = None, ttl: Any = None, **options: Any
) -> Any:
    """A store of ``kind`` (memory, sqlite, postgres, pgvector) used through the ``mode`` (sync/async) API;
    ``options`` go to the SQL stores only (e.g. ``search_order``)."""
    if mode == "async":
        return AsyncClient(lambda: _async_manager(kind, tmp, exits, index, ttl, options), exits)
    if kind == "memory":
        from plait.store.memory import InMemoryStore

        return InMemoryStore(index=index, ttl=ttl)
    if kind == "sqlite":
        from plait.store.sqlite import SqliteStore

        return exits.enter_context(
            SqliteStore.from_conn_string(tmp / f"{uuid.uuid4().hex}.db", index=index, ttl=ttl, **options)
        )
    from plait.store.postgres import PostgresStore

    store = exits.enter_context(
        PostgresStore.from_conn_string(_dsn(kind, exits), index=index, ttl=ttl, **options)
    )
    store.setup()
    return store


def _async_manager(  # noqa: PLR0913 - as open_store
    kind: str, tmp: Any, exits: ExitStack, index: Any, ttl: Any, options: dict[str, Any]
) -> Any:
    if kind == "memory":
        return _memory_async(index, ttl)
    if kind == "sqlite":
        from plait.store.sqlite.aio import AsyncSqliteStore

        return AsyncSqliteStore.from_conn_string(
            tmp / f"{uuid.uuid4().hex}.db", index=index, ttl=ttl, **options
        )
    from plait.store.postgres.aio import AsyncPostgresStore

    return AsyncPostgresStore.from_conn_string(
        _dsn(kind, exits), pool_config={"max_size": 2}, index=index, ttl=ttl, **options
    )


@contextmanager
def stores() -> Iterator[ExitStack]:
    with ExitStack() as exits:
        yield exits


__all__ = ["PG_DSN", "AsyncClient", "open_store", "stores"]
