"""The long-term store of ``plait serve``: a :mod:`plait.store` store on the server's database, and
its HTTP endpoints.

On SQLite it is an ``AsyncSqliteStore`` on a connection of its own to the server's file (its
batches run in a worker thread, off the event loop); on PostgreSQL an ``AsyncPostgresStore`` on
the server's connection pool, so every worker reads and writes the same ``plait_store`` table: a
node's ``store.put`` on one worker is seen by ``client.store.get_item`` on any other. The graphs
the server runs get this same store. Unranked searches keep LangGraph's server's order (namespaces
in the order of their oldest item, each one's items in the order they were first written); items
expire by the config's ``store.ttl`` (:mod:`plait.server._ttl`), and the worker's sweep deletes them.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from plait.server._db import Database, PostgresDatabase
from plait.server._http import body, json_response, query_flag
from plait.server._ttl import item_ttl
from plait.server._wire import ApiError, as_list
from plait.store._sqlstore import SqlStore
from plait.store.base import (
    NOT_PROVIDED,
    IndexConfig,
    InvalidFilterError,
    InvalidNamespaceError,
    InvalidValueError,
    Item,
    TTLConfig,
)
from plait.store.sqlite._store import connect
from plait.store.sqlite.aio import AsyncSqliteStore

if TYPE_CHECKING:
    from plait.store.postgres.aio import AsyncPostgresStore

_pg_store: Any
try:
    from plait.store.postgres.aio import AsyncPostgresStore as _pg_store
except ImportError:  # pragma: no cover - without the 'postgres' extra only SQLite is served
    _pg_store = None

__all__ = ["ServerStore", "close_store", "open_store", "routes"]

ServerStore: TypeAlias = "AsyncSqliteStore | AsyncPostgresStore"
"""The server's store: SQLite's or PostgreSQL's async store."""

_BAD_INPUT = (InvalidNamespaceError, InvalidValueError, InvalidFilterError)
"""What the store refuses in a request: a 422 with the store's message."""


async def open_store(db: Database, ttl: TTLConfig | None, index: IndexConfig | None) -> ServerStore:
    """The store on ``db``'s database, its tables set up (made by the server's schema step 3).

    Raises:
        EmbeddingDimensionError: the database holds vectors of another length than ``index["dims"]``.
    """
    options: dict[str, Any] = {"index": index, "ttl": ttl or None, "search_order": "written"}
    if isinstance(db, PostgresDatabase):  # (its pool needs the 'postgres' extra: the store is there)
        pg: AsyncPostgresStore = _pg_store(db.pool, **options)
        await pg.setup()
        return pg
    conn = await asyncio.to_thread(connect, db.target)
    try:
        store = AsyncSqliteStore(conn, **options)
        await store.setup()
    except BaseException:
        conn.close()
        raise
    return store


async def close_store(store: ServerStore) -> None:
    """Close what the store opened itself (its SQLite connection; PostgreSQL's pool is the server's)."""
    if isinstance(store, AsyncSqliteStore):
        await asyncio.to_thread(store.conn.close)


def _wire_item(item: Item, score: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = item.dict()
    if score:
        out["score"] = getattr(item, "score", None)
    return out


def _namespace(raw: Any, field: str = "namespace") -> tuple[str, ...]:
    if isinstance(raw, str):
        raw = raw.split(".") if raw else []
    labels = as_list(raw)
    if not isinstance(raw, list) or not all(isinstance(x, str) and x and "." not in x for x in labels):
        raise ApiError(422, f"{field} must be a list of non-empty strings without '.', got {raw!r}")
    return tuple(str(x) for x in labels)


def _store(request: Request) -> SqlStore:
    store: SqlStore = request.app.state.server.store
    return store


async def put_item(request: Request) -> Response:
    """``PUT /store/items``: create or replace an item."""
    data = await body(request)
    namespace = _namespace(data.get("namespace"))
    if not namespace:
        raise ApiError(422, "namespace must not be empty")
    key, value = data.get("key"), data.get("value")
    if not isinstance(key, str) or not key:
        raise ApiError(422, "key must be a non-empty string")
    if not isinstance(value, dict):
        raise ApiError(422, "value must be a JSON object")
    ttl = item_ttl(data.get("ttl"))  # null (the SDK's default): the config's default_ttl, else never
    index = data.get("index")  # null: the config's fields; false: not embedded; or the fields to embed
    if index not in (None, False) and not (
        isinstance(index, list) and all(isinstance(f, str) for f in as_list(index))
    ):
        raise ApiError(422, f"index must be false, null or a list of field paths, got {index!r}")
    try:
        await _store(request).aput(
            namespace,
            key,
            cast("dict[str, Any]", value),
            index=cast("Literal[False] | list[str] | None", index),
            ttl=NOT_PROVIDED if ttl is None else ttl,
        )
    except _BAD_INPUT as exc:
        raise ApiError(422, str(exc)) from None
    return Response(status_code=204)


async def get_item(request: Request) -> Response:
    """``GET /store/items?namespace=a.b&key=k``: one item, ``null`` when missing (as LangGraph's server)."""
    namespace = _namespace(request.query_params.get("namespace", ""))
    key = request.query_params.get("key")
    if not key:
        raise ApiError(422, "the 'key' query parameter is required")
    refresh = query_flag(request, "refresh_ttl")  # null: the config's refresh_on_read, else true
    item = await _store(request).aget(namespace, key, refresh_ttl=refresh)
    return json_response(None if item is None else _wire_item(item))


async def delete_item(request: Request) -> Response:
    """``DELETE /store/items``: delete an item (absent items are fine)."""
    data = await body(request)
    namespace = _namespace(data.get("namespace"))
    key = data.get("key")
    if not isinstance(key, str) or not key:
        raise ApiError(422, "key must be a non-empty string")
    await _store(request).adelete(namespace, key)
    return Response(status_code=204)


async def search_items(request: Request) -> Response:
    """``POST /store/items/search``: items under a namespace prefix, filtered, or ranked by ``query``."""
    data = await body(request)
    prefix = _namespace(data.get("namespace_prefix") or [], "namespace_prefix")
    flt = data.get("filter")
    if flt is not None and not isinstance(flt, dict):
        raise ApiError(422, "filter must be a JSON object")
    query = data.get("query")
    if query is not None and not isinstance(query, str):
        raise ApiError(422, f"query must be a string, got {query!r:.80}")
    refresh = data.get("refresh_ttl")
    if refresh is not None and not isinstance(refresh, bool):
        raise ApiError(422, f"refresh_ttl must be true, false or null, got {refresh!r}")
    store = _store(request)
    if query and store.index_config is None:
        raise ApiError(
            422,
            "store search by 'query' needs a semantic index: set store.index in the config "
            '(e.g. {"embed": "openai:text-embedding-3-small", "dims": 1536})',
        )
    try:
        items = await store.asearch(
            prefix,
            query=query,
            filter=cast("dict[str, Any] | None", flt),
            limit=_int(data, "limit", 10),
            offset=_int(data, "offset", 0),
            refresh_ttl=refresh,
        )
    except _BAD_INPUT as exc:
        raise ApiError(422, str(exc)) from None
    return json_response({"items": [_wire_item(i, True) for i in items]})


async def list_namespaces(request: Request) -> Response:
    """``POST /store/namespaces``: the namespaces in use, by prefix/suffix, cut at ``max_depth``."""
    data = await body(request)
    prefix, suffix = (_namespace(data[k], k) if data.get(k) else None for k in ("prefix", "suffix"))
    depth = data.get("max_depth")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
        raise ApiError(422, "max_depth must be a positive integer")
    found = await _store(request).alist_namespaces(
        prefix=prefix,
        suffix=suffix,
        max_depth=depth,
        limit=_int(data, "limit", 100),
        offset=_int(data, "offset", 0),
    )
    return json_response({"namespaces": [list(ns) for ns in found]})


def _int(data: dict[str, Any], key: str, default: int) -> int:
    value = data.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ApiError(422, f"{key} must be a non-negative integer, got {value!r}")
    return value


routes = [
    Route("/store/items", put_item, methods=["PUT"]),
    Route("/store/items", get_item, methods=["GET"]),
    Route("/store/items", delete_item, methods=["DELETE"]),
    Route("/store/items/search", search_items, methods=["POST"]),
    Route("/store/namespaces", list_namespaces, methods=["POST"]),
]
