"""All SQL text of :class:`plait.checkpoint.postgres.PostgresSaver` (PostgreSQL dialect)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from typing_extensions import LiteralString

from plait.checkpoint._engine_ops import Fetch, Ops, Step
from plait.checkpoint._engine_sql import PutRows, WriteRow, page_query
from plait.checkpoint._lease import lease_sql
from plait.checkpoint.postgres._functions import HEAD_COLUMNS, PUT_FUNCTION
from plait.checkpoint.postgres._literal import render, usable

__all__ = [
    "ASYNC_BY_ITSELF",
    "ASYNC_COMMIT",
    "BLOB_KEYS",
    "DELETE_BLOB",
    "DELETE_CHECKPOINT",
    "DELETE_THREAD",
    "DELETE_WRITES_OF",
    "GET_META",
    "HEAD_AND_PARENT",
    "HEAD_ID",
    "INSERT_BLOB",
    "INSERT_CHECKPOINT",
    "LEASE",
    "LEASE_TEMP",
    "LEGACY_TABLES",
    "LOCK",
    "LOCK_THREAD",
    "META_TABLE",
    "MIGRATIONS",
    "NAMESPACES",
    "PROBE",
    "PRUNE_ROWS",
    "PUT",
    "PUT_TEMP",
    "SCHEMA_VERSION",
    "SELECT_HEAD",
    "SET_META",
    "STRICT",
    "TEMPORARY",
    "THREADS",
    "WRITES_STATEMENTS",
    "chain_query",
    "join_steps",
    "legacy_steps",
    "list_query",
    "put_ops",
    "strict_params",
    "writes_query",
    "writes_steps",
]

SCHEMA_VERSION = 3

LOCK = "SELECT pg_advisory_xact_lock(7046317051)"
"""Serialises concurrent setup()/migrations of several processes."""

MIGRATIONS: dict[int, list[LiteralString]] = {
    1: [
        """CREATE TABLE IF NOT EXISTS plait_checkpoints (
            thread_id TEXT NOT NULL,
            checkpoint_ns TEXT NOT NULL DEFAULT '',
            checkpoint_id TEXT NOT NULL,
            parent_checkpoint_id TEXT,
            step INTEGER,
            source TEXT,
            created_at TEXT NOT NULL,
            checkpoint BYTEA NOT NULL,
            metadata BYTEA NOT NULL,
            PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
        )""",
        """CREATE TABLE IF NOT EXISTS plait_checkpoint_blobs (
            thread_id TEXT NOT NULL,
            checkpoint_ns TEXT NOT NULL DEFAULT '',
            channel TEXT NOT NULL,
            version TEXT NOT NULL,
            prev_id TEXT,
            type TEXT NOT NULL,
            blob BYTEA NOT NULL,
            PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
        )""",
        """CREATE TABLE IF NOT EXISTS plait_checkpoint_writes (
            thread_id TEXT NOT NULL,
            checkpoint_ns TEXT NOT NULL DEFAULT '',
            checkpoint_id TEXT NOT NULL,
            task_id TEXT NOT NULL,
            idx INTEGER NOT NULL,
            channel TEXT NOT NULL,
            task_path TEXT NOT NULL DEFAULT '',
            type TEXT NOT NULL DEFAULT 'msgpack',
            blob BYTEA NOT NULL,
            PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
        )""",
    ],
    2: [
        """CREATE TABLE IF NOT EXISTS plait_checkpoint_leases (
            thread_id TEXT NOT NULL,
            checkpoint_ns TEXT NOT NULL DEFAULT '',
            owner TEXT,
            expires_at TIMESTAMPTZ NOT NULL,
            waiter TEXT,
            waiter_seen TIMESTAMPTZ,
            PRIMARY KEY (thread_id, checkpoint_ns)
        )""",
    ],
}

META_TABLE = "CREATE TABLE IF NOT EXISTS plait_migrations (v INTEGER PRIMARY KEY)"
"""Schema versions applied, one row each (LangGraph keeps its own in ``checkpoint_migrations``)."""

PROBE = """SELECT to_regclass('plait_migrations') IS NOT NULL,
    EXISTS(SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
           AND table_name = 'checkpoint_blobs' AND column_name = 'prev_id'),
    EXISTS(SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
           AND table_name = 'checkpoints' AND column_name = 'checkpoint' AND data_type = 'jsonb')"""
"""``(plait's tables exist, plait's tables under their old names exist, LangGraph's tables exist)``."""

LEGACY_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_leases")
"""plait before schema 3 used LangGraph's table names (and ``checkpoint_migrations``)."""


def legacy_steps(present: set[str]) -> list[Step]:
    """Move plait's tables of schema 1-2 (LangGraph's names) to their ``plait_`` names.

    Their primary keys are renamed too, and the indexes and version rows LangGraph's
    ``setup()`` may have added to them are dropped, so LangGraph can create its own.
    """
    steps = [Step("SELECT COALESCE(MAX(v), 0) FROM checkpoint_migrations WHERE v <= 2", [])]
    for table in LEGACY_TABLES:
        if table in present:
            steps.append(Step(f"ALTER TABLE {table} RENAME TO plait_{table}", []))
            steps.append(
                Step(f"ALTER TABLE plait_{table} RENAME CONSTRAINT {table}_pkey TO plait_{table}_pkey", [])
            )
    steps.append(
        Step(
            "DROP INDEX IF EXISTS checkpoints_thread_id_idx, checkpoint_blobs_thread_id_idx, "
            "checkpoint_writes_thread_id_idx",
            [],
        )
    )
    steps.append(Step("DROP TABLE checkpoint_migrations", []))
    return steps


LEGACY_PRESENT = """SELECT table_name FROM information_schema.tables
    WHERE table_schema = current_schema() AND table_name = ANY(%s)"""

GET_META = "SELECT MAX(v) FROM plait_migrations"
SET_META = "INSERT INTO plait_migrations (v) VALUES (%s) ON CONFLICT (v) DO NOTHING"

INSERT_CHECKPOINT = """INSERT INTO plait_checkpoints
    (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, step, source, created_at, checkpoint, metadata)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
    ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
      parent_checkpoint_id = EXCLUDED.parent_checkpoint_id, step = EXCLUDED.step, source = EXCLUDED.source,
      checkpoint = EXCLUDED.checkpoint, metadata = EXCLUDED.metadata"""

INSERT_BLOB = """INSERT INTO plait_checkpoint_blobs
    (thread_id, checkpoint_ns, channel, version, prev_id, type, blob) VALUES (%s, %s, %s, %s, %s, %s, %s)
    ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO UPDATE SET
      prev_id = EXCLUDED.prev_id, type = EXCLUDED.type, blob = EXCLUDED.blob"""

SELECT_HEAD = f"""SELECT {HEAD_COLUMNS}, w.task_id, w.channel, w.blob
    FROM plait_checkpoints c LEFT JOIN plait_checkpoint_writes w
      ON w.thread_id = c.thread_id AND w.checkpoint_ns = c.checkpoint_ns AND w.checkpoint_id = c.checkpoint_id
    WHERE c.thread_id = %s AND c.checkpoint_ns = %s AND c.checkpoint_id = COALESCE(%s::text,
      (SELECT checkpoint_id FROM plait_checkpoints WHERE thread_id = %s AND checkpoint_ns = %s
       ORDER BY checkpoint_id DESC LIMIT 1))
    ORDER BY w.task_id, w.idx"""

DELETE_THREAD = [
    "DELETE FROM plait_checkpoint_writes WHERE thread_id = %s",
    "DELETE FROM plait_checkpoint_blobs WHERE thread_id = %s",
    "DELETE FROM plait_checkpoints WHERE thread_id = %s",
]

PRUNE_ROWS = """SELECT checkpoint_ns, checkpoint_id, created_at, checkpoint FROM plait_checkpoints
    WHERE thread_id = %s ORDER BY checkpoint_ns, checkpoint_id DESC"""
BLOB_KEYS = "SELECT channel, version FROM plait_checkpoint_blobs WHERE thread_id = %s AND checkpoint_ns = %s"
DELETE_BLOB = """DELETE FROM plait_checkpoint_blobs
    WHERE thread_id = %s AND checkpoint_ns = %s AND channel = %s AND version = %s"""
DELETE_CHECKPOINT = (
    "DELETE FROM plait_checkpoints WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s"
)
DELETE_WRITES_OF = (
    "DELETE FROM plait_checkpoint_writes WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s"
)


def writes_query(thread: tuple[str, str], ids: Sequence[str]) -> tuple[str, list[Any]]:
    """Pending writes of several checkpoints of one thread."""
    sql = (
        "SELECT checkpoint_id, task_id, channel, blob FROM plait_checkpoint_writes "
        "WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = ANY(%s) "
        "ORDER BY checkpoint_id, task_id, idx"
    )
    return sql, [*thread, list(ids)]


def chain_query(thread: tuple[str, str], targets: Sequence[tuple[str, str]]) -> tuple[str, list[Any]]:
    """Blob rows of ``targets`` (``(channel, row id)`` pairs) and of every row their deltas build on."""
    # LATERAL forces one primary-key lookup per step whatever the table statistics say.
    sql = """WITH RECURSIVE chain(channel, version, prev_id, type, blob) AS (
        SELECT b.channel, b.version, b.prev_id, b.type, b.blob
        FROM unnest(%s::text[], %s::text[]) AS t(channel, version)
        CROSS JOIN LATERAL (SELECT * FROM plait_checkpoint_blobs x
          WHERE x.thread_id = %s AND x.checkpoint_ns = %s AND x.channel = t.channel
            AND x.version = t.version LIMIT 1) b
        UNION ALL
        SELECT b.channel, b.version, b.prev_id, b.type, b.blob
        FROM chain CROSS JOIN LATERAL (SELECT * FROM plait_checkpoint_blobs x
          WHERE x.thread_id = %s AND x.checkpoint_ns = %s AND x.channel = chain.channel
            AND x.version = chain.prev_id LIMIT 1) b
        WHERE chain.type = 'delta'
    ) SELECT channel, version, prev_id, type, blob FROM chain"""
    return sql, [[c for c, _ in targets], [r for _, r in targets], *thread, *thread]


HEAD_ID = """SELECT MAX(checkpoint_id) FROM (SELECT checkpoint_id FROM plait_checkpoints
    WHERE thread_id = %s AND checkpoint_ns = %s ORDER BY checkpoint_id DESC LIMIT 1) AS head"""
ASYNC_COMMIT = "SELECT set_config('synchronous_commit', 'off', true)"
"""Run inside a transaction whose commit need not wait for the disk (a later durable commit flushes it)."""
LOCK_THREAD: str | None = "SELECT pg_advisory_xact_lock(hashtext(%s))"
"""Taken before checking the thread head, so two writers cannot both pass the check."""
HEAD_AND_PARENT = f"""SELECT ({HEAD_ID}), EXISTS(SELECT 1 FROM plait_checkpoints
    WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s)"""
"""The thread head and whether the parent a put builds on still exists (read inside the put's transaction)."""
NAMESPACES = (
    "SELECT DISTINCT checkpoint_ns FROM plait_checkpoints WHERE thread_id = %s ORDER BY checkpoint_ns"
)

THREADS = """SELECT c.thread_id, t.n, c.checkpoint_id, c.step, c.created_at FROM plait_checkpoints c
JOIN (SELECT thread_id, COUNT(*) AS n, MAX(checkpoint_id) AS head FROM plait_checkpoints
      WHERE checkpoint_ns = '' GROUP BY thread_id) t
  ON c.thread_id = t.thread_id AND c.checkpoint_ns = '' AND c.checkpoint_id = t.head
ORDER BY c.created_at DESC"""


def list_query(
    thread: tuple[str, str | None] | None,
    after: tuple[str, str, str] | None,
    where: dict[str, Any],
    limit: int,
) -> tuple[str, list[Any]]:
    """One page of checkpoint rows, newest first (see :func:`plait.checkpoint._engine_sql.page_query`)."""
    return page_query("%s", HEAD_COLUMNS, thread, after, where, limit)


MIGRATIONS[3] = [PUT_FUNCTION]

_BEGIN = "SELECT * FROM plait_begin(%(t)s, %(ns)s, %(me)s, %(ttl)s, %(stale)s, %(queue)s)"
_RELEASE = "SELECT plait_release(%(t)s, %(ns)s, %(me)s)"
LEASE = lease_sql("postgres")._replace(begin=_BEGIN, release=_RELEASE)
"""Statements on ``plait_checkpoint_leases`` (the cross-process thread lease)."""
LEASE_TEMP = LEASE._replace(
    begin=_BEGIN.replace("FROM plait_", "FROM pg_temp.plait_"),
    release=_RELEASE.replace("SELECT plait_", "SELECT pg_temp.plait_"),
)
""":data:`LEASE` where plait's tables and functions live in the connection's temporary schema."""
ASYNC_BY_ITSELF = frozenset({LEASE.begin, LEASE_TEMP.begin})
"""Statements that turn ``synchronous_commit`` off themselves (a batch of them needs no ``ASYNC_COMMIT``)."""

PUT = f"""SELECT head, there FROM plait_put({", ".join(["%s"] * 24)})"""
PUT_TEMP = PUT.replace("FROM plait_put(", "FROM pg_temp.plait_put(")
"""PostgreSQL never looks up functions in ``pg_temp`` unqualified (tables there are found)."""


def _strict(put: str) -> str:
    """``put`` as one statement of a batch: a put that may not be written fails the whole transaction.

    Takes four more parameters first: ``need_parent, do_check, expected, cid`` (the put's own rule,
    :func:`plait.checkpoint._engine_sql.put_allowed`). The failing branch depends on a column, so
    PostgreSQL cannot evaluate it while planning.
    """
    call = put.removeprefix("SELECT head, there FROM ")
    return f"""SELECT CASE WHEN (there OR NOT %s) AND (NOT %s OR (head IS NOT DISTINCT FROM %s
      AND (head IS NULL OR %s > head))) THEN head
    ELSE (COALESCE(head, '') || ' plait_put refused: the thread moved or a base row was pruned')::int::text END
    FROM {call}"""


STRICT = {PUT: _strict(PUT), PUT_TEMP: _strict(PUT_TEMP)}
"""Each put statement's batch form (see :func:`_strict`)."""


def strict_params(params: list[object]) -> list[object]:
    """The batch form's parameters, from the put's (see :func:`put_ops`)."""
    return [params[4], params[5], params[6], params[2], *params]


TEMPORARY = """SELECT COALESCE((SELECT relpersistence = 't' FROM pg_class
    WHERE oid = to_regclass('plait_checkpoints')), false)"""
"""Whether plait's tables (and so ``plait_put``) live in the connection's temporary schema."""


def put_ops(rows: PutRows, temporary: bool = False) -> Ops[tuple[str | None, bool]]:
    """Answers ``(head, parent exists)``; nothing is written unless the put's conditions hold."""
    checkpoint = rows.checkpoint
    params: list[object] = [
        rows.thread[0],
        rows.thread[1],
        rows.cid,
        rows.parent,
        rows.need_parent,
        rows.expected is not ...,
        None if rows.expected is ... else rows.expected,
        rows.lock,
        rows.durable,
        *checkpoint[4:9],
    ]
    for blobs in (rows.blobs, rows.rewrites):
        params.extend(
            map(list, zip(*blobs, strict=True)) if blobs else ([] for _ in range(5))
        )  # a list per column
    head, there = (yield Fetch(PUT_TEMP if temporary else PUT, params))[0]
    return head, bool(there)


_PUT_WRITES = "SELECT plait_put_writes(%s, %s, %s, %s, %s, %s, %s, %s)"
_PUT_WRITES_TEMP = _PUT_WRITES.replace("SELECT plait_", "SELECT pg_temp.plait_")
WRITES_STATEMENTS = frozenset({_PUT_WRITES, _PUT_WRITES_TEMP})
"""A task's writes (:func:`writes_steps`): they touch no row a put reads or writes."""


def writes_steps(
    thread: tuple[str, str],
    cid: str | None,
    task_id: str,
    rows: Sequence[WriteRow],
    temporary: bool,
) -> tuple[Step, ...]:
    """A task's writes as one call of ``plait_put_writes``.

    A later row with the same ``idx`` replaces an earlier one, as one upsert after another would.
    """
    last = {row[0]: row for row in rows}
    params = [*thread, cid, task_id, *([row[i] for row in last.values()] for i in range(4))]
    return (Step(_PUT_WRITES_TEMP if temporary else _PUT_WRITES, params),)


def join_steps(cur: Any, steps: Sequence[Step]) -> str:
    """The statements as one query text (``cur`` is a ``ClientCursor``).

    A multi-statement query runs as one implicit transaction and answers in one round trip.
    Values are written by :func:`plait.checkpoint.postgres._literal.render`, or quoted by psycopg
    where it cannot (another type, or a connection where its literals would not hold).
    """
    info = cur.connection.info
    fast = usable(info.parameter_status("standard_conforming_strings"), info.encoding)
    parts: list[str] = []
    for item in steps:
        for params in item.params if item.many else [item.params]:
            text = render(item.sql, params) if fast else None
            parts.append(cur.mogrify(item.sql, params) if text is None else text)
    return ";\n".join(parts)
