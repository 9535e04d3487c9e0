"""The long-term store: a :class:`BaseStore` on the server's database, and its HTTP endpoints.

Every worker reads and writes the same ``plait_server_store`` table, so a node's
``store.put`` on one worker is seen by ``client.store.get_item`` on any other.
"""

from __future__ import annotations

import asyncio
import operator
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from plait.server._db import Database, Row, Tx
from plait.server._http import body, json_response, query_flag
from plait.server._ttl import expiry, item_ttl, ttl_minutes
from plait.server._wire import ApiError, as_dict, as_list, dumps, loads, now_iso
from plait.store._embed import IndexSpec
from plait.store._rank import pack, similarity, unpack
from plait.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

__all__ = ["ServerStore", "routes"]

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": operator.eq,
    "$ne": operator.ne,
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lt": operator.lt,
    "$lte": operator.le,
}


def _matches(value: Mapping[str, Any], conditions: Mapping[str, Any]) -> bool:
    for key, expected in conditions.items():
        actual = value.get(key)
        ops = as_dict(expected)
        if isinstance(expected, dict) and ops and all(k.startswith("$") for k in ops):
            for name, arg in ops.items():
                if name not in _OPS:
                    raise ApiError(422, f"unknown filter operator {name!r}; use one of {sorted(_OPS)}")
                try:
                    if not _OPS[name](actual, arg):
                        return False
                except TypeError:
                    return False
        elif actual != expected:
            return False
    return True


def _ns(namespace: Iterable[str]) -> str:
    return ".".join(namespace)


def _like(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + ".%"


_LIVE = "(expires_at IS NULL OR expires_at > ?)"
"""An item whose time to live has not run out (one parameter: now)."""


class ServerStore(BaseStore):
    """Items in the server database (``plait_server_store``), shared by all workers.

    Items may expire (``ttl`` in minutes, see :mod:`plait.server._ttl`): an expired item is
    never read, and the worker's sweep deletes it.
    """

    supports_ttl = True

    def __init__(self, db: Database, ttl: TTLConfig | None = None, index: IndexSpec | None = None) -> None:
        self.db = db
        self.ttl_config = ttl or None
        self.index = index
        self.index_config = cast("IndexConfig", index.config) if index is not None else None
        self.loop: asyncio.AbstractEventLoop | None = None

    def refreshes(self, refresh_ttl: bool | None) -> bool:
        """Whether a read restarts its items' time to live: ``refresh_ttl``, else the config's ``refresh_on_read``."""
        return self._refresh(refresh_ttl)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` from a node's thread (on the server's event loop)."""
        if self.loop is None:
            raise RuntimeError("the server store is used outside the server")
        return asyncio.run_coroutine_threadsafe(self.abatch(ops), self.loop).result()

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order."""
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(await self._get(op))
            elif isinstance(op, SearchOp):
                results.append(await self._search(op))
            elif isinstance(op, PutOp):
                await self._put(op)
                results.append(None)
            else:
                results.append(await self._namespaces(op))
        return results

    async def _get(self, op: GetOp) -> Item | None:
        rows = await self.db.fetch(
            f"SELECT * FROM plait_server_store WHERE prefix = ? AND key = ? AND {_LIVE}",
            (_ns(op.namespace), op.key, time.time()),
        )
        if op.refresh_ttl:
            await self._restart(rows)
        return _item(rows[0], Item) if rows else None

    async def _restart(self, rows: list[Row]) -> None:
        """Restart the time to live of the items read (those that have one), in one statement."""
        timed = [(r["prefix"], r["key"]) for r in rows if r.get("ttl_minutes") is not None]
        if timed:
            pairs = ", ".join("(?, ?)" for _ in timed)
            await self.db.run(
                "UPDATE plait_server_store SET expires_at = ? + ttl_minutes * 60.0 "
                f"WHERE ttl_minutes IS NOT NULL AND (prefix, key) IN (VALUES {pairs})",
                (time.time(), *(x for pair in timed for x in pair)),
            )

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        if op.query and self.index is None:
            raise NotImplementedError(
                "store search by 'query' needs a semantic index: set store.index in the config "
                '(e.g. {"embed": "openai:text-embedding-3-small", "dims": 1536})'
            )
        if op.query:
            return await self._ranked(op, cast("IndexSpec", self.index))
        where, params = _live_under(op.namespace_prefix)
        # langgraph dev's order: namespaces as first written, then keys as first written; a page
        # is cut by the database unless a filter (matched here, on the values) picks the items
        page = "" if op.filter else " LIMIT ? OFFSET ?"
        rows = await self.db.fetch(
            "SELECT * FROM (SELECT s.*, MIN(created_at) OVER (PARTITION BY prefix) AS ns_first "
            f"FROM plait_server_store s {where}) t ORDER BY ns_first, prefix, created_at, key{page}",
            (*params, *(() if op.filter else (op.limit, op.offset))),
        )
        if op.filter:
            rows = [r for r in rows if _matches(loads(r["value"]), op.filter)][
                op.offset : op.offset + op.limit
            ]
        if op.refresh_ttl:
            await self._restart(rows)
        return [_item(r, SearchItem) for r in rows]

    async def _ranked(self, op: SearchOp, index: IndexSpec) -> list[SearchItem]:
        """Items by similarity to ``op.query`` (each by its closest field), then those with no vector."""
        query = (await index.aembed([op])).queries[cast("str", op.query)]
        where, params = _live_under(op.namespace_prefix)
        rows = await self.db.fetch(
            f"SELECT s.*, v.vector FROM plait_server_store s LEFT JOIN plait_server_store_vectors v "
            f"ON v.prefix = s.prefix AND v.key = s.key {where} ORDER BY s.updated_at DESC, s.prefix, s.key",
            params,
        )
        if op.filter:
            rows = [r for r in rows if _matches(loads(r["value"]), op.filter)]
        # scored in a thread: with thousands of vectors (and no numpy) that takes a while
        ranked = await asyncio.to_thread(_rank, rows, query, index.distance)
        best = {(r["prefix"], r["key"]) for _, r in ranked}
        rest = [r for r in rows if (r["prefix"], r["key"]) not in best]  # nothing embedded: after, unscored
        page: list[tuple[float | None, Row]] = [*ranked, *((None, r) for r in rest)]
        page = page[op.offset : op.offset + op.limit]
        if op.refresh_ttl:
            await self._restart([r for _, r in page])
        return [_scored(r, score) for score, r in page]

    async def _put(self, op: PutOp) -> None:
        prefix = _ns(op.namespace)
        if op.value is None:
            async with self.db.tx() as tx:
                await tx.run("DELETE FROM plait_server_store WHERE prefix = ? AND key = ?", (prefix, op.key))
                await tx.run(
                    "DELETE FROM plait_server_store_vectors WHERE prefix = ? AND key = ?", (prefix, op.key)
                )
            return
        minutes = None if op.ttl is None else ttl_minutes(float(op.ttl), "ttl")  # (checked first)
        # embedded before anything is written: an embedder that fails stores nothing
        vectors = (await self.index.aembed([op])).docs.get(0, []) if self.index is not None else []
        now = now_iso()
        async with self.db.tx() as tx:
            await self._write(tx, op, prefix, now, minutes)
            await tx.run(
                "DELETE FROM plait_server_store_vectors WHERE prefix = ? AND key = ?", (prefix, op.key)
            )
            for field, vector in vectors:
                await tx.run(
                    "INSERT INTO plait_server_store_vectors (prefix, key, field, vector) VALUES (?, ?, ?, ?)",
                    (prefix, op.key, field, pack(vector)),
                )

    @staticmethod
    async def _write(tx: Tx, op: PutOp, prefix: str, now: str, minutes: float | None) -> None:
        await tx.run(
            "INSERT INTO plait_server_store (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (prefix, key) DO UPDATE SET value = excluded.value, "
            # an item that had expired (not swept yet) is a new item: it starts afresh
            "created_at = CASE WHEN plait_server_store.expires_at <= ? THEN excluded.created_at "
            "ELSE plait_server_store.created_at END, "
            "updated_at = excluded.updated_at, expires_at = excluded.expires_at, ttl_minutes = excluded.ttl_minutes",
            (
                prefix,
                op.key,
                dumps(dict(cast("Mapping[str, Any]", op.value))).decode(),
                now,
                now,
                expiry(minutes),
                minutes,
                time.time(),
            ),
        )

    async def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        rows = await self.db.fetch(
            f"SELECT DISTINCT prefix FROM plait_server_store WHERE {_LIVE} ORDER BY prefix", (time.time(),)
        )
        found: set[tuple[str, ...]] = set()
        for row in rows:
            ns = tuple(str(row["prefix"]).split("."))
            if all(_condition(c.match_type, tuple(c.path), ns) for c in op.match_conditions or ()):
                found.add(ns[: op.max_depth] if op.max_depth is not None else ns)
        return sorted(found)[op.offset : op.offset + op.limit]


def _live_under(namespace_prefix: tuple[str, ...]) -> tuple[str, list[Any]]:
    """``WHERE`` (and its parameters) for the unexpired items under a namespace prefix (table alias ``s``)."""
    prefix = _ns(namespace_prefix)
    where = f"WHERE {_LIVE}"
    params: list[Any] = [time.time()]
    if prefix:
        where += " AND (s.prefix = ? OR s.prefix LIKE ? ESCAPE '\\')"
        params += [prefix, _like(prefix)]
    return where, params


def _rank(rows: list[Row], query: list[float], distance: str) -> list[tuple[float, Row]]:
    """The rows that have a vector, best first, each item once (by its closest field)."""
    with_vector = [r for r in rows if r["vector"] is not None]
    scores = similarity(distance)(query, [unpack(bytes(r["vector"])) for r in with_vector])
    best: dict[tuple[str, str], tuple[float, Row]] = {}
    for row, score in zip(with_vector, scores, strict=True):
        item = (row["prefix"], row["key"])
        if item not in best or score > best[item][0]:
            best[item] = (score, row)
    return sorted(best.values(), key=lambda pair: -pair[0])


def _condition(kind: str, path: tuple[str, ...], ns: tuple[str, ...]) -> bool:
    if len(path) > len(ns):
        return False
    part = ns[: len(path)] if kind == "prefix" else ns[len(ns) - len(path) :]
    return all(p in ("*", n) for p, n in zip(path, part, strict=True))


def _item(row: Row, cls: Any) -> Any:
    return cls(
        namespace=tuple(str(row["prefix"]).split(".")),
        key=row["key"],
        value=loads(row["value"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def _scored(row: Row, score: float | None) -> SearchItem:
    item: Item = _item(row, Item)
    return SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at, score)


def _wire_item(item: Item, score: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "namespace": list(item.namespace),
        "key": item.key,
        "value": item.value,
        "created_at": item.created_at.isoformat(),
        "updated_at": item.updated_at.isoformat(),
    }
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


def _store(request: Request) -> ServerStore:
    store: ServerStore = request.app.state.server.store
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
    store = _store(request)
    ttl = item_ttl(data.get("ttl"))  # null (the SDK's default): the config's default_ttl, else never
    if ttl is None:
        ttl = (store.ttl_config or {}).get("default_ttl")
    index = data.get("index")  # null: the config's fields; false: not embedded; or the fields to embed
    if index not in (None, False) and not (
        isinstance(index, list) and all(isinstance(f, str) for f in as_list(index))
    ):
        raise ApiError(422, f"index must be false, null or a list of field paths, got {index!r}")
    await store.abatch([PutOp(namespace, key, cast("dict[str, Any]", value), index=index, ttl=ttl)])
    return Response(status_code=204)


async def get_item(request: Request) -> Response:
    """``GET /store/items?namespace=a.b&key=k``: one item, ``null`` when missing (as LangGraph's server)."""
    namespace = _namespace(request.query_params.get("namespace", ""))
    key = request.query_params.get("key")
    if not key:
        raise ApiError(422, "the 'key' query parameter is required")
    store = _store(request)
    refresh = query_flag(request, "refresh_ttl")
    item = (await store.abatch([GetOp(namespace, key, store.refreshes(refresh))]))[0]
    if item is None:
        return json_response(None)
    return json_response(_wire_item(cast("Item", item)))


async def delete_item(request: Request) -> Response:
    """``DELETE /store/items``: delete an item (absent items are fine)."""
    data = await body(request)
    namespace = _namespace(data.get("namespace"))
    key = data.get("key")
    if not isinstance(key, str) or not key:
        raise ApiError(422, "key must be a non-empty string")
    await _store(request).abatch([PutOp(namespace, key, None)])
    return Response(status_code=204)


async def search_items(request: Request) -> Response:
    """``POST /store/items/search``: items under a namespace prefix, filtered."""
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
    op = SearchOp(
        prefix,
        cast("dict[str, Any] | None", flt),
        _int(data, "limit", 10),
        _int(data, "offset", 0),
        query,
        store.refreshes(refresh),
    )
    try:
        items = (await store.abatch([op]))[0]
    except NotImplementedError as exc:
        raise ApiError(422, str(exc)) from None
    return json_response({"items": [_wire_item(i, True) for i in cast("list[SearchItem]", items)]})


async def list_namespaces(request: Request) -> Response:
    """``POST /store/namespaces``: the namespaces in use, by prefix/suffix, cut at ``max_depth``."""
    data = await body(request)
    conditions = [
        MatchCondition(kind, _namespace(data[kind], kind)) for kind in ("prefix", "suffix") if data.get(kind)
    ]
    depth = data.get("max_depth")
    if depth is not None and (not isinstance(depth, int) or depth < 1):
        raise ApiError(422, "max_depth must be a positive integer")
    op = ListNamespacesOp(tuple(conditions), depth, _int(data, "limit", 100), _int(data, "offset", 0))
    found = (await _store(request).abatch([op]))[0]
    return json_response({"namespaces": [list(ns) for ns in cast("list[tuple[str, ...]]", found)]})


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
