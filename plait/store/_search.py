"""Search for the SQL stores: filters, pagination, ranking by a query vector.

Ranked results come first, best first; items that match but have no vectors
(put with ``index=False``, or before the store had an index) follow with
``score=None`` -- as ``InMemoryStore`` does. Unranked results are ordered by
``updated_at``, newest first (LangGraph's SQL stores' order), or with the store's
``search_order="written"`` as ``InMemoryStore`` (and LangGraph's server) keeps them: namespaces
in the order of their oldest item, each one's items in the order they were first written (an
update keeps an item's place).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from plait.store._codec import decode_value
from plait.store._embed import IndexSpec
from plait.store._filter import Term, matcher, scalar_terms
from plait.store._rank import Scorer, cosine, unpack
from plait.store._statement import Rows, Sql, Step, prefix_condition
from plait.store.base import SearchItem, SearchOp

__all__ = ["ORDERS", "Query", "SearchDialect", "among", "ordered_rank", "run_search", "scan_rank"]

Ranked = list[tuple[str, str, float]]
_NO_VECTORS = "NOT EXISTS (SELECT 1 FROM plait_store_vectors v WHERE v.prefix = s.prefix AND v.key = s.key)"
_COLUMNS = "s.prefix, s.key, s.value, s.created_at, s.updated_at, s.ttl_minutes"
ORDERS = {
    "updated": "s.updated_at DESC, s.prefix, s.key",
    "written": "s.ns_first, s.prefix, s.created_at, s.key",
}


class SearchDialect(Protocol):
    """What a search needs of a database's dialect (the rest is the engine's ``Dialect``)."""

    p: str
    """The parameter placeholder (``?`` or ``%s``)."""

    def now(self, seconds: float) -> object:
        """A timestamp parameter."""
        ...

    def timestamp(self, column: Any) -> Any:
        """A timestamp column as a ``datetime``."""
        ...

    def alive(self, now: object) -> tuple[str, list[object]]:
        """The condition "not expired at ``now``" on ``s``."""
        ...

    def terms(self, terms: list[Term]) -> tuple[str, list[object]]:
        """Filter terms as one SQL condition on ``s.value``."""
        ...

    def refresh(self, keys: list[tuple[str, str]], now: object) -> list[Sql]:
        """Restart the TTL clocks of these items."""
        ...

    def rank(self, query: Query) -> Step:
        """Rank the items matching ``query`` by similarity: ``[(prefix, key, score)]``, best first."""
        ...

    def value(self, column: Any) -> dict[str, Any]:
        """A value column as a dict."""
        ...


class _Engine(Protocol):
    """What a search needs of the engine running it: its dialect, semantic index and result order."""

    @property
    def d(self) -> SearchDialect: ...

    @property
    def index(self) -> IndexSpec | None: ...

    @property
    def order(self) -> str: ...


"""The orders of unranked results a store's ``search_order`` picks (see the module docstring)."""


@dataclass(frozen=True)
class Query:
    """A ranked search as a ranking strategy sees it."""

    where: str
    """SQL condition on the items (``s``): namespace, expiry and SQL-evaluable filters."""
    params: list[object]
    """Parameters of ``where``."""
    vector: list[float]
    """The query vector."""
    want: int
    """How many distinct items are needed (offset + limit)."""
    filter: dict[str, Any] | None
    """A filter left for Python (``None`` when SQL evaluates it)."""
    scope: str = "1=1"
    """The part of ``where`` without the filter: namespace and expiry."""
    scope_params: list[object] = field(default_factory=list[object])
    """Parameters of ``scope``."""


def run_search(
    engine: _Engine, op: SearchOp, vector: list[float] | None, now: float
) -> Generator[Any, Rows, Any]:
    """Answer one search operation (a step generator)."""
    d = engine.d
    when = d.now(now)
    alive, params = d.alive(when)
    where, more = prefix_condition(d.p, op.namespace_prefix)
    clauses, params = [alive, where], [*params, *more]
    scope, scope_params = " AND ".join(clauses), list(params)
    terms = scalar_terms(op.filter)
    if terms:
        sql, extra = d.terms(terms)
        clauses.append(sql)
        params.extend(extra)
    left = op.filter if terms is None else None
    query = Query(
        " AND ".join(clauses), params, vector or [], op.offset + op.limit, left, scope, scope_params
    )
    timed: list[tuple[str, str]] = []  # the hits that have a TTL: (prefix, key)
    if vector is not None and engine.index is not None:
        hits = yield from _ranked(engine, op, query, timed)
    else:
        hits = yield from _plain(engine, query, op.offset, op.limit, timed, ranked_first=False)
    if op.refresh_ttl and timed:
        for refresh in d.refresh(timed, when):
            _ = yield refresh
    return hits


def _ranked(
    engine: _Engine, op: SearchOp, query: Query, timed: list[tuple[str, str]]
) -> Generator[Any, Rows, list[SearchItem]]:
    ranked: Ranked = yield from engine.d.rank(query)
    page = ranked[op.offset : query.want]
    hits: list[SearchItem] = []
    if page:
        rows = yield Sql(
            f"{among(engine.d.p, len(page))} SELECT {_COLUMNS} FROM w JOIN plait_store s ON s.prefix = w.p AND s.key = w.k",
            [x for prefix, key, _ in page for x in (prefix, key)],
        )
        found = {(r[0], r[1]): r for r in rows}
        for prefix, key, score in page:
            if (row := found.get((prefix, key))) is not None:
                hits.append(_hit(engine, row, score, timed))
    if len(ranked) < query.want:
        skip = max(0, op.offset - len(ranked))
        count = query.want - max(op.offset, len(ranked))
        hits += yield from _plain(engine, query, skip, count, timed, ranked_first=True)
    return hits


def _plain(  # noqa: PLR0913 - a page of a search, and where its TTL'd hits go
    engine: _Engine,
    query: Query,
    offset: int,
    limit: int,
    timed: list[tuple[str, str]],
    *,
    ranked_first: bool,
) -> Generator[object, Rows, list[SearchItem]]:
    where = f"{query.where} AND {_NO_VECTORS}" if ranked_first and engine.index is not None else query.where
    source, params = "plait_store s", list(query.params)
    if engine.order == "written":  # each namespace's oldest item, whatever the filter picks
        source = (
            "(SELECT s.*, MIN(s.created_at) OVER (PARTITION BY s.prefix) AS ns_first "
            f"FROM plait_store s WHERE {query.scope}) s"
        )
        params = [*query.scope_params, *params]
    order = f"SELECT {_COLUMNS} FROM {source} WHERE {where} ORDER BY {ORDERS[engine.order]}"
    if query.filter is None:
        p = engine.d.p
        rows = yield Sql(f"{order} LIMIT {p} OFFSET {p}", [*params, limit, offset])
    else:
        rows = yield Sql(order, params)
        test = matcher(query.filter)
        rows = [r for r in rows if test(engine.d.value(r[2]))][offset : offset + limit]
    return [_hit(engine, r, None, timed) for r in rows]


def among(p: str, count: int) -> str:
    """``WITH w(p, k) AS (VALUES ...)``: ``count`` (prefix, key) pairs to join on (index lookups)."""
    return f"WITH w(p, k) AS (VALUES {', '.join(f'({p}, {p})' for _ in range(count))})"


def _hit(
    engine: _Engine, row: tuple[Any, ...], score: float | None, timed: list[tuple[str, str]]
) -> SearchItem:
    """A search hit from ``prefix, key, value, created_at, updated_at, ttl_minutes`` (noting a TTL in ``timed``)."""
    if row[5] is not None:
        timed.append((row[0], row[1]))
    d = engine.d
    return SearchItem(
        tuple(row[0].split(".")), row[1], d.value(row[2]), d.timestamp(row[3]), d.timestamp(row[4]), score
    )


def _dedupe(rows: Rows, score: Callable[[Any], float]) -> Ranked:
    seen: set[tuple[str, str]] = set()
    out: Ranked = []
    for row in rows:
        if (row[0], row[1]) not in seen:
            seen.add((row[0], row[1]))
            out.append((row[0], row[1], score(row[2])))
    return out


def ordered_rank(  # noqa: PLR0913 - one ranking, its SQL and its Python fallback
    p: str,
    query: Query,
    distance: str,
    vector_param: object,
    *,
    to_score: Callable[[Any], float],
    score: Scorer = cosine,
) -> Generator[Any, Rows, Ranked]:
    """Rank in SQL: ``ORDER BY distance LIMIT n``, widening ``n`` until enough distinct items come back.

    Args:
        p: The placeholder.
        query: The search.
        distance: SQL distance expression over ``v.embedding`` with one placeholder for the query.
        vector_param: The query vector as that placeholder's parameter.
        to_score: Distance to score.
        score: The same scores computed in Python (for filters SQL cannot evaluate).
    """
    if query.filter is not None:
        return (yield from scan_rank(p, query, decode=None, score=score))
    limit = max(query.want * 2, 16)
    while True:
        rows = yield Sql(
            f"SELECT v.prefix, v.key, {distance} AS distance FROM plait_store_vectors v "
            f"JOIN plait_store s ON s.prefix = v.prefix AND s.key = v.key "
            f"WHERE {query.where} ORDER BY distance LIMIT {p}",
            [vector_param, *query.params, limit],
        )
        ranked = _dedupe(sorted(rows, key=lambda r: float(r[2])), to_score)  # relaxed-order index scans
        if len(ranked) >= query.want or len(rows) < limit:
            return ranked
        limit *= 4


def scan_rank(
    p: str,
    query: Query,
    *,
    decode: Callable[[Any], list[float]] | None,
    vector_sql: str = "v.embedding",
    score: Scorer = cosine,
) -> Generator[Any, Rows, Ranked]:
    """Rank exactly in Python: fetch the candidates' vectors, score them all.

    Args:
        p: The placeholder (unused; kept for a uniform signature).
        query: The search.
        decode: Column to vector (``None``: the column is JSON text such as ``[1,2]``).
        vector_sql: The SQL expression selecting the vector.
        score: Query and vectors to scores (higher is closer).
    """
    del p
    rows = yield Sql(
        f"SELECT v.prefix, v.key, {vector_sql}, s.value FROM plait_store_vectors v "
        f"JOIN plait_store s ON s.prefix = v.prefix AND s.key = v.key WHERE {query.where}",
        query.params,
    )
    if query.filter is not None:
        test = matcher(query.filter)
        rows = [r for r in rows if test(decode_value(r[3]))]
    vectors = [decode(r[2]) if decode else _parse(r[2]) for r in rows]
    scores = score(query.vector, vectors)
    order = sorted(range(len(rows)), key=lambda i: -scores[i])
    return _dedupe([(rows[i][0], rows[i][1], scores[i]) for i in order], float)


def _parse(column: Any) -> list[float]:
    if isinstance(column, (bytes, bytearray, memoryview)):
        return unpack(bytes(cast("bytes", column)))
    if isinstance(column, str):
        return [float(x) for x in column.strip("[]").split(",") if x]
    return [float(x) for x in column]
