"""PostgreSQL's part of the store: DDL and setup, filters as SQL, vector ranking.

Values are ``jsonb``, times ``timestamptz``. With the pgvector extension,
vectors are ``vector(dims)`` (or ``halfvec(dims)``) columns under an HNSW index
for the configured distance (cosine, l2 or inner product), searched in SQL;
without it (e.g. a server that lacks pgvector) they are float32 ``bytea`` ranked
exactly in Python, and a warning says so once. Bulk writes pass arrays
to ``unnest`` so a batch of puts is one statement; arrays travel in binary
(``%b``: no text quoting of every element).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any, cast

from plait.store._filter import Term, kind_of
from plait.store._rank import pack, similarity, unpack, warn_once
from plait.store._search import Query, ordered_rank, scan_rank
from plait.store._statement import Sql, Step
from plait.store.base import EmbeddingDimensionError

__all__ = ["MIGRATIONS", "PostgresDialect", "setup_step"]

_LOCK_KEY = 5_170_217_012  # pg_advisory_xact_lock key serialising concurrent setups
_NO_PGVECTOR = (
    "the PostgreSQL server has no pgvector extension ('vector'), so PostgresStore ranks vectors by an "
    "exact scan in Python (slow on large stores); install pgvector on the server "
    "(https://github.com/pgvector/pgvector, e.g. the postgresql-NN-pgvector package) and run setup() again "
    "on a new database"
)

MIGRATIONS: list[str] = [
    """
CREATE TABLE IF NOT EXISTS plait_store (
    prefix TEXT COLLATE "C" NOT NULL,
    key TEXT NOT NULL,
    value JSONB NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ,
    ttl_minutes DOUBLE PRECISION,
    PRIMARY KEY (prefix, key)
)""",
    "CREATE INDEX IF NOT EXISTS plait_store_expires_at ON plait_store (expires_at) WHERE expires_at IS NOT NULL",
]
"""The statements :func:`setup_step` runs to create the items' table (each idempotent)."""
_VECTORS = """
CREATE TABLE IF NOT EXISTS plait_store_vectors (
    prefix TEXT COLLATE "C" NOT NULL,
    key TEXT NOT NULL,
    field TEXT NOT NULL,
    embedding {type} NOT NULL,
    PRIMARY KEY (prefix, key, field),
    FOREIGN KEY (prefix, key) REFERENCES plait_store (prefix, key) ON DELETE CASCADE
)"""
_ON_CONFLICT = """
ON CONFLICT (prefix, key) DO UPDATE SET
    value = excluded.value,
    created_at = CASE WHEN plait_store.expires_at IS NOT NULL AND plait_store.expires_at <= excluded.updated_at
                      THEN excluded.created_at ELSE plait_store.created_at END,
    updated_at = excluded.updated_at,
    expires_at = excluded.expires_at,
    ttl_minutes = excluded.ttl_minutes
"""
_UPSERT = (
    "INSERT INTO plait_store (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes) "
    "SELECT u.p, u.k, u.v::jsonb, %s, %s, u.e, u.t "
    "FROM unnest(%b::text[], %b::text[], %b::text[], %b::timestamptz[], %b::float8[]) AS u(p, k, v, e, t)"
    + _ON_CONFLICT
)
_UPSERT_ONE = (  # one row: plain values cost the server (and the client) less than arrays
    "INSERT INTO plait_store (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes) "
    "VALUES (%s, %s, %s::jsonb, %s, %s, %s::timestamptz, %s::float8)" + _ON_CONFLICT
)


_OPS = {"cosine": ("<=>", "cosine_ops"), "l2": ("<->", "l2_ops"), "inner_product": ("<#>", "ip_ops")}


def _one_minus(distance: Any) -> float:
    return 1.0 - float(distance)  # <=> is the cosine distance


def _negated(distance: Any) -> float:
    return -float(distance)  # <-> is the euclidean distance, <#> the negated inner product


_SCORE: dict[str, Callable[[object], float]] = {
    "cosine": _one_minus,
    "l2": _negated,
    "inner_product": _negated,
}


_INDEX = re.compile(r"\s*CREATE INDEX IF NOT EXISTS (\w+)")


def _create(statement: str) -> Step:
    """Run a ``CREATE ... IF NOT EXISTS``; an index only when it is missing: even when it exists,
    ``CREATE INDEX IF NOT EXISTS`` first waits for a lock that every open write transaction on its
    table holds back (a store opened beside busy writers would wait for them all)."""
    found = _INDEX.match(statement)
    if found is not None:
        rows = yield Sql(  # in the schema the tables are made in (the first of the search path)
            "SELECT to_regclass(quote_ident(current_schema()) || '.' || %s) IS NOT NULL", [found.group(1)]
        )
        if rows and rows[0][0]:
            return
    _ = yield Sql(statement)


def setup_step(migrations: list[str], dims: int | None, ann: dict[str, Any], distance: str) -> Step:
    """Create the tables (and the HNSW index); returns whether pgvector is used.

    Args:
        migrations: The items' table DDL (:data:`MIGRATIONS`).
        dims: Vector length, if the store has an index.
        ann: ``vector_type``, ``m`` and ``ef_construction`` of the HNSW index.
        distance: ``cosine``, ``l2`` or ``inner_product``.
    """
    _ = yield Sql(f"SELECT pg_advisory_xact_lock({_LOCK_KEY})")
    for statement in migrations:
        yield from _create(statement)
    if dims is None:
        return False
    kind = str(ann.get("vector_type", "vector"))
    rows = yield Sql(
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attrelid = to_regclass('plait_store_vectors') AND attname = 'embedding'"
    )
    if rows:
        found = str(rows[0][0])
        if found != "bytea" and found != f"{kind}({dims})":
            raise EmbeddingDimensionError(
                f"this database stores {found} embeddings but the index asks for {kind}({dims}); "
                "use the same dims and vector_type, or another database"
            )
        use_vector = found != "bytea"
    else:
        use_vector = yield from _create_extension()
        _ = yield Sql(_VECTORS.format(type=f"{kind}({dims})" if use_vector else "BYTEA"))
    if use_vector:
        m, ef = int(ann.get("m", 16)), int(ann.get("ef_construction", 64))
        name = "plait_store_vectors_hnsw" if distance == "cosine" else f"plait_store_vectors_hnsw_{distance}"
        yield from _create(
            f"CREATE INDEX IF NOT EXISTS {name} ON plait_store_vectors "
            f"USING hnsw (embedding {kind}_{_OPS[distance][1]}) WITH (m = {m}, ef_construction = {ef})"
        )
    return use_vector


def _create_extension() -> Step:
    rows = yield Sql("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
    if rows:
        return True
    rows = yield Sql("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
    if rows:
        _ = yield Sql("SAVEPOINT plait_vector")
        try:
            _ = yield Sql("CREATE EXTENSION IF NOT EXISTS vector")
        except Exception:  # noqa: BLE001 - e.g. no privilege: fall back to the exact scan
            _ = yield Sql("ROLLBACK TO SAVEPOINT plait_vector")
        else:
            return True
    return False


def _term(key: str, op: str, arg: object) -> tuple[str, list[object]]:
    kind = kind_of(arg)
    params: list[object]
    value: object
    if op in ("$eq", "$ne"):
        if kind == "null":
            sql = "COALESCE(jsonb_typeof(s.value -> %s), 'null') = 'null'"
            params = [key]
        else:
            sql = "COALESCE(s.value -> %s = %s::jsonb, FALSE)"
            params = [key, json.dumps(arg)]
        return (f"NOT {sql}" if op == "$ne" else sql), params
    if kind not in ("number", "string"):
        return "FALSE", []
    sign = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[op]
    if kind == "number":
        compare, value = f"(s.value -> %s) {sign} %s::jsonb", json.dumps(arg)
    else:
        compare, value = f'((s.value ->> %s) COLLATE "C") {sign} (%s::text COLLATE "C")', arg
    return f"CASE WHEN jsonb_typeof(s.value -> %s) = '{kind}' THEN {compare} ELSE FALSE END", [
        key,
        key,
        value,
    ]


class PostgresDialect:
    """The PostgreSQL dialect of the store engine."""

    p = "%s"
    safe_filter_keys = False

    def __init__(self, dims: int | None, ann: dict[str, Any], distance: str = "cosine") -> None:
        """Configure vectors.

        Args:
            dims: Vector length, if the store has an index.
            ann: HNSW settings (``vector_type``, ``m``, ``ef_construction``, ``ef_search``).
            distance: ``cosine``, ``l2`` or ``inner_product``.
        """
        self.dims = dims
        self.ann = ann
        self.distance = distance
        self.kind = str(ann.get("vector_type", "vector"))
        self.vector = False

    def now(self, seconds: float) -> datetime:
        """An aware UTC datetime."""
        return datetime.fromtimestamp(seconds, timezone.utc)

    def timestamp(self, column: Any) -> datetime:
        """Columns are already datetimes."""
        return column  # type: ignore[no-any-return]

    def value(self, column: Any) -> dict[str, Any]:
        """psycopg decodes jsonb already."""
        return cast("dict[str, Any]", column if isinstance(column, dict) else json.loads(column))

    def alive(self, now: object) -> tuple[str, list[object]]:
        """Not expired at ``now``."""
        return "(s.expires_at IS NULL OR s.expires_at > %s)", [now]

    def terms(self, terms: list[Term]) -> tuple[str, list[object]]:
        """Filter terms on ``s.value`` (jsonb)."""
        parts = [_term(*term) for term in terms]
        return " AND ".join(sql for sql, _ in parts), [x for _, params in parts for x in params]

    def put_rows(self, rows: list[tuple[object, ...]]) -> list[Sql]:
        """One upsert: plain values for one row, ``unnest`` arrays for more."""
        if not rows:
            return []
        if len(rows) == 1:
            prefix, key, value, now, expires, ttl = rows[0]
            return [Sql(_UPSERT_ONE, [prefix, key, value, now, now, expires, ttl])]
        now = rows[0][3]
        columns = list(zip(*[(p, k, v, e, t) for p, k, v, _, e, t in rows], strict=True))
        return [Sql(_UPSERT, [now, now, *[list(c) for c in columns]])]

    def put_vectors(self, rows: list[tuple[str, str, str, list[float]]]) -> list[Sql]:
        """One ``unnest`` insert (vector literals, or float32 ``bytea``)."""
        prefixes, keys, fields = [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]
        if self.vector:
            source = "unnest(%b::text[], %b::text[], %b::text[], %b::text[]) AS u(p, k, f, e)"
            vectors: list[object] = [json.dumps(r[3]) for r in rows]
            value = f"u.e::{self.kind}({self.dims})"
        else:
            source = "unnest(%b::text[], %b::text[], %b::text[], %b::bytea[]) AS u(p, k, f, e)"
            vectors = [pack(r[3]) for r in rows]
            value = "u.e"
        text = f"INSERT INTO plait_store_vectors (prefix, key, field, embedding) SELECT u.p, u.k, u.f, {value} FROM {source}"
        return [Sql(text, [prefixes, keys, fields, vectors])]

    def drop_vectors(self, keys: list[tuple[str, str]]) -> list[Sql]:
        """Delete the vectors of these items (one statement)."""
        text = (
            "DELETE FROM plait_store_vectors v USING unnest(%b::text[], %b::text[]) AS u(p, k) "
            "WHERE v.prefix = u.p AND v.key = u.k"
        )
        return [Sql(text, [[p for p, _ in keys], [k for _, k in keys]])]

    def lock(self, keys: list[tuple[str, str]]) -> list[Sql]:
        """Lock the existing rows of these items in key order (code point order, as Python sorts)."""
        text = (
            "SELECT 1 FROM plait_store s "
            "JOIN unnest(%b::text[], %b::text[]) AS u(p, k) ON s.prefix = u.p AND s.key = u.k "
            'ORDER BY s.prefix, s.key COLLATE "C" FOR UPDATE OF s'
        )
        return [Sql(text, [[p for p, _ in keys], [k for _, k in keys]])]

    def refresh(self, keys: list[tuple[str, str]], now: object) -> list[Sql]:
        """Restart TTL clocks, locking the rows in key order (concurrent refreshes cannot deadlock)."""
        text = (
            "WITH t AS (SELECT s.prefix, s.key FROM plait_store s "
            "JOIN unnest(%b::text[], %b::text[]) AS u(p, k) ON s.prefix = u.p AND s.key = u.k "
            'WHERE s.ttl_minutes IS NOT NULL ORDER BY s.prefix, s.key COLLATE "C" FOR UPDATE OF s) '
            "UPDATE plait_store s SET expires_at = %s + s.ttl_minutes * interval '1 minute' "
            "FROM t WHERE s.prefix = t.prefix AND s.key = t.key"
        )
        return [Sql(text, [[p for p, _ in keys], [k for _, k in keys], now])]

    def sweep(self, now: object) -> Sql:
        """Delete the expired items that no transaction holds (those go at the next sweep)."""
        return Sql(
            "DELETE FROM plait_store s USING (SELECT prefix, key FROM plait_store "
            "WHERE expires_at IS NOT NULL AND expires_at <= %s FOR UPDATE SKIP LOCKED) AS d "
            "WHERE s.prefix = d.prefix AND s.key = d.key RETURNING 1",
            [now],
        )

    def rank(self, query: Query) -> Step:
        """HNSW in SQL with pgvector, else an exact scan in Python."""
        if not self.vector:
            warn_once("pgvector", _NO_PGVECTOR)
            return (yield from scan_rank("%s", query, decode=unpack, score=similarity(self.distance)))
        ef = max(int(self.ann.get("ef_search", 100)), query.want)
        _ = yield Sql(f"SET LOCAL hnsw.ef_search = {ef}")
        _ = yield Sql("SET LOCAL hnsw.iterative_scan = relaxed_order")
        vector = json.dumps(query.vector)
        distance = f"v.embedding {_OPS[self.distance][0]} %s::{self.kind}({self.dims})"
        return (
            yield from ordered_rank(
                "%s", query, distance, vector, to_score=_SCORE[self.distance], score=similarity(self.distance)
            )
        )
