"""Runs in ``plait_server_runs``: the queue's claims, leases and ends (see :mod:`plait.server._worker`)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from plait.server._auth_filter import Filter
from plait.server._data.events import insert_events
from plait.server._data.filters import thread_filter_sql
from plait.server._db import Database, Row, Tx
from plait.server._records import AssistantDoc, RunDoc
from plait.server._wire import dumps, loads, now_iso

__all__ = [
    "ThreadEnd",
    "claim",
    "delete",
    "fail",
    "finish",
    "get_on_thread",
    "ids_on_thread",
    "ids_on_visible_threads",
    "ids_with_status",
    "inflight",
    "inflight_counts",
    "insert",
    "interrupt_pending",
    "list_on_thread",
    "mark_interrupted",
    "read_for_run",
    "renew_leases",
    "requeue",
    "requeue_all_running",
    "since_on_thread",
    "status",
    "take_over_expired",
]

# a pending run's lease_until is when it may start (after_seconds), or NULL; runs of a thread go in order
_CLAIMABLE = """r.status = 'pending' AND (r.lease_until IS NULL OR r.lease_until <= ?) AND NOT EXISTS (
  SELECT 1 FROM plait_server_runs o WHERE o.thread_id = r.thread_id
  AND (o.status = 'running' OR (o.status = 'pending' AND o.run_id < r.run_id)))"""

_CLAIM = f"""SELECT r.*, a.doc AS assistant_doc FROM plait_server_runs r
LEFT JOIN plait_server_assistants a ON a.assistant_id = r.assistant_id
WHERE {_CLAIMABLE} ORDER BY r.run_id LIMIT ?"""

# PostgreSQL: pick, mark running, mark the threads busy and read the assistants in one statement. Rows
# are locked threads before runs everywhere else (create, finish, delete): the claim, which takes runs
# first, never waits for a thread (SKIP LOCKED; a run whose thread is busy now is claimed next time)
_PG_CLAIM = f"""WITH c AS (SELECT r.run_id, r.thread_id FROM plait_server_runs r
  WHERE {_CLAIMABLE} ORDER BY r.run_id LIMIT ? FOR UPDATE OF r SKIP LOCKED),
tl AS (SELECT t.thread_id FROM plait_server_threads t WHERE t.thread_id IN (SELECT thread_id FROM c)
  FOR UPDATE OF t SKIP LOCKED),
ok AS (SELECT c.run_id, c.thread_id FROM c WHERE c.thread_id IN (SELECT thread_id FROM tl)
  OR NOT EXISTS (SELECT 1 FROM plait_server_threads x WHERE x.thread_id = c.thread_id)),
u AS (UPDATE plait_server_runs r SET status = 'running', worker = ?, lease_until = ?, attempt = r.attempt + 1,
  updated_at = ? FROM ok WHERE r.run_id = ok.run_id RETURNING r.*),
t AS (UPDATE plait_server_threads t SET status = 'busy', updated_at = ? FROM ok WHERE t.thread_id = ok.thread_id)
SELECT u.*, a.doc AS assistant_doc FROM u LEFT JOIN plait_server_assistants a ON a.assistant_id = u.assistant_id
ORDER BY u.run_id"""


async def status(db: Database | Tx, run_id: str) -> str | None:
    """The run's status (``None``: no such run)."""
    rows = await db.fetch("SELECT status FROM plait_server_runs WHERE run_id = ?", (run_id,))
    return str(rows[0]["status"]) if rows else None


async def get_on_thread(db: Database, run_id: str, thread_id: str) -> Row | None:
    """The run's row, if it is ``thread_id``'s."""
    rows = await db.fetch(
        "SELECT * FROM plait_server_runs WHERE run_id = ? AND thread_id = ?", (run_id, thread_id)
    )
    return rows[0] if rows else None


async def list_on_thread(
    db: Database, thread_id: str, status: str | None, limit: int, offset: int
) -> list[Row]:
    """A page of the thread's runs (with ``status`` only, when given), the newest first."""
    sql, params = "SELECT * FROM plait_server_runs WHERE thread_id = ?", [thread_id]
    if status:
        sql, params = sql + " AND status = ?", [*params, status]
    return await db.fetch(sql + " ORDER BY run_id DESC LIMIT ? OFFSET ?", [*params, limit, offset])


async def delete(db: Database | Tx, run_id: str) -> None:
    """Delete the run's row."""
    await db.run("DELETE FROM plait_server_runs WHERE run_id = ?", (run_id,))


async def interrupt_pending(db: Database, run_id: str) -> bool:
    """Mark the run ``interrupted`` if it is still pending; False: it was not (any more)."""
    return bool(
        await db.run(
            "UPDATE plait_server_runs SET status = 'interrupted', updated_at = ? WHERE run_id = ? AND status = 'pending'",
            (now_iso(), run_id),
        )
    )


async def ids_with_status(db: Database, statuses: tuple[str, ...]) -> list[str]:
    """The ids of every run in one of ``statuses``."""
    rows = await db.fetch(
        f"SELECT run_id FROM plait_server_runs WHERE status IN ({', '.join('?' for _ in statuses)})", statuses
    )
    return [r["run_id"] for r in rows]


async def ids_on_thread(db: Database, run_ids: list[str], thread_id: str) -> list[str]:
    """Those of ``run_ids`` (not empty) that are runs of ``thread_id``."""
    marks = ", ".join("?" for _ in run_ids)
    rows = await db.fetch(
        f"SELECT run_id FROM plait_server_runs WHERE run_id IN ({marks}) AND thread_id = ?",
        [*run_ids, thread_id],
    )
    return [r["run_id"] for r in rows]


async def ids_on_visible_threads(db: Database, run_ids: list[str], threads: Filter) -> list[str]:
    """Those of ``run_ids`` (not empty) whose thread passes the auth's filter ``threads``."""
    sql, params = thread_filter_sql(db.dialect, threads)
    marks = ", ".join("?" for _ in run_ids)
    rows = await db.fetch(
        f"SELECT run_id FROM plait_server_runs WHERE run_id IN ({marks}) AND thread_id IN "
        f"(SELECT thread_id FROM plait_server_threads WHERE {sql})",
        [*run_ids, *params],
    )
    return [r["run_id"] for r in rows]


async def inflight(db: Database | Tx, thread_id: str) -> list[Row]:
    """The thread's pending and running runs: ``run_id`` and ``status`` of each."""
    return await db.fetch(
        "SELECT run_id, status FROM plait_server_runs WHERE thread_id = ? AND status IN ('pending', 'running')",
        (thread_id,),
    )


async def since_on_thread(db: Database, thread_id: str, since: str) -> list[Row]:
    """The thread's runs in flight or created from ``since`` on, the oldest first: ``run_id`` and
    ``status`` of each."""
    return await db.fetch(
        "SELECT run_id, status FROM plait_server_runs WHERE thread_id = ? "
        "AND (status IN ('pending', 'running') OR created_at >= ?) ORDER BY created_at, run_id",
        (thread_id, since),
    )


_COUNTS = "SELECT status, COUNT(*) AS n FROM plait_server_runs WHERE status IN ('pending', 'running') GROUP BY status"


async def inflight_counts(db: Database) -> dict[str, int]:
    """How many runs are ``pending`` and ``running``, by status (a status no run has: absent)."""
    return {row["status"]: int(row["n"]) for row in await db.fetch(_COUNTS, ())}


async def mark_interrupted(db: Database | Tx, run_id: str) -> None:
    """Mark the run ``interrupted`` (a pending run a new run's multitask strategy removes)."""
    await db.run(
        "UPDATE plait_server_runs SET status = 'interrupted', updated_at = ? WHERE run_id = ?",
        (now_iso(), run_id),
    )


async def read_for_run(tx: Tx, dialect: str, assistant_id: str, thread_id: str | None) -> Row:
    """What a new run on a thread reads first, in one statement: its ``assistant``'s document, its
    ``thread``'s document (the thread's row locked on PostgreSQL) and the thread's ``status``
    (each ``None`` when missing)."""
    lock = " FOR UPDATE" if dialect == "postgres" else ""
    return (
        await tx.fetch(
            "SELECT (SELECT doc FROM plait_server_assistants WHERE assistant_id = ?) AS assistant, "
            f"(SELECT doc FROM plait_server_threads WHERE thread_id = ?{lock}) AS thread, "
            "(SELECT status FROM plait_server_threads WHERE thread_id = ?) AS status",
            (assistant_id, thread_id, thread_id),
        )
    )[0]


_INSERT = (
    "INSERT INTO plait_server_runs (run_id, thread_id, assistant_id, status, created_at, updated_at, "
    "worker, lease_until, attempt, doc)"
)

# PostgreSQL: the run (running here unless it has to wait), its thread, a durable commit (what
# a client is told is stored waits for the disk; the server's other bookkeeping does not, see
# Database.tx) and, for a run left in the queue that could start, the wake-up of the workers (a
# run queued behind others of its thread is woken by their end), in one statement.
_PG_STORE = """WITH b AS (SELECT ?::boolean{inflight} AS behind),
q AS (SELECT b.behind, b.behind OR NOT ?::boolean AS queued FROM b),
r AS ({insert} SELECT ?, ?, ?, CASE WHEN q.queued THEN 'pending' ELSE 'running' END, ?, ?,
  CASE WHEN q.queued THEN NULL ELSE ? END,
  CASE WHEN q.queued THEN ?::double precision ELSE ?::double precision END,
  CASE WHEN q.queued THEN 0 ELSE 1 END, ? FROM q){thread}
SELECT q.queued, q.behind, set_config('synchronous_commit', 'on', true) AS durable,
  CASE WHEN q.queued AND NOT q.behind THEN pg_notify('plait_server_wake', ?) END AS wake FROM q"""
_PG_INFLIGHT = (
    " OR EXISTS (SELECT 1 FROM plait_server_runs WHERE thread_id = ? AND status IN ('pending', 'running'))"
)
_PG_THREAD = """,
t AS (UPDATE plait_server_threads SET status = CASE WHEN (SELECT queued FROM q) THEN status ELSE 'busy' END,
  doc = ?, updated_at = ? WHERE thread_id = ?)"""


@dataclass(frozen=True)
class NewRun:
    """A run to insert: its document and stored JSON, its thread's new document, who would run it."""

    doc: RunDoc
    """The run's document (``run_id``, ``thread_id``, ``assistant_id``, ``created_at`` are read)."""
    text: str
    """``doc`` as stored (JSON)."""
    thread_doc: str | None
    """The thread's new document (JSON), or ``None``: the thread's row is not written."""
    worker: str
    """This worker's id: the run's worker when it starts here, the wake-up's payload otherwise."""
    lease: float
    """Until when (``time.time()`` seconds) a run starting here is leased to ``worker``."""
    not_before: float | None
    """A run kept pending until then (``time.time()`` seconds) holds it in ``lease_until``."""


async def insert(  # noqa: PLR0913 - what decides a new run's start
    db: Database | Tx, dialect: str, run: NewRun, reserved: bool, behind: bool, check: bool
) -> tuple[bool, bool]:
    """Insert the run and write its thread's document (see :class:`NewRun`).

    The run is stored as running by ``run.worker`` when it ``reserved`` a slot and the run is not
    ``behind`` others of its thread (with ``check``, that is checked here too: on PostgreSQL in
    the same statement), else as pending. Whether it starts here, and whether it waits in the
    queue for a slot only (a worker may claim it now).
    """
    doc = run.doc
    run_id, thread_id, now = doc["run_id"], doc["thread_id"], doc["created_at"]
    if dialect == "postgres":
        sql = _PG_STORE.format(
            inflight=_PG_INFLIGHT if check else "",
            insert=_INSERT,
            thread=_PG_THREAD if run.thread_doc else "",
        )
        params: list[object] = [behind, *([thread_id] if check else []), reserved]
        params += [run_id, thread_id, doc["assistant_id"], now, now, run.worker, run.not_before, run.lease]
        params += [run.text, *([run.thread_doc, now, thread_id] if run.thread_doc else [])]
        row = (await db.fetch(sql, [*params, run.worker]))[0]
        return not row["queued"], bool(row["queued"] and not row["behind"])
    if check and not behind:
        behind = bool(await inflight(db, thread_id))
    start = reserved and not behind
    owner = (run.worker, run.lease, 1) if start else (None, run.not_before, 0)
    status = "running" if start else "pending"
    await db.run(
        _INSERT + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (run_id, thread_id, doc["assistant_id"], status, now, now, *owner, run.text),
    )
    if run.thread_doc is not None:
        busy = "status = 'busy', " if start else ""
        await db.run(
            f"UPDATE plait_server_threads SET {busy}doc = ?, updated_at = ? WHERE thread_id = ?",
            (run.thread_doc, now, thread_id),
        )
    return start, not start and not behind


async def requeue_all_running(db: Database) -> None:
    """Every run marked running goes back to pending (a SQLite server starting: no other process runs them)."""
    await db.run(
        "UPDATE plait_server_runs SET status = 'pending', worker = NULL, lease_until = NULL WHERE status = 'running'"
    )


async def claim(
    db: Database, worker: str, lease_seconds: float, limit: int
) -> list[tuple[Row, AssistantDoc]]:
    """Up to ``limit`` runs marked running by ``worker`` (their threads busy), each with its assistant's
    document (``{"assistant_id", "graph_id": ""}`` when the assistant is gone)."""
    now, clock = now_iso(), time.time()
    lease = clock + lease_seconds
    if db.dialect == "postgres":
        rows = await db.fetch(_PG_CLAIM, (clock, limit, worker, lease, now, now))
    else:
        async with db.tx() as tx:
            rows = await tx.fetch(_CLAIM, (clock, limit))
            for row in rows:
                row["attempt"] = int(row["attempt"]) + 1
                await tx.run(
                    "UPDATE plait_server_runs SET status = 'running', worker = ?, lease_until = ?, "
                    "attempt = ?, updated_at = ? WHERE run_id = ?",
                    (worker, lease, row["attempt"], now, row["run_id"]),
                )
                await tx.run(
                    "UPDATE plait_server_threads SET status = 'busy', updated_at = ? WHERE thread_id = ?",
                    (now, row["thread_id"]),
                )
    claimed: list[tuple[Row, AssistantDoc]] = []
    for row in rows:
        found = row.pop("assistant_doc")
        assistant: AssistantDoc = loads(found) if found else _gone(row["assistant_id"])
        claimed.append((row, assistant))
    return claimed


def _gone(assistant_id: str) -> AssistantDoc:
    """A deleted assistant's stand-in: its run fails, on the graph's name ``""``."""
    return {
        "assistant_id": assistant_id,
        "graph_id": "",
        "config": {},
        "context": {},
        "metadata": {},
        "name": "",
        "created_at": "",
        "updated_at": "",
        "version": 0,
        "description": None,
    }


async def fail(db: Database, run_id: str, thread_id: str | None) -> None:
    """A run that could not be executed: it and its thread (if still busy) are marked ``error``."""
    now = now_iso()
    await db.run(
        "UPDATE plait_server_runs SET status = 'error', worker = NULL, updated_at = ? WHERE run_id = ?",
        (now, run_id),
    )
    await db.run(
        "UPDATE plait_server_threads SET status = 'error', updated_at = ? WHERE thread_id = ? AND status = 'busy'",
        (now, thread_id),
    )


async def requeue(db: Database, run_id: str, worker: str) -> None:
    """``worker``'s run goes back to pending (its execution was cut short)."""
    await db.run(
        "UPDATE plait_server_runs SET status = 'pending', worker = NULL, lease_until = NULL "
        "WHERE run_id = ? AND worker = ?",
        (run_id, worker),
    )


async def renew_leases(db: Database, worker: str, until: float) -> None:
    """The leases of ``worker``'s running runs last until ``until`` (epoch seconds)."""
    await db.run(
        "UPDATE plait_server_runs SET lease_until = ? WHERE worker = ? AND status = 'running'",
        (until, worker),
    )


async def take_over_expired(db: Database, now: float) -> int:
    """Runs whose lease ran out before ``now`` (their worker vanished) go back to pending: how many."""
    return await db.run(
        "UPDATE plait_server_runs SET status = 'pending', worker = NULL, lease_until = NULL "
        "WHERE status = 'running' AND lease_until < ?",
        (now,),
    )


@dataclass(frozen=True)
class ThreadEnd:
    """What a run's end leaves on its thread."""

    status: str
    interrupts: Any
    error: Any
    values: str | None
    """The thread's values as JSON text (``None``: none)."""


_WAITING = "SELECT 1 FROM plait_server_runs WHERE thread_id = ? AND status = 'pending' LIMIT 1"


async def finish(  # noqa: PLR0913 - the parts of a run's end
    db: Database,
    run_id: str,
    thread_id: str | None,
    status: str,
    *,
    delete: bool,
    thread: ThreadEnd | None,
    events: list[tuple[int, str, bytes]],
    worker: str,
) -> tuple[bool, bool]:
    """Store a run's end at once: its status (or, with ``delete``, no row), its last ``events``
    (PostgreSQL; SQLite's broker wrote them) and its thread's status, values, interrupts and error.

    Returns ``(waiting, gone)``: whether a pending run waits on the thread (on PostgreSQL the other
    workers are then woken by ``NOTIFY plait_server_wake``, in the same commit; ``worker`` is the
    payload), and whether the thread was deleted while the run ran. The thread's row is locked first,
    so a run queued on it meanwhile is either seen here or sees this run ended (no lost wake-up).
    """
    now = now_iso()
    writes: list[tuple[str, list[object]]] = [
        ("DELETE FROM plait_server_runs WHERE run_id = ?", [run_id])
        if delete
        else (
            "UPDATE plait_server_runs SET status = ?, updated_at = ?, worker = NULL WHERE run_id = ?",
            [status, now, run_id],
        )
    ]
    if thread is None and db.dialect == "postgres":  # a stateless run: one statement
        return await _pg_finish(db, run_id, thread_id, events, writes, worker), False
    gone = False
    async with db.tx() as tx:
        if thread is not None:
            lock = " FOR UPDATE" if db.dialect == "postgres" else ""
            rows = await tx.fetch(
                "SELECT doc FROM plait_server_threads WHERE thread_id = ?" + lock, (thread_id,)
            )
            gone = not rows
            if rows:
                tdoc = loads(rows[0]["doc"])
                tdoc.update(interrupts=thread.interrupts, error=thread.error)
                tdoc["state_updated_at"] = now
                writes.append(
                    (
                        "UPDATE plait_server_threads SET status = ?, updated_at = ?, doc = ?, vals = ? WHERE thread_id = ?",
                        [thread.status, now, dumps(tdoc).decode(), thread.values, thread_id],
                    )
                )
        if db.dialect == "postgres":
            waiting = await _pg_finish(tx, run_id, thread_id, events, writes, worker)
        else:
            for sql, params in writes:
                await tx.run(sql, params)
            waiting = bool(await tx.fetch(_WAITING, (thread_id,)))
    return waiting, gone


async def _pg_finish(  # noqa: PLR0913
    db: Database | Tx,
    run_id: str,
    thread_id: str | None,
    events: list[tuple[int, str, bytes]],
    writes: list[tuple[str, list[object]]],
    worker: str,
) -> bool:
    """A run's end on PostgreSQL: its events, its writes and the notifications in one statement."""
    parts: list[str] = []
    params: list[object] = []
    for n, (sql, args) in enumerate([insert_events(run_id, events), *writes]):
        parts.append(f"w{n} AS ({sql})")
        params += args
    found = await db.fetch(
        f"WITH {', '.join(parts)}, p AS (SELECT EXISTS ({_WAITING}) AS waiting) "
        "SELECT p.waiting, pg_notify('plait_server_event', ?) AS e, "
        "CASE WHEN p.waiting THEN pg_notify('plait_server_wake', ?) END AS w FROM p",
        [*params, thread_id, run_id, worker],
    )
    return bool(found[0]["waiting"])
