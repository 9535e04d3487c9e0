"""Cross-process per-thread leases for the SQL savers (SQLite and PostgreSQL).

A run holds its thread for its whole duration (see ``BaseCheckpointSaver.lease``).
Within one process a ``threading.Lock`` per thread decides first, so threads
of one process never poll the database. Across processes a row in
``checkpoint_leases`` decides:

* **acquire** is one statement: an insert-or-take-over that only succeeds if
  the row is free (released, or its ``expires_at`` has passed) and no *other*
  process is queued in ``waiter``; a loser that waits records itself as the
  waiter, so two processes alternate instead of one starving the other;
* a **heartbeat** thread renews ``expires_at`` every ``ttl / 3`` seconds while
  leases are held, so a live run never loses its thread;
* **release** deletes the row (or only clears the owner when someone waits);
* a holder killed with SIGKILL stops renewing: its lease expires after ``ttl``
  seconds and the next run takes it over.

The database connection is borrowed only for each short statement, so a pool
of N connections serves N threads holding N leases without deadlock.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import re
import socket
import threading
import time
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, NamedTuple

from plait.checkpoint._engine_ops import Batch, Ops, Step
from plait.checkpoint._lease_wait import MAX_POLL, Key, apoll, atake_local, poll, take_local
from plait.checkpoint._locks import local_lock

__all__ = ["DEFAULT_TTL", "LeaseSql", "ThreadLeases", "lease_sql"]

DEFAULT_TTL = 30.0
"""Seconds after which the lease of a vanished (killed) holder can be taken over."""

_log = logging.getLogger("plait.checkpoint.lease")
_Key = Key


class _Tokens:
    """Lease owner tokens: ``host:pid:random``, made once per process, then a run's number.

    Unique across processes (a child, however it was forked, sees another pid and starts anew)
    and within one, with one cheap system call per run (``getpid``) instead of three.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = -1
        self._prefix = ""
        self._numbers = itertools.count()

    def forked(self) -> None:
        """In a forked child: a parent's thread may have held the lock as it forked."""
        self._lock = threading.Lock()

    def next(self) -> str:
        pid = os.getpid()
        with self._lock:
            if pid != self._pid:
                self._prefix = f"{socket.gethostname()}:{pid}:{uuid.uuid4().hex[:12]}"
                self._numbers = itertools.count()
                self._pid = pid
            return f"{self._prefix}:{next(self._numbers)}"


_tokens = _Tokens()
os.register_at_fork(after_in_child=_tokens.forked)


class LeaseSql(NamedTuple):
    """The lease statements of one SQL dialect (named parameters)."""

    acquire: str
    wait: str
    renew: str
    drop: str
    free: str
    mark: str
    """Writes a marker row: a transaction that writes, so its durable commit flushes every earlier one."""
    unmark: str
    begin: str | None = None
    """One statement doing ``acquire``, ``wait`` (with ``queue``) and the head read where a dialect has
    it (PostgreSQL): rows of the owner followed by the head's columns, one row per pending write."""
    release: str | None = None
    """One statement doing ``drop``, else ``free``, whose commit waits for the disk, where a dialect
    has it (PostgreSQL); it answers one row: how many lease rows it changed."""


def lease_sql(dialect: str, table: str = "plait_checkpoint_leases") -> LeaseSql:
    """The lease statements for ``"sqlite"`` (client clock, epoch seconds) or ``"postgres"`` (server clock)."""
    if dialect == "sqlite":
        now, later, stale = ":now", ":now + :ttl", ":now - :stale"
    else:
        now = "clock_timestamp()"
        later, stale = f"{now} + %(ttl)s * interval '1 second'", f"{now} - %(stale)s * interval '1 second'"
    where = "thread_id = :t AND checkpoint_ns = :ns"
    statements = LeaseSql(
        acquire=f"""INSERT INTO {table} AS l (thread_id, checkpoint_ns, owner, expires_at)
            VALUES (:t, :ns, :me, {later})
            ON CONFLICT (thread_id, checkpoint_ns) DO UPDATE SET owner = excluded.owner,
              expires_at = excluded.expires_at,
              waiter = CASE WHEN l.waiter = excluded.owner THEN NULL ELSE l.waiter END
            WHERE (l.owner IS NULL OR l.expires_at < {now})
              AND (l.waiter IS NULL OR l.waiter = excluded.owner OR l.waiter_seen < {stale})
            RETURNING owner""",
        wait=f"""UPDATE {table} SET waiter = :me, waiter_seen = {now}
            WHERE {where} AND (owner IS NULL OR owner <> :me)
              AND (waiter IS NULL OR waiter = :me OR waiter_seen < {stale})""",
        renew=f"UPDATE {table} SET expires_at = {later} WHERE {where} AND owner = :me",
        drop=f"DELETE FROM {table} WHERE {where} AND owner = :me AND waiter IS NULL",
        free=f"UPDATE {table} SET owner = NULL, expires_at = {now} WHERE {where} AND owner = :me",
        mark=f"""INSERT INTO {table} (thread_id, checkpoint_ns, owner, expires_at) VALUES (:t, :me, :me, {now})
            ON CONFLICT (thread_id, checkpoint_ns) DO NOTHING""",
        unmark=f"DELETE FROM {table} WHERE thread_id = :t AND checkpoint_ns = :me AND owner = :me",
    )
    if dialect == "sqlite":
        return statements
    return statements._replace(
        **{name: re.sub(r":(\w+)", r"%(\1)s", s) for name, s in statements._asdict().items() if s is not None}
    )


class ThreadLeases:
    """Process-local locks plus database lease rows, with a heartbeat; one per saver.

    Args:
        run: Performs an engine operation synchronously (:mod:`plait.checkpoint._engine_ops`).
        arun: Performs one without blocking the event loop.
        sql: The dialect's statements (:func:`lease_sql`).
        ttl: Seconds a lease lives without renewal.
        scope: The operation that answers ``(name of the database, shared across processes?)``.
        ready: The operation that sets the tables up (before the first lease row is written).
        read: The statement reading a thread's head, sent with the acquiring statement: the run's
            first read of the head (:meth:`read_ahead`) then costs no round trip.
    """

    def __init__(  # noqa: PLR0913 - the parts of a lease table
        self,
        run: Callable[[Ops[Any]], Any],
        arun: Callable[[Ops[Any]], Awaitable[Any]],
        sql: LeaseSql,
        ttl: float,
        scope: Callable[[], Ops[tuple[str, bool]]],
        *,
        ready: Callable[[], Ops[Any]],
        read: Callable[[_Key], Step] | None = None,
    ) -> None:
        if not ttl > 0:
            raise ValueError(f"lease_ttl must be a positive number of seconds, got {ttl!r}")
        self.run, self.arun, self.sql, self.ttl = run, arun, sql, float(ttl)
        self._scope_ops = scope
        self._ready = ready
        self._read = read
        self._ahead: dict[_Key, Any] = {}  # thread -> its head rows, read when this process acquired it
        self._scope: tuple[str, bool] | None = None
        self._held: dict[str, _Key] = {}
        self._unflushed: set[str] = set()  # holders whose run committed writes without waiting for the disk
        self._given_back: set[str] = set()  # holders whose lease a run's last save released (_save_many)
        self._held_lock = threading.Lock()
        self._beater: threading.Thread | None = None

    def holds(self, thread_id: str) -> bool:
        """Whether a run of this process holds ``thread_id`` (any namespace) through this saver."""
        return any(key[0] == thread_id for key in list(self._held.values()))

    def defer_flush(self, thread_id: str) -> bool:
        """Whether a write to ``thread_id`` may commit without waiting for the disk.

        Only inside a run holding the thread: its release is a durable commit that
        flushes every earlier one, and the run does not return before that succeeds.
        """
        with self._held_lock:
            holders = [me for me, key in self._held.items() if key[0] == thread_id]
            self._unflushed.update(holders)
        return bool(holders)

    # -- one database round trip each ---------------------------------------------------

    def _params(self, key: _Key, me: str) -> dict[str, Any]:
        return {
            "t": key[0],
            "ns": key[1],
            "me": me,
            "ttl": self.ttl,
            "now": time.time(),
            "stale": max(1.0, 20 * MAX_POLL),
        }

    def _try_ops(self, key: _Key, me: str, queue: bool) -> Ops[bool]:
        """One attempt; on failure with ``queue``, ``me`` is recorded as the next in line (same transaction)."""
        yield from self._ready()
        params = self._params(key, me)
        if self.sql.begin is not None and self._read is not None:
            rows = (yield Batch((Step(self.sql.begin, {**params, "queue": queue}),), durable=False))[0]
            won = bool(rows) and rows[0][0] == me
            if won:
                self._ahead[key] = [row[1:] for row in rows if row[1] is not None]
                self._hold(key, me)
            return won
        steps = (Step(self.sql.acquire, params),) + ((Step(self.sql.wait, params),) if queue else ())
        if self._read is not None:
            steps += (self._read(key),)
        answers = yield Batch(steps, durable=False)
        won = bool(answers[0]) and answers[0][0][0] == me
        if won:
            if self._read is not None:
                self._ahead[key] = answers[-1]
            self._hold(key, me)
        return won

    def read_ahead(self, key: _Key) -> Any:
        """The head rows of ``key`` read when this process acquired it, once; ``None``: read them now.

        Dropped when this process writes to the thread (:meth:`drop_ahead`) or gives it back, so
        they are never older than the thread: no other process writes while the lease is held.
        """
        return self._ahead.pop(key, None)

    def drop_ahead(self, thread_id: str) -> None:
        """This process writes to ``thread_id``: head rows read before are stale."""
        if self._ahead:
            for key in [k for k in self._ahead if k[0] == thread_id]:
                self._ahead.pop(key, None)

    def _release_ops(self, key: _Key, me: str) -> Ops[None]:
        """Give the thread back; a durable commit, which also makes the run's checkpoints durable.

        A commit that wrote nothing does not wait for the disk, so when the lease row
        was taken over meanwhile (nothing to delete), a marker row is written and removed.
        """
        with self._held_lock:
            self._held.pop(me, None)
        self._ahead.pop(key, None)
        params = self._params(key, me)
        answers: list[int | list[tuple[int]]] = yield Batch(self._give_back(params))
        if me in self._unflushed and not any(_changed(answer) for answer in answers):
            yield Batch((Step(self.sql.mark, params), Step(self.sql.unmark, params)))
        self._unflushed.discard(me)

    def release_steps(self, key: _Key) -> tuple[tuple[Step, ...], str | None]:
        """The statements that give ``key`` back, for a transaction of the holder's own, and the holder."""
        with self._held_lock:
            me = next((m for m, k in self._held.items() if k == key), None)
        if me is None:
            return (), None
        return self._give_back(self._params(key, me)), me

    def _give_back(self, params: dict[str, Any]) -> tuple[Step, ...]:
        """Delete the lease row, or only clear its owner when another process waits for it."""
        if self.sql.release is not None:
            return (Step(self.sql.release, params),)
        return Step(self.sql.drop, params), Step(self.sql.free, params)

    def released(self, me: str) -> None:
        """The statements of :meth:`release_steps` were committed (durably): the lease block has nothing left to do."""
        with self._held_lock:
            key = self._held.pop(me, None)
            self._given_back.add(me)
        if key is not None:
            self._ahead.pop(key, None)
        self._unflushed.discard(me)

    def _still_held(self, me: str) -> bool:
        with self._held_lock:
            if me in self._given_back:
                self._given_back.discard(me)
                return False
        return True

    def _release_failed(self, key: _Key, me: str, exc: Exception, confirm: bool) -> None:
        if confirm and me in self._unflushed:
            self._unflushed.discard(me)
            raise ConnectionError(
                f"The run on thread {key[0]!r} finished, but the durable commit that releases the thread failed "
                f"({exc}): its checkpoints were committed without waiting for the disk, so a database crash may "
                "have lost them. Re-read the thread (get_state) before relying on this run."
            ) from exc
        self._unflushed.discard(me)
        _log.warning(
            "Could not release the lease of thread %r (%s); it expires in %.0f s", key[0], exc, self.ttl
        )

    def _renew_all(self) -> None:
        with self._held_lock:
            items = list(self._held.items())
        for me, key in items:
            try:
                answers = self.run(_batch(Step(self.sql.renew, self._params(key, me)), durable=False))
            except Exception as exc:  # noqa: BLE001 - retried on the next beat
                _log.warning("Could not renew the lease of thread %r: %s", key[0], exc)
                continue
            if answers[0] == 0 and me in self._held:
                _log.warning(
                    "Lease of thread %r was lost (it expired and another process took it); "
                    "the run's next checkpoint write will be refused if the thread moved on",
                    key[0],
                )

    # -- heartbeat -----------------------------------------------------------------------

    def _hold(self, key: _Key, me: str) -> None:
        with self._held_lock:
            self._held[me] = key
            if self._beater is None:
                self._beater = threading.Thread(target=self._beat, name="plait-lease-heartbeat", daemon=True)
                self._beater.start()

    def _beat(self) -> None:
        while True:
            time.sleep(self.ttl / 3)
            with self._held_lock:
                if not self._held:
                    self._beater = None
                    return
            self._renew_all()

    # -- waiting -------------------------------------------------------------------------

    @staticmethod
    def _owner_token() -> str:
        return _tokens.next()

    # -- the lease (the sync code is generated from the async code) ----------------------------

    # >>> async source
    async def ascope(self) -> tuple[str, bool]:
        """``(database name, shared)``, computed once."""
        found = self._scope
        if found is None:
            found = self._scope = await self.arun(self._scope_ops())
        return found

    async def arelease(self, key: _Key, me: str, *, confirm: bool = False) -> None:
        """Give the thread back; an unreleased lease expires after ``ttl``.

        Raises:
            ConnectionError: only with ``confirm`` (the run succeeded), when the release failed after
                writes that did not wait for the disk: the run's outcome is not known to be durable.
        """
        try:
            await self.arun(self._release_ops(key, me))
        except Exception as exc:  # noqa: BLE001 - see _release_failed
            self._release_failed(key, me, exc, confirm)

    async def _aacquire(self, key: _Key, wait: bool, deadline: float | None) -> str:
        """Take the thread's lease row, polling while another process holds it; returns the owner token."""
        me = self._owner_token()
        await apoll(
            lambda: self.arun(self._try_ops(key, me, queue=wait)),
            key,
            wait,
            deadline,
            orphan=lambda: self.arelease(key, me),
        )
        return me

    @asynccontextmanager
    async def ahold(
        self, thread_id: str, ns: str, wait: bool, timeout: float | None
    ) -> AsyncGenerator[None, None]:
        """The lease: local lock, then (for shared databases) the lease row.

        The async form never blocks the event loop, and never leaks a lease on cancellation.
        """
        key = (str(thread_id), ns or "")
        deadline = None if timeout is None else time.monotonic() + timeout
        name, shared = await self.ascope()
        with local_lock((name, *key)) as local:
            await atake_local(local, key, wait, deadline)
            try:
                me = await self._aacquire(key, wait, deadline) if shared else None
                try:
                    yield
                except BaseException:
                    if me is not None and self._still_held(me):
                        await asyncio.shield(self.arelease(key, me))
                    raise
                if me is not None and self._still_held(me):
                    await asyncio.shield(self.arelease(key, me, confirm=True))
            finally:
                local.release()

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def scope(self) -> tuple[str, bool]:
        """``(database name, shared)``, computed once."""
        found = self._scope
        if found is None:
            found = self._scope = self.run(self._scope_ops())
        return found

    def release(self, key: _Key, me: str, *, confirm: bool = False) -> None:
        """Give the thread back; an unreleased lease expires after ``ttl``.

        Raises:
            ConnectionError: only with ``confirm`` (the run succeeded), when the release failed after
                writes that did not wait for the disk: the run's outcome is not known to be durable.
        """
        try:
            self.run(self._release_ops(key, me))
        except Exception as exc:  # noqa: BLE001 - see _release_failed
            self._release_failed(key, me, exc, confirm)

    def _acquire(self, key: _Key, wait: bool, deadline: float | None) -> str:
        """Take the thread's lease row, polling while another process holds it; returns the owner token."""
        me = self._owner_token()
        poll(
            lambda: self.run(self._try_ops(key, me, queue=wait)),
            key,
            wait,
            deadline,
            orphan=lambda: self.release(key, me),
        )
        return me

    @contextmanager
    def hold(self, thread_id: str, ns: str, wait: bool, timeout: float | None) -> Generator[None, None]:
        """The lease: local lock, then (for shared databases) the lease row.

        The async form never blocks the event loop, and never leaks a lease on cancellation.
        """
        key = (str(thread_id), ns or "")
        deadline = None if timeout is None else time.monotonic() + timeout
        name, shared = self.scope()
        with local_lock((name, *key)) as local:
            take_local(local, key, wait, deadline)
            try:
                me = self._acquire(key, wait, deadline) if shared else None
                try:
                    yield
                except BaseException:
                    if me is not None and self._still_held(me):
                        self.release(key, me)
                    raise
                if me is not None and self._still_held(me):
                    self.release(key, me, confirm=True)
            finally:
                local.release()

    # <<< generated sync


def _changed(answer: int | list[tuple[int]]) -> bool:
    """Whether a statement changed rows: its row count, or the count its one row answers."""
    return bool(answer[0][0] if isinstance(answer, list) else answer)


def _batch(*steps: Step, durable: bool = True) -> Ops[Any]:
    return (yield Batch(steps, durable))
