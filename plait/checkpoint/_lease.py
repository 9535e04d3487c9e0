"""Cross-process per-thread leases for the SQL savers (SQLite and PostgreSQL).

A run holds its thread for its whole duration (see ``BaseCheckpointSaver.lease``).
Within one process a ``threading.Lock`` per thread decides first, so threads
of one process never poll the database. Across processes a row in
``checkpoint_leases`` decides:

* **acquire** is one transaction: an insert-or-take-over that only succeeds if
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
import logging
import os
import re
import socket
import threading
import time
import uuid
from collections.abc import AsyncGenerator, Callable, Generator
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
from typing import Any, NamedTuple

from plait.checkpoint.base import busy, local_lock

__all__ = ["DEFAULT_TTL", "LeaseSql", "ThreadLeases", "lease_sql"]

DEFAULT_TTL = 30.0
"""Seconds after which the lease of a vanished (killed) holder can be taken over."""

_log = logging.getLogger("plait.checkpoint.lease")
_Key = tuple[str, str]
_FIRST_POLL = 0.002
_MAX_POLL = 0.05


class LeaseSql(NamedTuple):
    """The lease statements of one SQL dialect (named parameters)."""

    acquire: str
    owner: str
    wait: str
    renew: str
    drop: str
    free: str


def lease_sql(dialect: str) -> LeaseSql:
    """The lease statements for ``"sqlite"`` (client clock, epoch seconds) or ``"postgres"`` (server clock)."""
    if dialect == "sqlite":
        now, later, stale = ":now", ":now + :ttl", ":now - :stale"
    else:
        now = "clock_timestamp()"
        later, stale = f"{now} + %(ttl)s * interval '1 second'", f"{now} - %(stale)s * interval '1 second'"
    where = "thread_id = :t AND checkpoint_ns = :ns"
    statements = LeaseSql(
        acquire=f"""INSERT INTO checkpoint_leases (thread_id, checkpoint_ns, owner, expires_at)
            VALUES (:t, :ns, :me, {later})
            ON CONFLICT (thread_id, checkpoint_ns) DO UPDATE SET owner = excluded.owner,
              expires_at = excluded.expires_at,
              waiter = CASE WHEN checkpoint_leases.waiter = excluded.owner THEN NULL ELSE checkpoint_leases.waiter END
            WHERE (checkpoint_leases.owner IS NULL OR checkpoint_leases.expires_at < {now})
              AND (checkpoint_leases.waiter IS NULL OR checkpoint_leases.waiter = excluded.owner
                   OR checkpoint_leases.waiter_seen < {stale})""",
        owner=f"SELECT owner FROM checkpoint_leases WHERE {where}",
        wait=f"""UPDATE checkpoint_leases SET waiter = :me, waiter_seen = {now}
            WHERE {where} AND (waiter IS NULL OR waiter = :me OR waiter_seen < {stale})""",
        renew=f"UPDATE checkpoint_leases SET expires_at = {later} WHERE {where} AND owner = :me",
        drop=f"DELETE FROM checkpoint_leases WHERE {where} AND owner = :me AND waiter IS NULL",
        free=f"UPDATE checkpoint_leases SET owner = NULL, expires_at = {now} WHERE {where} AND owner = :me",
    )
    if dialect == "sqlite":
        return statements
    return LeaseSql(*(re.sub(r":(\w+)", r"%(\1)s", s) for s in statements))


def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


class ThreadLeases:
    """Process-local locks plus database lease rows, with a heartbeat; one per saver.

    Args:
        tx: Opens a short transaction and yields an object with ``execute``.
        sql: The dialect's statements (:func:`lease_sql`).
        ttl: Seconds a lease lives without renewal.
        scope: Returns ``(name of the database, shared across processes?)``; called on first use.
    """

    def __init__(
        self,
        tx: Callable[[], AbstractContextManager[Any]],
        sql: LeaseSql,
        ttl: float,
        scope: Callable[[], tuple[str, bool]],
    ) -> None:
        if not ttl > 0:
            raise ValueError(f"lease_ttl must be a positive number of seconds, got {ttl!r}")
        self.tx, self.sql, self.ttl = tx, sql, float(ttl)
        self._scope_fn = scope
        self._scope: tuple[str, bool] | None = None
        self._held: dict[str, _Key] = {}
        self._held_lock = threading.Lock()
        self._beater: threading.Thread | None = None

    def scope(self) -> tuple[str, bool]:
        """``(database name, shared)``, computed once."""
        if self._scope is None:
            self._scope = self._scope_fn()
        return self._scope

    # -- one database round trip each ---------------------------------------------------

    def _params(self, key: _Key, me: str) -> dict[str, Any]:
        return {
            "t": key[0],
            "ns": key[1],
            "me": me,
            "ttl": self.ttl,
            "now": time.time(),
            "stale": max(1.0, 20 * _MAX_POLL),
        }

    def try_acquire(self, key: _Key, me: str, queue: bool) -> bool:
        """One attempt; on failure with ``queue``, record ``me`` as the next in line."""
        params = self._params(key, me)
        with self.tx() as cur:
            cur.execute(self.sql.acquire, params)
            row = cur.execute(self.sql.owner, params).fetchone()
            won = row is not None and row[0] == me
            if not won and queue:
                cur.execute(self.sql.wait, params)
        if won:
            self._hold(key, me)
        return won

    def release(self, key: _Key, me: str) -> None:
        """Give the thread back (never raises: an unreleased lease expires after ``ttl``)."""
        with self._held_lock:
            self._held.pop(me, None)
        params = self._params(key, me)
        try:
            with self.tx() as cur:
                cur.execute(self.sql.drop, params)
                cur.execute(self.sql.free, params)
        except Exception as exc:  # noqa: BLE001 - the run's own outcome matters more
            _log.warning(
                "Could not release the lease of thread %r (%s); it expires in %.0f s", key[0], exc, self.ttl
            )

    def _renew_all(self) -> None:
        with self._held_lock:
            items = list(self._held.items())
        for me, key in items:
            try:
                with self.tx() as cur:
                    kept = cur.execute(self.sql.renew, self._params(key, me)).rowcount
            except Exception as exc:  # noqa: BLE001 - retried on the next beat
                _log.warning("Could not renew the lease of thread %r: %s", key[0], exc)
                continue
            if kept == 0 and me in self._held:
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
        return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"

    def _acquire(self, key: _Key, wait: bool, deadline: float | None) -> str:
        me, delay = self._owner_token(), _FIRST_POLL
        while not self.try_acquire(key, me, queue=wait):
            left = _remaining(deadline)
            if not wait or left == 0.0:
                raise busy(key[0])
            time.sleep(delay if left is None else min(delay, left))
            delay = min(delay * 1.5, _MAX_POLL)
        return me

    @contextmanager
    def hold(self, thread_id: str, ns: str, wait: bool, timeout: float | None) -> Generator[None, None, None]:
        """The sync lease: local lock, then (for shared databases) the lease row."""
        key = (str(thread_id), ns or "")
        deadline = None if timeout is None else time.monotonic() + timeout
        name, shared = self.scope()
        with local_lock((name, *key)) as local:
            left = _remaining(deadline)
            if not local.acquire(blocking=wait, timeout=-1 if left is None or not wait else left):
                raise busy(key[0])
            try:
                me = self._acquire(key, wait, deadline) if shared else None
                try:
                    yield
                finally:
                    if me is not None:
                        self.release(key, me)
            finally:
                local.release()

    @asynccontextmanager
    async def ahold(
        self, thread_id: str, ns: str, wait: bool, timeout: float | None
    ) -> AsyncGenerator[None, None]:
        """The async lease: never blocks the event loop, and never leaks a lease on cancellation."""
        key = (str(thread_id), ns or "")
        deadline = None if timeout is None else time.monotonic() + timeout
        name, shared = await asyncio.to_thread(self.scope)
        with local_lock((name, *key)) as local:
            await _poll(lambda: local.acquire(blocking=False), key, wait, deadline)
            try:
                me = self._owner_token() if shared else None
                if me is not None:
                    await _poll(
                        lambda: self.try_acquire(key, me, queue=wait),
                        key,
                        wait,
                        deadline,
                        orphan=lambda: self.release(key, me),
                    )
                try:
                    yield
                finally:
                    if me is not None:
                        await asyncio.shield(asyncio.to_thread(self.release, key, me))
            finally:
                local.release()


async def _poll(
    attempt: Callable[[], bool],
    key: _Key,
    wait: bool,
    deadline: float | None,
    orphan: Callable[[], None] | None = None,
) -> None:
    """Call ``attempt`` until it succeeds, sleeping with backoff; raise ThreadBusyError on give-up.

    With ``orphan``, ``attempt`` blocks and runs in a worker thread; if the caller
    is cancelled meanwhile and the attempt then succeeds, ``orphan`` undoes it.
    """
    delay = _FIRST_POLL
    while True:
        if orphan is not None:
            job = asyncio.ensure_future(asyncio.to_thread(attempt))
            try:
                won = await asyncio.shield(job)
            except asyncio.CancelledError:
                job.add_done_callback(lambda done: _undo(done, orphan))
                raise
        else:
            won = attempt()
        if won:
            return
        left = _remaining(deadline)
        if not wait or left == 0.0:
            raise busy(key[0])
        await asyncio.sleep(delay if left is None else min(delay, left))
        delay = min(delay * 1.5, _MAX_POLL)


def _undo(done: asyncio.Future[bool], orphan: Callable[[], None]) -> None:
    if not done.cancelled() and done.exception() is None and done.result():
        threading.Thread(target=orphan, name="plait-lease-release", daemon=True).start()
