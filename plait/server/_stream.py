"""Run events: recorded by the worker executing a run, read by any worker streaming it.

Each run has a numbered log of ``(seq, event, data)``. The worker running it keeps the log
in memory, so clients of the same process follow it directly. On PostgreSQL it also writes
each batch to ``plait_server_events`` and sends ``NOTIFY plait_server_event`` with the run
id, so a client connected to another worker follows the same log, and a client that
reconnects with ``Last-Event-ID`` resumes after the last event it saw. The last entry of a
log is the internal ``__end__`` event, whose data is the run's outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from plait.server._db import Database, Tx
from plait.server._wire import dumps, loads

__all__ = ["END", "Broker", "RunLog"]

END = "__end__"
"""The internal last event of every run log (its data: status, values, error)."""

_KEEP_SECONDS = 300.0
_log = logging.getLogger("plait.server")


class RunLog:
    """The events of one run in this process, with a wake-up for followers."""

    def __init__(self, first_seq: int = 1) -> None:
        self.events: list[tuple[int, str, bytes]] = []
        self.next_seq = first_seq
        self.done = False
        self.result: bytes | None = None
        """The run's output as JSON, once it ended without an error (what ``runs.wait`` answers)."""
        self.unflushed: list[tuple[int, str, bytes]] = []
        self._changed = asyncio.Event()

    def append(self, event: str, data: bytes) -> None:
        """Record one event."""
        item = (self.next_seq, event, data)
        self.next_seq += 1
        self.events.append(item)
        self.unflushed.append(item)
        self.done = self.done or event == END
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_done(self) -> None:
        """Until the run's ``__end__`` is in the log."""
        while not self.done:
            await self._changed.wait()

    async def follow(self, after: int) -> AsyncIterator[tuple[int, str, bytes]]:
        """Events numbered above ``after``, waiting for new ones until ``__end__``."""
        index = 0
        while True:
            changed = self._changed
            while index < len(self.events):
                item = self.events[index]
                index += 1
                if item[0] > after:
                    yield item
                    if item[1] == END:
                        return
            if self.done:
                return
            await changed.wait()


class Broker:
    """Run logs of this process, and (on PostgreSQL) of every other worker."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.shared = db.dialect == "postgres"
        self.logs: dict[str, RunLog] = {}
        self.remote: dict[str, set[asyncio.Event]] = {}

    def open(self, run_id: str, first_seq: int = 1) -> RunLog:
        """The log a run writes to in this process (created on first use)."""
        log = self.logs.get(run_id)
        if log is None or log.done:
            log = self.logs[run_id] = RunLog(first_seq)
            self.notified(run_id)  # followers reading the table switch to this log
        return log

    async def next_seq(self, run_id: str) -> int:
        """Where a (resumed) attempt of a run continues its numbering."""
        if not self.shared:
            return 1
        rows = await self.db.fetch(
            "SELECT MAX(seq) AS m FROM plait_server_events WHERE run_id = ?", (run_id,)
        )
        return int(rows[0]["m"] or 0) + 1

    def publish(self, run_id: str, event: str, data: Any) -> None:
        """Record an event of a run executing here (``flush`` shares it with other workers)."""
        self.open(run_id).append(event, data if isinstance(data, bytes) else dumps(data))

    async def flush(self, run_id: str, tx: Tx | None = None) -> None:
        """Write the run's new events to the shared table and wake the other workers."""
        log = self.logs.get(run_id)
        if not self.shared or log is None or not log.unflushed:
            return
        rows = list(log.unflushed)
        if tx is not None:
            await _insert(tx, run_id, rows)
        else:
            async with self.db.tx() as own:
                await _insert(own, run_id, rows)
        del log.unflushed[: len(rows)]

    async def keep_flushing(self, run_id: str, done: asyncio.Event, every: float = 0.05) -> None:
        """Share a running run's events with the other workers in batches, until ``done`` is set.

        (Stopped by an event, not by cancellation: a cancel landing inside a database call
        can be absorbed there.)
        """
        while not done.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(done.wait(), timeout=every)
            if done.is_set():
                return
            try:
                await self.flush(run_id)
            except Exception:  # noqa: BLE001 - the next batch (or the run's end) writes them
                _log.warning("could not share the events of run %s yet", run_id)

    async def end(self, run_id: str, data: bytes, tx: Tx) -> None:
        """Write the run's remaining events and its ``__end__`` (JSON ``data``) inside ``tx``.

        Followers in this process see the end only after :meth:`ended` (after the commit).
        """
        log = self.open(run_id)
        if self.shared:
            rows = [*log.unflushed, (log.next_seq, END, data)]
            log.unflushed = []
            await _insert(tx, run_id, rows)

    def ended(self, run_id: str, data: bytes, result: bytes | None = None) -> None:
        """Show the run's ``__end__`` (JSON ``data``; ``result``: its output) to followers here, after the commit."""
        log = self.open(run_id)
        log.result = result
        log.append(END, data)
        log.unflushed = []

    def finished(self, run_id: str) -> None:
        """Forget the run's in-memory log after a while (followers may still be reading)."""
        asyncio.get_running_loop().call_later(_KEEP_SECONDS, self._forget, run_id)

    def _forget(self, run_id: str) -> None:
        log = self.logs.get(run_id)
        if log is not None and log.done:
            del self.logs[run_id]

    def notified(self, run_id: str) -> None:
        """A NOTIFY about new events of ``run_id`` arrived (or ``""``: reconnected, wake all)."""
        for key, events in list(self.remote.items()):
            if not run_id or key == run_id:
                for event in events:
                    event.set()

    async def follow(self, run_id: str, after: int = 0) -> AsyncIterator[tuple[int, str, bytes]]:
        """The run's events after ``after``: from memory when it runs here, else from the table."""
        log = self.logs.get(run_id)
        if log is not None:
            async for item in log.follow(after):
                yield item
            return
        if not self.shared:
            return
        async for item in self._follow_table(run_id, after):
            yield item

    async def _follow_table(self, run_id: str, after: int) -> AsyncIterator[tuple[int, str, bytes]]:
        wake = asyncio.Event()
        self.remote.setdefault(run_id, set()).add(wake)
        try:
            idle = 0
            while True:
                wake.clear()
                log = self.logs.get(run_id)
                rows = await self.db.fetch(
                    "SELECT seq, event, data FROM plait_server_events WHERE run_id = ? AND seq > ? ORDER BY seq",
                    (run_id, after),
                )
                for row in rows:
                    after = int(row["seq"])
                    yield after, row["event"], str(row["data"]).encode()
                    if row["event"] == END:
                        return
                if log is not None:  # this process claimed the run meanwhile: follow it here
                    async for item in log.follow(after):
                        yield item
                    return
                try:
                    await asyncio.wait_for(wake.wait(), timeout=2.0)
                    idle = 0
                except asyncio.TimeoutError:
                    idle += 1
                    if idle > 1 and await self._gone(run_id):
                        return
        finally:
            waiting = self.remote.get(run_id, set())
            waiting.discard(wake)
            if not waiting:
                self.remote.pop(run_id, None)

    async def _gone(self, run_id: str) -> bool:
        rows = await self.db.fetch("SELECT status FROM plait_server_runs WHERE run_id = ?", (run_id,))
        return not rows or rows[0]["status"] not in ("pending", "running")


async def _insert(tx: Tx, run_id: str, rows: list[tuple[int, str, bytes]]) -> None:
    for seq, event, data in rows:
        await tx.run(
            "INSERT INTO plait_server_events (run_id, seq, event, data) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (run_id, seq) DO NOTHING",
            (run_id, seq, event, data.decode()),
        )
    await tx.run("SELECT pg_notify('plait_server_event', ?)", (run_id,))


def outcome(data: bytes) -> dict[str, Any]:
    """The data of an ``__end__`` event."""
    result: dict[str, Any] = loads(data)
    return result
