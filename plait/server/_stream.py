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
from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import Any

from plait.server._data import events as stored_events
from plait.server._data import runs
from plait.server._db import Database
from plait.server._wire import dumps, loads

__all__ = ["END", "Broker", "RunLog"]

END = "__end__"
"""The internal last event of every run log (its data: status, values, error)."""

_KEEP_SECONDS = 300.0
_ANNOUNCED = 4096
_log = logging.getLogger("plait.server")


class RunLog:
    """The events of one run in this process, with a wake-up for followers."""

    def __init__(self, first_seq: int = 1) -> None:
        self.events: list[tuple[int, str, bytes]] = []
        self.first_seq = first_seq
        """The first number of this log: older events (an earlier attempt) are only in the table."""
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
        self.fresh: dict[str, asyncio.Event] = {}
        """Wake-ups registered before a run was stored: until one fires, its table has no events."""
        self._stir = asyncio.Event()
        self._announced: OrderedDict[str, None] = OrderedDict()
        """Runs whose events were notified lately: only a run's first notification stirs."""

    def stirred(self) -> None:
        """A run may have started or ended somewhere: followers of whole threads look again."""
        self._stir.set()
        self._stir = asyncio.Event()

    def stir(self) -> asyncio.Event:
        """What :meth:`stirred` sets next: take it before looking, then wait on it (nothing is missed)."""
        return self._stir

    def open(self, run_id: str, first_seq: int = 1) -> RunLog:
        """The log a run writes to in this process (created on first use)."""
        log = self.logs.get(run_id)
        if log is None or log.done:
            log = self.logs[run_id] = RunLog(first_seq)
            self.notified(run_id)  # followers reading the table switch to this log (and threads' look)
        return log

    def watch(self, run_id: str) -> None:
        """Register a follower of ``run_id`` before the run is stored (call before its commit).

        The follower then skips reading the table until a notification (or this process
        claiming the run) says there is something to read.
        """
        if not self.shared:
            return
        wake = self.fresh[run_id] = asyncio.Event()
        self.remote.setdefault(run_id, set()).add(wake)
        asyncio.get_running_loop().call_later(_KEEP_SECONDS, self._unwatch, run_id, wake)

    def unwatch(self, run_id: str) -> None:
        """Drop what :meth:`watch` registered (the run was not stored)."""
        wake = self.fresh.pop(run_id, None)
        if wake is not None:
            self._discard(run_id, wake)

    def _unwatch(self, run_id: str, wake: asyncio.Event) -> None:
        if self.fresh.get(run_id) is wake:
            del self.fresh[run_id]
        self._discard(run_id, wake)

    def _discard(self, run_id: str, wake: asyncio.Event) -> None:
        waiting = self.remote.get(run_id, set())
        waiting.discard(wake)
        if not waiting:
            self.remote.pop(run_id, None)

    async def next_seq(self, run_id: str, attempt: int = 2) -> int:
        """Where attempt ``attempt`` of a run continues its numbering (the first starts at 1)."""
        if not self.shared or attempt <= 1:
            return 1
        return await stored_events.last_seq(self.db, run_id) + 1

    def publish(self, run_id: str, event: str, data: Any) -> None:
        """Record an event of a run executing here (``flush`` shares it with other workers)."""
        self.open(run_id).append(event, data if isinstance(data, bytes) else dumps(data))

    async def flush(self, run_id: str) -> None:
        """Write the run's new events to the shared table and wake the other workers."""
        log = self.logs.get(run_id)
        if not self.shared or log is None or not log.unflushed:
            return
        rows = list(log.unflushed)
        await stored_events.write(self.db, run_id, rows)
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

    def end(self, run_id: str, data: bytes) -> list[tuple[int, str, bytes]]:
        """The run's events still to write to the table, ending with its ``__end__`` (JSON ``data``).

        (None on SQLite.) Followers in this process see the end only after :meth:`ended`, once
        the caller committed them.
        """
        log = self.open(run_id)
        if not self.shared:
            return []
        rows = [*log.unflushed, (log.next_seq, END, data)]
        log.unflushed = []
        return rows

    def ended(self, run_id: str, data: bytes, result: bytes | None = None) -> None:
        """Show the run's ``__end__`` (JSON ``data``; ``result``: its output) to followers here, after the commit."""
        log = self.open(run_id)
        log.result = result
        log.append(END, data)
        log.unflushed = []

    async def end_unrun(self, run_id: str, status: str, error: Any = None) -> None:
        """End the log of a run that will not execute (cancelled while queued, or failed before it
        began), unless it ended already: its followers get its ``__end__``, here and (once written)
        on the other workers, and followers of its thread look again."""
        log = self.logs.get(run_id)
        if log is None or not log.done:
            self.publish(run_id, END, {"status": status, "values": None, "error": error})
            self.finished(run_id)
        self.stirred()
        await self.flush(run_id)

    def finished(self, run_id: str) -> None:
        """Forget the run's in-memory log after a while (followers may still be reading)."""
        asyncio.get_running_loop().call_later(_KEEP_SECONDS, self._forget, run_id)

    def _forget(self, run_id: str) -> None:
        log = self.logs.get(run_id)
        if log is not None and log.done:
            del self.logs[run_id]

    def notified(self, run_id: str) -> None:
        """A NOTIFY about new events of ``run_id`` arrived (or ``""``: reconnected, wake all)."""
        if not run_id or run_id not in self._announced:  # a run's first events: it started
            self.stirred()
            if run_id:
                self._announced[run_id] = None
                if len(self._announced) > _ANNOUNCED:
                    self._announced.popitem(last=False)
        for key, events in list(self.remote.items()):
            if not run_id or key == run_id:
                for event in events:
                    event.set()

    async def follow(self, run_id: str, after: int = 0) -> AsyncIterator[tuple[int, str, bytes]]:
        """The run's events after ``after``: from memory when it runs here, else from the table."""
        wake = self.fresh.pop(run_id, None)
        log = self.logs.get(run_id)
        if log is not None and log.first_seq <= after + 1:
            if wake is not None:
                self._discard(run_id, wake)
            async for item in log.follow(after):
                yield item
            return
        if not self.shared:
            return
        async for item in self._follow_table(run_id, after, wake):
            yield item

    async def _follow_table(
        self, run_id: str, after: int, wake: asyncio.Event | None
    ) -> AsyncIterator[tuple[int, str, bytes]]:
        # fresh: registered before the run was stored and not woken since: the table is empty
        fresh = wake is not None and not wake.is_set()
        if wake is None:
            wake = asyncio.Event()
            self.remote.setdefault(run_id, set()).add(wake)
        try:
            idle = 0
            while True:
                log = self.logs.get(run_id)
                if log is not None and log.first_seq <= after + 1:  # it runs here: no table needed
                    async for item in log.follow(after):
                        yield item
                    return
                if not fresh:
                    wake.clear()
                    for row in await stored_events.after(self.db, run_id, after):
                        after = int(row["seq"])
                        yield after, row["event"], str(row["data"]).encode()
                        if row["event"] == END:
                            return
                    if log is not None:  # this process claimed the run meanwhile: follow it here
                        async for item in log.follow(after):
                            yield item
                        return
                fresh = False
                try:
                    await asyncio.wait_for(wake.wait(), timeout=2.0)
                    idle = 0
                except asyncio.TimeoutError:
                    idle += 1
                    if idle > 1 and await self._gone(run_id):
                        return
        finally:
            self._discard(run_id, wake)

    async def _gone(self, run_id: str) -> bool:
        return await runs.status(self.db, run_id) not in ("pending", "running")


def outcome(data: bytes) -> dict[str, object]:
    """The data of an ``__end__`` event."""
    result: dict[str, object] = loads(data)
    return result
