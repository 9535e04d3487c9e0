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
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.responses import Response

from plait.server._api import Api, Body, Query
from plait.server._auth import authorize
from plait.server._auth_store import store_filter, store_namespace
from plait.server._db import Database, PostgresDatabase
from plait.server._http import json_response
from plait.server._ttl import MAX_MINUTES
from plait.server._wire import ApiError
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

__all__ = ["ServerStore", "api", "close_store", "open_store", "routes"]

ServerStore: TypeAlias = "AsyncSqliteStore | AsyncPostgresStore"
"""The server's store: SQLite's or PostgreSQL's async store."""

_BAD_INPUT = (InvalidNamespaceError, InvalidValueError, InvalidFilterError)
"""What the store refuses in a request: a 422 with the store's message."""


async def open_store(db: Database, ttl: TTLConfig | None, index: IndexConfig | None) -> ServerStore:
    """The store on ``db``'s database, its tables set up (made by the server's schema step 3).

    Raises:
        EmbeddingDimensionError: the database holds vectors of another length than ``index["dims"]``.
    """
    # (the stores' keyword arguments: the config's index and ttl sections, checked when it was read)
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


# -- request and response models -------------------------------------------------------------

Label = Annotated[str, Field(min_length=1, pattern=r"^[^.]+$", description="A namespace label: no '.'.")]
Namespace = Annotated[list[Label], Field(description="The labels of a namespace, outermost first.")]
Count = Annotated[int, Field(ge=0)]
Minutes = Annotated[float, Field(gt=0, le=MAX_MINUTES, description="Minutes (at most a hundred years).")]


class StorePut(Body):
    """An item to create or replace."""

    namespace: Annotated[list[Label], Field(min_length=1)]
    key: Annotated[str, Field(min_length=1)]
    value: dict[str, object]
    index: Literal[False] | list[str] | None = Field(
        None, description="The fields to embed: null for the config's, false for none."
    )
    ttl: Minutes | None = Field(None, description="Minutes until it expires; null: the config's default_ttl.")


class StoreDelete(Body):
    """The item to delete."""

    namespace: Namespace
    key: Annotated[str, Field(min_length=1)]


class StoreGetQuery(Query):
    """Which item to read."""

    namespace: str = Field("", description="The namespace's labels joined by '.'.")
    key: Annotated[str, Field(min_length=1)]
    refresh_ttl: bool | None = Field(None, description="Restart its time to live (null: the config's).")


class StoreSearch(Body):
    """Items under a namespace prefix: filtered, or ranked by ``query``."""

    namespace_prefix: Namespace | None = None
    filter: dict[str, object] | None = None
    limit: Count | None = 10
    offset: Count | None = 0
    query: str | None = None
    refresh_ttl: bool | None = None


class StoreNamespaces(Body):
    """The namespaces in use, matched by prefix and suffix (``*``: any label), cut at ``max_depth``."""

    prefix: Namespace | None = None
    suffix: Namespace | None = None
    max_depth: Annotated[int, Field(ge=1)] | None = None
    limit: Count | None = 100
    offset: Count | None = 0


class StoreItem(BaseModel):
    """A stored item."""

    namespace: list[str]
    key: str
    value: dict[str, object]
    created_at: str
    updated_at: str


class StoreSearchItem(StoreItem):
    """A search result; ``score`` when ranked by a query."""

    score: float | None = None


class StoreSearchResponse(BaseModel):
    """Search results."""

    items: list[StoreSearchItem]


class StoreNamespacesResponse(BaseModel):
    """Namespaces in use."""

    namespaces: list[list[str]]


# -- handlers ----------------------------------------------------------------------------------

api = Api("Store", "Long-term memory shared by the graphs: items under namespaces, searched and ranked.")


def _wire_item(item: Item, score: bool = False) -> dict[str, object]:
    out: dict[str, object] = item.dict()
    if score:
        out["score"] = getattr(item, "score", None)
    return out


def _store(request: Request) -> ServerStore:
    store: ServerStore = request.app.state.server.store
    return store


@api.put("/store/items", "Put Item", body=StorePut, body_required=True, status=204)
async def put_item(request: Request, body: StorePut) -> Response:
    """Create or replace an item (its fields embedded when the config has ``store.index``)."""
    # (as the auth handler leaves it, passed on to the store: ``Any``, the handler may change it)
    value: dict[str, Any] = {
        "namespace": tuple(body.namespace),
        "key": body.key,
        "value": body.value,
        "index": body.index,
    }
    value["ttl"] = body.ttl
    await authorize(request, "store", "put", value)  # (the handler may move the item: read it back)
    try:
        await _store(request).aput(
            store_namespace(value, empty=False),
            str(value["key"]),
            value["value"],
            index=value["index"],
            ttl=NOT_PROVIDED if value["ttl"] is None else value["ttl"],  # null: the config's default_ttl
        )
    except _BAD_INPUT as exc:
        raise ApiError(422, str(exc)) from None
    return Response(status_code=204)


@api.get("/store/items", "Get Item", query=StoreGetQuery, response=StoreItem | None)
async def get_item(request: Request, query: StoreGetQuery) -> Response:
    """One item, ``null`` when there is none (as LangGraph's server answers)."""
    namespace = tuple(query.namespace.split(".")) if query.namespace else ()
    # (as the auth handler leaves it, passed on to the store: ``Any``, the handler may change it)
    value: dict[str, Any] = {"namespace": namespace, "key": query.key, "refresh_ttl": query.refresh_ttl}
    await authorize(request, "store", "get", value)
    try:
        item = await _store(request).aget(
            store_namespace(value), str(value["key"]), refresh_ttl=value["refresh_ttl"]
        )
    except _BAD_INPUT as exc:
        raise ApiError(422, str(exc)) from None
    return json_response(None if item is None else _wire_item(item))


@api.delete("/store/items", "Delete Item", body=StoreDelete, body_required=True, status=204)
async def delete_item(request: Request, body: StoreDelete) -> Response:
    """Delete an item (an absent one is fine)."""
    value: dict[str, object] = {"namespace": tuple(body.namespace), "key": body.key}
    await authorize(request, "store", "delete", value)
    await _store(request).adelete(store_namespace(value), str(value["key"]))
    return Response(status_code=204)


@api.post("/store/items/search", "Search Items", body=StoreSearch, response=StoreSearchResponse)
async def search_items(request: Request, body: StoreSearch) -> Response:
    """Items under a namespace prefix, filtered; ranked by similarity with ``query`` (needs ``store.index``)."""
    store = _store(request)
    if body.query and store.index_config is None:
        raise ApiError(
            422,
            "store search by 'query' needs a semantic index: set store.index in the config "
            '(e.g. {"embed": "openai:text-embedding-3-small", "dims": 1536})',
        )
    # (as the auth handler leaves it, passed on to the store: ``Any``, the handler may change it)
    value: dict[str, Any] = {
        "namespace": tuple(body.namespace_prefix or ()),
        "filter": body.filter,
        "query": body.query,
    }
    value.update(limit=10 if body.limit is None else body.limit, offset=body.offset or 0)
    value["refresh_ttl"] = body.refresh_ttl
    filters = await authorize(request, "store", "search", value)
    wanted = store_filter(value["filter"], filters)
    if wanted is False:  # the auth's filter and the request's exclude each other
        return json_response({"items": []})
    try:
        items = await store.asearch(
            store_namespace(value),
            query=value["query"],
            filter=wanted or None,
            limit=value["limit"],
            offset=value["offset"],
            refresh_ttl=value["refresh_ttl"],
        )
    except _BAD_INPUT as exc:
        raise ApiError(422, str(exc)) from None
    return json_response({"items": [_wire_item(i, True) for i in items]})


@api.post("/store/namespaces", "List Namespaces", body=StoreNamespaces, response=StoreNamespacesResponse)
async def list_namespaces(request: Request, body: StoreNamespaces) -> Response:
    """The namespaces in use, by prefix and suffix, cut at ``max_depth``."""
    # (as the auth handler leaves it, passed on to the store: ``Any``, the handler may change it)
    value: dict[str, Any] = {
        "namespace": tuple(body.prefix) if body.prefix else None,
        "max_depth": body.max_depth,
    }
    value.update(suffix=tuple(body.suffix) if body.suffix else None, offset=body.offset or 0)
    value["limit"] = 100 if body.limit is None else body.limit
    await authorize(request, "store", "list_namespaces", value)
    found = await _store(request).alist_namespaces(
        prefix=store_namespace(value) or None,
        suffix=store_namespace(value, "suffix") or None,
        max_depth=value["max_depth"],
        limit=value["limit"],
        offset=value["offset"],
    )
    return json_response({"namespaces": [list(ns) for ns in found]})


routes = api.routes()
