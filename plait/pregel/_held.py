"""``durability="async"``: a step's saves wait a moment to go out with the next step's, in one round trip.

LangGraph writes an async-durability checkpoint in the background while the next step runs.
plait serializes it at once (a reducer that later changes a value in place cannot alter what is
stored) and holds its statements back for :data:`GRACE` seconds: when the next step ends sooner,
its saves carry them, in one transaction and one round trip; when it runs longer, a background
thread (sync runs) or task (async runs) sends them meanwhile. Savers that cannot hold calls back
(SQLite, in-memory, user-written, subclasses overriding ``put``) save at once, as with
``durability="sync"``. The drivers send what is held before a run ends, whatever ends it.

A failure of a save sent in the background is raised by the run's next save, or when it ends.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from plait.pregel._effects import Save, asave, save

__all__ = ["GRACE", "AsyncHeldSaves", "HeldSaves", "holds_saves"]

GRACE = 0.002
"""Seconds a step's held saves wait for the next step's before they are sent on their own."""
SENDERS = 4
"""Threads sending held saves of sync runs whose next step took longer than :data:`GRACE`."""


def holds_saves(saver: Any, durability: str, thread: tuple[str, str] | None) -> bool:
    """Whether a run's saves are held back: ``durability="async"``, a root graph's thread, a saver
    class that can (looked up on the class, as :func:`~plait.pregel._effects.save` does: a wrapper
    forwarding attributes has its own ``put`` called)."""
    if durability != "async" or thread is None or thread[1] != "":
        return False
    kind: Any = saver.__class__
    can = getattr(kind, "_can_hold", None)
    return can is not None and bool(can(saver))


class _Timers:
    """One daemon thread handing functions to a few sender threads at their deadlines (a
    ``threading.Timer`` costs a thread each; sends must not wait for one another)."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._count = itertools.count()
        self._ready = threading.Condition()
        self._thread: threading.Thread | None = None
        self._senders: ThreadPoolExecutor | None = None

    def forked(self) -> None:
        """In a forked child: the parent's threads (and any lock they held) are not here."""
        self._heap, self._ready = [], threading.Condition()
        self._thread = self._senders = None

    def call_at(self, deadline: float, fn: Callable[[], None]) -> None:
        with self._ready:
            heapq.heappush(self._heap, (deadline, next(self._count), fn))
            if self._thread is None:
                self._senders = ThreadPoolExecutor(SENDERS, thread_name_prefix="plait-held-send")
                self._thread = threading.Thread(target=self._run, name="plait-held-saves", daemon=True)
                self._thread.start()
            self._ready.notify()

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    self._ready.wait(None if not self._heap else self._heap[0][0] - time.monotonic())
                _, _, fn = heapq.heappop(self._heap)
                senders = self._senders
            if senders is not None:
                senders.submit(fn)


_timers = _Timers()
os.register_at_fork(after_in_child=_timers.forked)


class HeldSaves:
    """The saves a sync run holds back (see the module's docstring)."""

    def __init__(self, saver: Any, thread: tuple[str, str]) -> None:
        self.saver, self.thread = saver, thread
        self.kind: Any = saver.__class__
        self.held: object = None  # the saver's Held (plait.checkpoint._engine_batch)
        self.failed: BaseException | None = None
        self._lock = threading.Lock()  # the held calls
        self._wire = threading.Lock()  # one send (or serialization) at a time, in order

    def save(self, effect: Save) -> None:
        """Hold ``effect`` back (with what is held already), or send everything now for the run's last save."""
        with self._wire:
            self._raise_failure()
            before = self._take()
            try:
                if effect.last:
                    save(self.saver, effect, self.thread, before)
                    return
                held: object = self.kind._hold_saves(self.saver, effect.ops, before)
            except BaseException as exc:
                if not isinstance(exc, Exception):  # Ctrl-C: what was held is still to send
                    self._put_back(before)
                raise
            with self._lock:
                self.held = held
        if held is not None:
            _timers.call_at(time.monotonic() + GRACE, self._send_late)

    def finish(self) -> None:
        """Send what is held (the run ends without a last save, or something else is saved next)."""
        with self._wire:
            before = self._take()
            if before is not None:
                self._send(before)
        self._raise_failure()

    def _send_late(self) -> None:
        """A sender's call: the next step took longer than the grace period."""
        with self._wire:
            before = self._take()
            if before is None:
                return
            try:
                self._send(before)
            except Exception as exc:  # noqa: BLE001 - raised by the run's next save
                self.failed = exc

    def _send(self, before: object) -> None:
        if not self.kind._save_many(self.saver, (), None, before):
            raise RuntimeError(f"{self.kind.__name__} held saves back but cannot send them")

    def _take(self) -> object:
        with self._lock:
            held, self.held = self.held, None
        return held

    def _put_back(self, before: object) -> None:
        with self._lock:
            if self.held is None:
                self.held = before

    def _raise_failure(self) -> None:
        failed, self.failed = self.failed, None
        if failed is not None:
            raise failed


class AsyncHeldSaves:
    """The saves an async run holds back (see the module's docstring)."""

    def __init__(self, saver: Any, thread: tuple[str, str]) -> None:
        self.saver, self.thread = saver, thread
        self.kind: Any = saver.__class__
        self.held: object = None
        self.failed: BaseException | None = None
        self._wire = asyncio.Lock()
        self._late: asyncio.Task[None] | None = None

    async def save(self, effect: Save) -> None:
        """Async :meth:`HeldSaves.save`."""
        async with self._wire:
            self._raise_failure()
            before, self.held = self.held, None
            try:
                if effect.last:
                    await asave(self.saver, effect, self.thread, before)
                    return
                self.held = await self.kind._ahold_saves(self.saver, effect.ops, before)
            except BaseException as exc:
                if not isinstance(exc, Exception) and self.held is None:  # cancelled: still to send
                    self.held = before
                raise
        if self.held is not None and self._late is None:
            self._late = asyncio.get_running_loop().create_task(self._send_late())

    async def finish(self) -> None:
        """Async :meth:`HeldSaves.finish`; the sends run to their end even when the caller is
        cancelled (again and again, as anyio's cancel scopes do), then the cancellation goes on."""
        job = asyncio.ensure_future(self._finish())
        cancelled = False
        while True:
            try:
                await asyncio.shield(job)
                break
            except asyncio.CancelledError:
                if job.done():
                    raise
                cancelled = True
        if cancelled:
            raise asyncio.CancelledError

    async def _finish(self) -> None:
        late, self._late = self._late, None
        if late is not None:
            late.cancel()
        async with self._wire:
            before, self.held = self.held, None
            if before is not None:
                await self._send(before)
        self._raise_failure()

    async def _send_late(self) -> None:
        try:
            await asyncio.sleep(GRACE)
        except asyncio.CancelledError:  # the run sends them itself (finish)
            return
        self._late = None  # from here on, finish waits for this send instead of cancelling it
        async with self._wire:
            before, self.held = self.held, None
            if before is None:
                return
            try:
                await self._send(before)
            except Exception as exc:  # noqa: BLE001 - raised by the run's next save
                self.failed = exc

    async def _send(self, before: object) -> None:
        if not await self.kind._asave_many(self.saver, (), None, before):
            raise RuntimeError(f"{self.kind.__name__} held saves back but cannot send them")

    def _raise_failure(self) -> None:
        failed, self.failed = self.failed, None
        if failed is not None:
            raise failed
