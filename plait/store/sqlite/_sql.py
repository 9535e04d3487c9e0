"""SQLite's part of the store: DDL, filters as SQL, and vector ranking.

Values are JSON text, times are UTC epoch seconds, vectors float32 blobs.
Cosine ranking uses sqlite-vec's ``vec_distance_cosine`` when the connection could
load the extension; otherwise all vectors are kept in one NumPy matrix, reloaded
only when another write changed them (a counter that triggers maintain), and
ranked exactly in memory. The ``l2`` and ``inner_product`` distances rank by an
exact scan (pgvector's scores: minus the euclidean distance, the dot product).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from plait.store._filter import Term, kind_of, matches
from plait.store._rank import VectorMatrix, numpy, pack, similarity, unpack
from plait.store._search import Query, ordered_rank, scan_rank
from plait.store._search import among as pairs
from plait.store._statement import Rows, Sql, Step

__all__ = ["MIGRATIONS", "SqliteDialect"]

MIGRATIONS: list[str] = [
    """CREATE TABLE IF NOT EXISTS plait_store (
    prefix TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    expires_at REAL,
    ttl_minutes REAL,
    PRIMARY KEY (prefix, key)
)""",
    "CREATE INDEX IF NOT EXISTS plait_store_expires_at ON plait_store (expires_at) WHERE expires_at IS NOT NULL",
    """CREATE TABLE IF NOT EXISTS plait_store_vectors (
    prefix TEXT NOT NULL,
    key TEXT NOT NULL,
    field TEXT NOT NULL,
    embedding BLOB NOT NULL,
    PRIMARY KEY (prefix, key, field)
)""",
    "CREATE TABLE IF NOT EXISTS plait_store_meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    "INSERT OR IGNORE INTO plait_store_meta (name, value) VALUES ('vectors', 0)",
    """CREATE TRIGGER IF NOT EXISTS plait_store_drop_vectors AFTER DELETE ON plait_store BEGIN
    DELETE FROM plait_store_vectors WHERE prefix = old.prefix AND key = old.key;
END""",
    """CREATE TRIGGER IF NOT EXISTS plait_store_vectors_added AFTER INSERT ON plait_store_vectors BEGIN
    UPDATE plait_store_meta SET value = value + 1 WHERE name = 'vectors';
END""",
    """CREATE TRIGGER IF NOT EXISTS plait_store_vectors_removed AFTER DELETE ON plait_store_vectors BEGIN
    UPDATE plait_store_meta SET value = value + 1 WHERE name = 'vectors';
END""",
]
"""The statements that create the store's tables (each idempotent), run in order by ``setup``."""

_UPSERT = """
INSERT INTO plait_store (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (prefix, key) DO UPDATE SET
    value = excluded.value,
    created_at = CASE WHEN plait_store.expires_at IS NOT NULL AND plait_store.expires_at <= excluded.updated_at
                      THEN excluded.created_at ELSE plait_store.created_at END,
    updated_at = excluded.updated_at,
    expires_at = excluded.expires_at,
    ttl_minutes = excluded.ttl_minutes
"""

_TYPES = {"number": "('integer', 'real')", "string": "('text')", "bool": "('true', 'false')"}


def _term(key: str, op: str, arg: object) -> tuple[str, list[object]]:
    path = f'$."{key}"'
    params: list[object]
    kind = kind_of(arg)
    if op in ("$eq", "$ne"):
        if kind == "null":
            sql = "COALESCE(json_type(s.value, ?), 'null') = 'null'"
            params = [path]
        elif kind == "bool":
            sql = "COALESCE(json_type(s.value, ?), '') = ?"
            params = [path, "true" if arg else "false"]
        else:
            sql = f"COALESCE(json_type(s.value, ?) IN {_TYPES[kind]} AND json_extract(s.value, ?) = ?, 0)"
            params = [path, path, arg]
        return (f"NOT {sql}" if op == "$ne" else sql), params
    if kind not in ("number", "string"):
        return "0", []
    sign = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[op]
    return f"COALESCE(json_type(s.value, ?) IN {_TYPES[kind]} AND json_extract(s.value, ?) {sign} ?, 0)", [
        path,
        path,
        arg,
    ]


class SqliteDialect:
    """The SQLite dialect of the store engine (one per store: it holds the vector cache)."""

    p = "?"
    safe_filter_keys = True

    def __init__(self, dims: int | None, *, vec: bool, distance: str = "cosine") -> None:
        """Configure ranking.

        Args:
            dims: Vector length, if the store has an index.
            vec: Whether sqlite-vec is loaded on the connection.
            distance: ``cosine``, ``l2`` or ``inner_product``.
        """
        self.dims = dims
        self.vec = vec
        self.distance = distance
        self.cache: tuple[int, VectorMatrix, list[tuple[str, str]]] | None = None

    def now(self, seconds: float) -> float:
        """Epoch seconds."""
        return seconds

    def timestamp(self, column: Any) -> datetime:
        """Epoch seconds as an aware UTC datetime."""
        return datetime.fromtimestamp(float(column), timezone.utc)

    def value(self, column: Any) -> dict[str, Any]:
        """JSON text as a dict."""
        return json.loads(column)  # type: ignore[no-any-return]

    def alive(self, now: object) -> tuple[str, list[object]]:
        """Not expired at ``now``."""
        return "(s.expires_at IS NULL OR s.expires_at > ?)", [now]

    def terms(self, terms: list[Term]) -> tuple[str, list[object]]:
        """Filter terms on ``s.value`` via ``json_type``/``json_extract``."""
        parts = [_term(*term) for term in terms]
        return " AND ".join(sql for sql, _ in parts), [x for _, params in parts for x in params]

    def put_rows(self, rows: list[tuple[object, ...]]) -> list[Sql]:
        """One bulk upsert (one row: one plain execution)."""
        if not rows:
            return []
        if len(rows) == 1:
            p, k, v, now, exp, ttl = rows[0]
            return [Sql(_UPSERT, (p, k, v, now, now, exp, ttl))]
        return [Sql(_UPSERT, [(p, k, v, now, now, exp, ttl) for p, k, v, now, exp, ttl in rows], many=True)]

    def put_vectors(self, rows: list[tuple[str, str, str, list[float]]]) -> list[Sql]:
        """One bulk insert of float32 blobs."""
        text = "INSERT INTO plait_store_vectors (prefix, key, field, embedding) VALUES (?, ?, ?, ?)"
        return [Sql(text, [(p, k, f, pack(v)) for p, k, f, v in rows], many=True)]

    def drop_vectors(self, keys: list[tuple[str, str]]) -> list[Sql]:
        """Delete the vectors of these items."""
        return [Sql("DELETE FROM plait_store_vectors WHERE prefix = ? AND key = ?", keys, many=True)]

    def refresh(self, keys: list[tuple[str, str]], now: object) -> list[Sql]:
        """Restart TTL clocks."""
        text = (
            "UPDATE plait_store SET expires_at = ? + ttl_minutes * 60.0 "
            "WHERE prefix = ? AND key = ? AND ttl_minutes IS NOT NULL"
        )
        return [Sql(text, [(now, p, k) for p, k in keys], many=True)]

    def lock(self, keys: list[tuple[str, str]]) -> list[Sql]:  # noqa: ARG002 - the Dialect protocol
        """Nothing: a write transaction holds the whole database."""
        return []

    def sweep(self, now: object) -> Sql:
        """Delete the expired items (the transaction holds the whole database)."""
        return Sql(
            "DELETE FROM plait_store WHERE expires_at IS NOT NULL AND expires_at <= ? RETURNING 1", [now]
        )

    def rank(self, query: Query) -> Step:
        """sqlite-vec in SQL, else the NumPy matrix, else a pure-Python scan (other distances: a scan)."""
        if self.distance != "cosine":
            return (yield from scan_rank("?", query, decode=unpack, score=similarity(self.distance)))
        if self.vec:
            return (
                yield from ordered_rank(
                    "?",
                    query,
                    "vec_distance_cosine(v.embedding, ?)",
                    pack(query.vector),
                    to_score=lambda d: 1.0 - d,
                )
            )
        np = numpy()
        if np is None or self.dims is None:
            return (yield from scan_rank("?", query, decode=unpack))
        return (yield from self._matrix_rank(np, query))

    def _matrix_rank(self, np: Any, query: Query) -> Step:
        rows = yield Sql("SELECT value FROM plait_store_meta WHERE name = 'vectors'")
        version = int(rows[0][0])
        if self.cache is None or self.cache[0] != version:
            rows = yield Sql("SELECT prefix, key, embedding FROM plait_store_vectors")
            assert self.dims is not None  # noqa: S101 - checked by the caller
            matrix = VectorMatrix.from_blobs(np, [r[2] for r in rows], self.dims)
            self.cache = (version, matrix, [(r[0], r[1]) for r in rows])
        _, matrix, ids = self.cache
        scores = matrix.scores(query.vector)
        if query.filter is None:
            count = min(len(ids), max(query.want * 8, 64), 4000)
            top = matrix.top(scores, count)
            keep = yield from self._matching(query, [ids[i] for i in top])
            ranked = _collect(top, ids, scores, keep)
            if len(ranked) >= query.want or count == len(ids):
                return ranked
        keep = yield from self._matching(query, None)
        return _collect(matrix.top(scores, len(ids)), ids, scores, keep)

    def _matching(self, query: Query, among: list[tuple[str, str]] | None) -> Step:
        if among is not None:
            rows: Rows = yield Sql(
                f"{pairs('?', len(among))} SELECT s.prefix, s.key FROM w "
                f"JOIN plait_store s ON s.prefix = w.p AND s.key = w.k WHERE {query.where}",
                [x for pk in among for x in pk] + query.params,
            )
            return {(r[0], r[1]) for r in rows}
        rows = yield Sql(
            f"SELECT s.prefix, s.key, s.value FROM plait_store s WHERE {query.where}", query.params
        )
        if query.filter is not None:
            rows = [r for r in rows if matches(json.loads(r[2]), query.filter)]
        return {(r[0], r[1]) for r in rows}


def _collect(
    order: list[int], ids: list[tuple[str, str]], scores: Any, keep: set[tuple[str, str]]
) -> list[tuple[str, str, float]]:
    seen: set[tuple[str, str]] = set()
    out: list[tuple[str, str, float]] = []
    for i in order:
        pk = ids[i]
        if pk in keep and pk not in seen:
            seen.add(pk)
            out.append((pk[0], pk[1], float(scores[i])))
    return out
