"""plait's server-side functions on PostgreSQL, and how a set-up keeps them current.

Each makes a step of a run one statement, whose own statements plpgsql plans once per
connection: ``plait_put`` (a checkpoint), ``plait_put_many`` (a batch's checkpoints of one thread),
``plait_begin`` (a run's lease and the head it starts from), ``plait_release`` (the lease given
back, durably) and ``plait_put_writes`` (a task's writes).
"""

from __future__ import annotations

__all__ = [
    "BEGIN_FUNCTION",
    "FUNCTIONS",
    "FUNCTION_BODIES",
    "HEAD_COLUMNS",
    "PUT_FUNCTION",
    "PUT_MANY_FUNCTION",
    "RELEASE_FUNCTION",
    "WRITES_FUNCTION",
    "function_body",
]

HEAD_COLUMNS = (
    "c.checkpoint_id, c.parent_checkpoint_id, c.step, c.source, c.created_at, c.checkpoint, c.metadata"
)
"""The columns of a head checkpoint row, as ``c`` (``SELECT_HEAD`` and ``plait_begin``)."""

_VALUE_ROWS = """    INSERT INTO plait_checkpoint_blobs AS b (thread_id, checkpoint_ns, channel, version, prev_id, type, blob)
        SELECT t, ns, r.c, r.v, r.p, r.k, r.d FROM unnest(channels, versions, prevs, kinds, datas) AS r(c, v, p, k, d)
        ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO UPDATE SET
          prev_id = excluded.prev_id, type = excluded.type, blob = excluded.blob;
    FOR i IN 1 .. COALESCE(array_length(rw_channels, 1), 0) LOOP
        UPDATE plait_checkpoint_blobs SET prev_id = rw_prevs[i], type = rw_kinds[i], blob = rw_datas[i]
            WHERE thread_id = t AND checkpoint_ns = ns AND channel = rw_channels[i] AND version = rw_versions[i];
    END LOOP;
"""
"""The value rows of a put (or of several): inserted, then the keyframe rows they consolidate rewritten."""

PUT_FUNCTION = f"""CREATE OR REPLACE FUNCTION plait_put(
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
{_VALUE_ROWS}    INSERT INTO plait_checkpoints AS x (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, step,
          source, created_at, checkpoint, metadata)
        VALUES (t, ns, cid, parent, step, source, created, record, meta)
        ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
          parent_checkpoint_id = excluded.parent_checkpoint_id, step = excluded.step, source = excluded.source,
          checkpoint = excluded.checkpoint, metadata = excluded.metadata;
END $$"""
"""One put in one statement and one round trip: the thread's advisory lock, the head check, every row."""

PUT_MANY_FUNCTION = f"""CREATE OR REPLACE FUNCTION plait_put_many(t text, ns text, lock_key text, durable boolean,
    cids text[], parents text[], need_parents boolean[], do_checks boolean[], expecteds text[], steps integer[],
    sources text[], createds text[], records bytea[], metas bytea[],
    b_puts integer[], channels text[], versions text[], prevs text[], kinds text[], datas bytea[],
    rw_channels text[], rw_versions text[], rw_prevs text[], rw_kinds text[], rw_datas bytea[])
    RETURNS SETOF text LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    head text;
    ok boolean := true;
BEGIN
    IF NOT durable THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext(lock_key));
    SELECT c.checkpoint_id INTO head FROM plait_checkpoints c
        WHERE c.thread_id = t AND c.checkpoint_ns = ns ORDER BY c.checkpoint_id DESC LIMIT 1;
    -- each put's rule as if the puts before it were stored (the caller sends increasing ids)
    FOR i IN 1 .. COALESCE(array_length(cids, 1), 0) LOOP
        RETURN NEXT head;
        IF need_parents[i] AND NOT COALESCE(parents[i] = head OR parents[i] = ANY(cids[1:i - 1])
                OR EXISTS(SELECT 1 FROM plait_checkpoints c
                  WHERE c.thread_id = t AND c.checkpoint_ns = ns AND c.checkpoint_id = parents[i]), false)
            OR do_checks[i] AND (head IS DISTINCT FROM expecteds[i] OR (head IS NOT NULL AND cids[i] <= head)) THEN
            ok := false;
        END IF;
        IF head IS NULL OR cids[i] > head THEN
            head := cids[i];
        END IF;
    END LOOP;
    -- every row a delta builds on: stored by an earlier put of these, or already there
    ok := ok AND NOT EXISTS(SELECT 1 FROM unnest(b_puts, channels, prevs) AS r(i, c, p)
        LEFT JOIN LATERAL (SELECT true AS hit FROM plait_checkpoint_blobs b
          WHERE b.thread_id = t AND b.checkpoint_ns = ns AND b.channel = r.c AND b.version = r.p LIMIT 1) x
        ON true
        WHERE r.p IS NOT NULL AND need_parents[r.i] AND x.hit IS NULL
          AND NOT EXISTS(SELECT 1 FROM unnest(b_puts, channels, versions) AS e(i, c, v)
            WHERE e.i < r.i AND e.c = r.c AND e.v = r.p));
    IF NOT ok THEN
        RAISE EXCEPTION 'plait_put refused: the thread moved or a base row was pruned';
    END IF;
{_VALUE_ROWS}    INSERT INTO plait_checkpoints AS x (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, step,
          source, created_at, checkpoint, metadata)
        SELECT t, ns, r.i, r.p, r.s, r.o, r.c, r.r, r.m
          FROM unnest(cids, parents, steps, sources, createds, records, metas) AS r(i, p, s, o, c, r, m)
        ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
          parent_checkpoint_id = excluded.parent_checkpoint_id, step = excluded.step, source = excluded.source,
          checkpoint = excluded.checkpoint, metadata = excluded.metadata;
END $$"""
"""Several puts of one thread in one call (a batch's, see :mod:`plait.checkpoint.postgres._merge`):
each put's rule checked as :data:`PUT_FUNCTION` checks it, given the puts before it; any put refused
fails the call, storing none of them; answers the head each put found."""

BEGIN_FUNCTION = f"""CREATE OR REPLACE FUNCTION plait_begin(t text, ns text, me text, ttl float8, stale float8,
    queue boolean) RETURNS TABLE(owner text, checkpoint_id text, parent_checkpoint_id text, step integer,
    source text, created_at text, checkpoint bytea, metadata bytea, task_id text, channel text, blob bytea)
    LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    got text;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);  -- a lease taken need not reach the disk
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
    RETURN QUERY SELECT me, {HEAD_COLUMNS}, w.task_id, w.channel, w.blob
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
when taken, read its head (the rows of :data:`SELECT_HEAD`, each after the owner). Its commit never
waits for the disk (it turns ``synchronous_commit`` off itself)."""

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

FUNCTIONS = {
    "plait_put": PUT_FUNCTION,
    "plait_put_many": PUT_MANY_FUNCTION,
    "plait_begin": BEGIN_FUNCTION,
    "plait_release": RELEASE_FUNCTION,
    "plait_put_writes": WRITES_FUNCTION,
}
"""Every set-up creates those missing and replaces those whose body differs (:func:`function_body`).

They are not a schema version: no table changes with them, so a plait that does not call one
still runs on a database that has it.
"""

FUNCTION_BODIES = """SELECT p.proname, p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = current_schema() AND p.proname = ANY(%s)"""
"""The bodies of plait's functions in the current schema (``pg_proc.prosrc``); the schema is
compared by its stored name (``::regnamespace`` would parse it again, folding its case)."""


def function_body(create: str) -> str:
    """The body a ``CREATE FUNCTION`` statement of :data:`FUNCTIONS` stores (between its ``$$``)."""
    return create.split("$$")[1]
