"""All SQL text of :class:`plait.checkpoint.postgres.PostgresSaver` (PostgreSQL dialect)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from typing_extensions import LiteralString

from plait.checkpoint._engine_ops import Fetch, Ops, Step
from plait.checkpoint._engine_sql import PutRows, page_query
from plait.checkpoint._lease import lease_sql
from plait.checkpoint.postgres._literal import render, usable

__all__ = [
    "BLOB_KEYS",
    "DELETE_BLOB",
    "DELETE_CHECKPOINT",
    "DELETE_TASK_WRITES",
    "DELETE_THREAD",
    "DELETE_WRITES_OF",
    "GET_META",
    "INSERT_BLOB",
    "INSERT_CHECKPOINT",
    "ASYNC_COMMIT",
    "HEAD_AND_PARENT",
    "LEGACY_TABLES",
    "PROBE",
    "PUT",
    "PUT_TEMP",
    "STRICT",
    "TEMPORARY",
    "HEAD_ID",
    "NAMESPACES",
    "THREADS",
    "INSERT_WRITE",
    "LEASE",
    "LOCK",
    "LOCK_THREAD",
    "META_TABLE",
    "MIGRATIONS",
    "FUNCTIONS",
    "BEGIN_FUNCTION",
    "WRITES_FUNCTION",
    "RELEASE_FUNCTION",
    "PRUNE_ROWS",
    "SCHEMA_VERSION",
    "SELECT_HEAD",
    "SET_META",
    "chain_query",
    "join_steps",
    "legacy_steps",
    "list_query",
    "put_ops",
    "strict_params",
    "writes_query",
    "writes_steps",
]

SCHEMA_VERSION = 4

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

DELETE_TASK_WRITES = """DELETE FROM plait_checkpoint_writes
    WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s AND task_id = %s
    AND channel NOT IN ('__interrupt__', '__resume__')"""

INSERT_WRITE = """INSERT INTO plait_checkpoint_writes
    (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, task_path, blob)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
    ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE SET
      channel = EXCLUDED.channel, task_path = EXCLUDED.task_path, blob = EXCLUDED.blob"""

_HEAD_COLUMNS = (
    "c.checkpoint_id, c.parent_checkpoint_id, c.step, c.source, c.created_at, c.checkpoint, c.metadata"
)

SELECT_HEAD = f"""SELECT {_HEAD_COLUMNS}, w.task_id, w.channel, w.blob
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
    return page_query("%s", _HEAD_COLUMNS, thread, after, where, limit)


PUT_FUNCTION = """CREATE OR REPLACE FUNCTION plait_put(
    t text, ns text, cid text, parent text, need_parent boolean, do_check boolean, expected text,
    lock_key text, durable boolean, step integer, source text, created text, record bytea, meta bytea,
    channels text[], versions text[], prevs text[], kinds text[], datas bytea[],
    rw_channels text[], rw_versions text[], rw_prevs text[], rw_kinds text[], rw_datas bytea[],
    OUT head text, OUT there boolean) LANGUAGE plpgsql
    SET plan_cache_mode = force_generic_plan AS $$
BEGIN
    IF NOT durable THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext(lock_key));
    -- a new snapshot per statement: what the head check reads is committed after the lock was taken
    SELECT c.checkpoint_id INTO head FROM plait_checkpoints c
        WHERE c.thread_id = t AND c.checkpoint_ns = ns ORDER BY c.checkpoint_id DESC LIMIT 1;
    -- plpgsql keeps generic plans: LATERAL ... LIMIT 1 and the loop below keep every lookup on the
    -- primary key (a generic plan may otherwise scan all the thread's rows, growing with its length)
    there := EXISTS(SELECT 1 FROM plait_checkpoints c
        WHERE c.thread_id = t AND c.checkpoint_ns = ns AND c.checkpoint_id = parent)
      -- and every row the new deltas build on (a prune may have removed an older base)
      AND NOT EXISTS(SELECT 1 FROM unnest(channels, prevs) AS r(c, p)
        LEFT JOIN LATERAL (SELECT true AS hit FROM plait_checkpoint_blobs b
          WHERE b.thread_id = t AND b.checkpoint_ns = ns AND b.channel = r.c AND b.version = r.p LIMIT 1) x
        ON true WHERE r.p IS NOT NULL AND x.hit IS NULL);
    IF (need_parent AND NOT there) OR (do_check AND
            (head IS DISTINCT FROM expected OR (head IS NOT NULL AND cid <= head))) THEN
        RETURN;
    END IF;
    INSERT INTO plait_checkpoint_blobs AS b (thread_id, checkpoint_ns, channel, version, prev_id, type, blob)
        SELECT t, ns, r.c, r.v, r.p, r.k, r.d FROM unnest(channels, versions, prevs, kinds, datas) AS r(c, v, p, k, d)
        ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO UPDATE SET
          prev_id = excluded.prev_id, type = excluded.type, blob = excluded.blob;
    FOR i IN 1 .. COALESCE(array_length(rw_channels, 1), 0) LOOP
        UPDATE plait_checkpoint_blobs SET prev_id = rw_prevs[i], type = rw_kinds[i], blob = rw_datas[i]
            WHERE thread_id = t AND checkpoint_ns = ns AND channel = rw_channels[i] AND version = rw_versions[i];
    END LOOP;
    INSERT INTO plait_checkpoints AS x (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, step,
          source, created_at, checkpoint, metadata)
        VALUES (t, ns, cid, parent, step, source, created, record, meta)
        ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
          parent_checkpoint_id = excluded.parent_checkpoint_id, step = excluded.step, source = excluded.source,
          checkpoint = excluded.checkpoint, metadata = excluded.metadata;
END $$"""
"""One put in one statement and one round trip: the thread's advisory lock, the head check, every row."""

MIGRATIONS[3] = [PUT_FUNCTION]

BEGIN_FUNCTION = f"""CREATE OR REPLACE FUNCTION plait_begin(t text, ns text, me text, ttl float8, stale float8,
    queue boolean) RETURNS TABLE(owner text, checkpoint_id text, parent_checkpoint_id text, step integer,
    source text, created_at text, checkpoint bytea, metadata bytea, task_id text, channel text, blob bytea)
    LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    got text;
BEGIN
    INSERT INTO plait_checkpoint_leases AS l (thread_id, checkpoint_ns, owner, expires_at)
        VALUES (t, ns, me, clock_timestamp() + ttl * interval '1 second')
        ON CONFLICT (thread_id, checkpoint_ns) DO UPDATE SET owner = excluded.owner,
          expires_at = excluded.expires_at,
          waiter = CASE WHEN l.waiter = excluded.owner THEN NULL ELSE l.waiter END
        WHERE (l.owner IS NULL OR l.expires_at < clock_timestamp())
          AND (l.waiter IS NULL OR l.waiter = excluded.owner OR l.waiter_seen < clock_timestamp() - stale * interval '1 second')
        RETURNING l.owner INTO got;
    IF got IS DISTINCT FROM me THEN
        IF queue THEN  -- next in line, unless another process is queued already
            UPDATE plait_checkpoint_leases x SET waiter = me, waiter_seen = clock_timestamp()
                WHERE x.thread_id = t AND x.checkpoint_ns = ns AND (x.owner IS NULL OR x.owner <> me)
                  AND (x.waiter IS NULL OR x.waiter = me OR x.waiter_seen < clock_timestamp() - stale * interval '1 second');
        END IF;
        RETURN;
    END IF;
    RETURN QUERY SELECT me, {_HEAD_COLUMNS}, w.task_id, w.channel, w.blob
        FROM plait_checkpoints c LEFT JOIN plait_checkpoint_writes w
          ON w.thread_id = c.thread_id AND w.checkpoint_ns = c.checkpoint_ns AND w.checkpoint_id = c.checkpoint_id
        WHERE c.thread_id = t AND c.checkpoint_ns = ns AND c.checkpoint_id = (SELECT h.checkpoint_id
          FROM plait_checkpoints h WHERE h.thread_id = t AND h.checkpoint_ns = ns ORDER BY h.checkpoint_id DESC LIMIT 1)
        ORDER BY w.task_id, w.idx;
    IF NOT FOUND THEN  -- a thread without checkpoints: the lease alone
        RETURN QUERY SELECT me, NULL::text, NULL::text, NULL::integer, NULL::text, NULL::text, NULL::bytea,
          NULL::bytea, NULL::text, NULL::text, NULL::bytea;
    END IF;
END $$"""
"""A run's start in one statement and one round trip: take the thread's lease (or queue for it) and,
when taken, read its head (the rows of :data:`SELECT_HEAD`, each after the owner)."""

RELEASE_FUNCTION = """CREATE OR REPLACE FUNCTION plait_release(t text, ns text, me text) RETURNS integer
    LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    SET LOCAL synchronous_commit TO DEFAULT;  -- a put may have turned it off: this commit reaches the disk
    DELETE FROM plait_checkpoint_leases
        WHERE thread_id = t AND checkpoint_ns = ns AND owner = me AND waiter IS NULL;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n = 0 THEN  -- another process waits: leave it the row, and its place in line
        UPDATE plait_checkpoint_leases SET owner = NULL, expires_at = clock_timestamp()
            WHERE thread_id = t AND checkpoint_ns = ns AND owner = me;
        GET DIAGNOSTICS n = ROW_COUNT;
    END IF;
    RETURN n;
END $$"""
"""A run's end: give the thread back (``drop``, else ``free``) in a commit that waits for the disk."""

WRITES_FUNCTION = """CREATE OR REPLACE FUNCTION plait_put_writes(t text, ns text, cid text, task text,
    idxs integer[], channels text[], paths text[], datas bytea[]) RETURNS void LANGUAGE plpgsql
    SET plan_cache_mode = force_generic_plan AS $$
BEGIN
    DELETE FROM plait_checkpoint_writes w
        WHERE w.thread_id = t AND w.checkpoint_ns = ns AND w.checkpoint_id = cid AND w.task_id = task
        AND w.channel NOT IN ('__interrupt__', '__resume__');
    INSERT INTO plait_checkpoint_writes AS x
          (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, task_path, blob)
        SELECT t, ns, cid, task, r.i, r.c, r.p, r.d FROM unnest(idxs, channels, paths, datas) AS r(i, c, p, d)
        ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE SET
          channel = excluded.channel, task_path = excluded.task_path, blob = excluded.blob;
END $$"""
"""A task's writes in one statement: those it wrote before go (an interrupt or a resume stays), these are stored."""

MIGRATIONS[4] = [BEGIN_FUNCTION, RELEASE_FUNCTION, WRITES_FUNCTION]

FUNCTIONS = (PUT_FUNCTION, BEGIN_FUNCTION, RELEASE_FUNCTION, WRITES_FUNCTION)
"""Created again by every set-up of the current schema (idempotent), so their bodies stay current."""

LEASE = lease_sql("postgres")._replace(
    begin="SELECT * FROM plait_begin(%(t)s, %(ns)s, %(me)s, %(ttl)s, %(stale)s, %(queue)s)",
    release="SELECT plait_release(%(t)s, %(ns)s, %(me)s)",
)
"""Statements on ``plait_checkpoint_leases`` (the cross-process thread lease)."""

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
        params.extend([b[i] for b in blobs] for i in range(5))
    head, there = (yield Fetch(PUT_TEMP if temporary else PUT, params))[0]
    return head, bool(there)


_PUT_WRITES = "SELECT plait_put_writes(%s, %s, %s, %s, %s, %s, %s, %s)"
_PUT_WRITES_TEMP = _PUT_WRITES.replace("SELECT plait_", "SELECT pg_temp.plait_")


def writes_steps(
    thread: tuple[str, str],
    cid: str | None,
    task_id: str,
    rows: Sequence[tuple[int, str, str, bytes]],
    temporary: bool,
) -> tuple[Step, ...]:
    """A task's writes (``(idx, channel, task_path, blob)`` rows) as one call of ``plait_put_writes``.

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
