"""``durability="async"``: a step's saves wait a moment to go out with the next step's, in one round trip.

LangGraph writes an async-durability checkpoint in the background while the next step runs.
plait serializes it at once (a reducer that later changes a value in place cannot alter what is
stored) and holds its statements back for :data:`GRACE` seconds: when the next step ends sooner,
its saves carry them, in one transaction and one round trip; when it runs longer, a background
thread (sync runs) or task (async runs) sends them meanwhile. Savers that cannot hold calls back
(SQLite, in-memory, user-written) save at once, as with ``durability="sync"``.

A failure of a save sent in the background is raised by the run's next save, or when it ends.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

from plait.pregel._effects import Save, asave, save

__all__ = ["GRACE", "AsyncHeldSaves", "HeldSaves", "holds_saves"]

GRACE = 0.002
"""Seconds a step's held saves wait for the next step's before they are sent on their own."""


def holds_saves(saver: Any, durability: str, thread: tuple[str, str] | None, asynchronous: bool) -> bool:
    """Whether a run's saves are held back: ``durability="async"``, a root graph's thread, a saver that can."""
    can = getattr(saver, "_can_hold", None)
    return (
        durability == "async"
        and thread is not None
        and thread[1] == ""
        and can is not None
        and can(asynchronous)
    )


class _Timers:
    """One daemon thread calling functions at their deadlines (a ``threading.Timer`` each costs a thread)."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._count = itertools.count()
        self._ready = threading.Condition()
        self._thread: threading.Thread | None = None

    def call_at(self, deadline: float, fn: Callable[[], None]) -> None:
        with self._ready:
            heapq.heappush(self._heap, (deadline, next(self._count), fn))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="plait-held-saves", daemon=True)
                self._thread.start()
            self._ready.notify()

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    self._ready.wait(None if not self._heap else self._heap[0][0] - time.monotonic())
                _, _, fn = heapq.heappop(self._heap)
            fn()


_timers = _Timers()


class HeldSaves:
    """The saves a sync run holds back (see the module's docstring)."""

    def __init__(self, saver: Any, thread: tuple[str, str]) -> None:
        self.saver, self.thread = saver, thread
        self.held: object = None  # the saver's Held (plait.checkpoint._engine_batch)
        self.failed: BaseException | None = None
        self._lock = threading.Lock()  # the held calls
        self._wire = threading.Lock()  # one send (or serialization) at a time, in order

    def save(self, effect: Save) -> None:
        """Hold ``effect`` back (with what is held already), or send everything now for the run's last save."""
        with self._wire:
            self._raise_failure()
            before = self._take()
            if effect.last:
                save(self.saver, effect, self.thread, before)
                return
            held = self.saver._hold_saves(effect.ops, before)
            with self._lock:
                self.held = held
        if held is not None:
            _timers.call_at(time.monotonic() + GRACE, self._send_late)

    def finish(self) -> None:
        """Send what is held (the run ends without a last save, or something else is saved next)."""
        with self._wire:
            before = self._take()
            if before is not None:
                self.saver._save_many((), None, before)
        self._raise_failure()

    def _send_late(self) -> None:
        """The timer's call: the next step took longer than the grace period."""
        with self._wire:
            before = self._take()
            if before is None:
                return
            try:
                self.saver._save_many((), None, before)
            except Exception as exc:  # noqa: BLE001 - raised by the run's next save
                self.failed = exc

    def _take(self) -> object:
        with self._lock:
            held, self.held = self.held, None
        return held

    def _raise_failure(self) -> None:
        failed, self.failed = self.failed, None
        if failed is not None:
            raise failed


class AsyncHeldSaves:
    """The saves an async run holds back (see the module's docstring)."""

    def __init__(self, saver: Any, thread: tuple[str, str]) -> None:
        self.saver, self.thread = saver, thread
        self.held: object = None  # the saver's Held (plait.checkpoint._engine_batch)
        self.failed: BaseException | None = None
        self._wire = asyncio.Lock()
        self._late: asyncio.Task[None] | None = None

    async def save(self, effect: Save) -> None:
        """Async :meth:`HeldSaves.save`."""
        async with self._wire:
            self._raise_failure()
            before, self.held = self.held, None
            if effect.last:
                await asave(self.saver, effect, self.thread, before)
                return
            self.held = await self.saver._ahold_saves(effect.ops, before)
        if self.held is not None and self._late is None:
            self._late = asyncio.get_running_loop().create_task(self._send_late())

    async def finish(self) -> None:
        """Async :meth:`HeldSaves.finish` (shielded: a cancelled run's held saves still go out)."""
        await asyncio.shield(self._finish())

    async def _finish(self) -> None:
        late, self._late = self._late, None
        if late is not None:
            late.cancel()
        async with self._wire:
            before, self.held = self.held, None
            if before is not None:
                await self.saver._asave_many((), None, before)
        self._raise_failure()

    async def _send_late(self) -> None:
        await asyncio.sleep(GRACE)
        self._late = None
        async with self._wire:
            before, self.held = self.held, None
            if before is None:
                return
            try:
                await self.saver._asave_many((), None, before)
            except Exception as exc:  # noqa: BLE001 - raised by the run's next save
                self.failed = exc

    def _raise_failure(self) -> None:
        failed, self.failed = self.failed, None
        if failed is not None:
            raise failed
