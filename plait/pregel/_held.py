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
import logging
import os
import queue
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from plait.pregel._effects import Save, asave, save
from plait.pregel._loop import Loop

__all__ = ["GRACE", "AsyncHeldSaves", "HeldSaves", "held_for"]

_log = logging.getLogger("plait.pregel")

GRACE = 0.002
"""Seconds a step's held saves wait for the next step's before they are sent on their own."""
SENDERS = 4
"""Threads sending held saves of sync runs whose next step took longer than :data:`GRACE`."""
AFTER_CANCEL = 30.0
"""Seconds an async run cancelled while it sends its saves still waits for them to be stored."""

_T = TypeVar("_T")


def _holds(loop: Loop) -> tuple[str, str] | None:
    """The thread whose saves ``loop``'s run holds back: ``durability="async"``, a root graph's
    thread, a saver class that can (looked up on the class, as :func:`~plait.pregel._effects.save`
    does: a wrapper forwarding attributes has its own ``put`` called); else ``None``."""
    settings = loop.settings
    thread = settings.thread
    if settings.durability != "async" or thread is None or thread.checkpoint_ns != "":
        return None
    kind = type(settings.saver)
    can = getattr(kind, "_can_hold", None)
    return (thread.thread_id, "") if can is not None and can(settings.saver) else None


class _Timers:
    """One daemon thread handing functions to a few daemon sender threads at their deadlines (a
    ``threading.Timer`` costs a thread each; sends must not wait for one another, and a hung
    send must not keep the interpreter from exiting).

    Each function comes with a quick check the timer thread calls first: when it answers false
    (the run sent its saves itself, the common case), no sender thread is woken.
    """

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Callable[[], bool], Callable[[], None]]] = []
        self._count = itertools.count()
        self._ready = threading.Condition()
        self._due: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._started = False

    def forked(self) -> None:
        """In a forked child: the parent's threads (and any lock they held) are not here."""
        self._heap, self._ready, self._due, self._started = (
            [],
            threading.Condition(),
            queue.SimpleQueue(),
            False,
        )

    def call_at(self, deadline: float, due: Callable[[], bool], fn: Callable[[], None]) -> None:
        """Call ``fn`` on a sender thread at ``deadline`` if ``due()`` (called on the timer thread) says so."""
        with self._ready:
            heapq.heappush(self._heap, (deadline, next(self._count), due, fn))
            if not self._started:
                self._started = True
                threading.Thread(target=self._run, name="plait-held-saves", daemon=True).start()
                for n in range(SENDERS):
                    threading.Thread(target=self._send, name=f"plait-held-send-{n}", daemon=True).start()
            self._ready.notify()

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    self._ready.wait(None if not self._heap else self._heap[0][0] - time.monotonic())
                _, _, due, fn = heapq.heappop(self._heap)
            if due():
                self._due.put(fn)

    def _send(self) -> None:
        while True:
            self._due.get()()


_timers = _Timers()
os.register_at_fork(after_in_child=_timers.forked)


class _Held:
    """What the sync and async holders share: the saver, the thread, what is held, a failure."""

    def __init__(self, saver: Any, thread: tuple[str, str]) -> None:
        self.saver, self.thread = saver, thread
        self.kind: Any = type(cast(object, saver))
        self.held: object = None  # the saver's Held (plait.checkpoint._engine_batch)
        self.failed: BaseException | None = None

    def _raise_failure(self) -> None:
        failed, self.failed = self.failed, None
        if failed is not None:
            raise failed


class HeldSaves(_Held):
    """The saves a sync run holds back (see the module's docstring).

    ``held`` is changed only under ``_wire``: by the run's saves, or by a sender; the timer thread
    reads it (see :meth:`_late_due`).
    """

    def __init__(self, saver: Any, thread: tuple[str, str]) -> None:
        super().__init__(saver, thread)
        self._wire = threading.Lock()  # one send (or serialization) at a time, in order
        self._timed = False  # a late send is due: later holds wait for it, not a timer each

    def save(self, effect: Save) -> None:
        """Hold ``effect`` back (with what is held already), or send everything now for the run's last save."""
        with self._wire:
            self._raise_failure()
            before, self.held = self.held, None
            try:
                if effect.last:
                    save(self.saver, effect, self.thread, before)
                    return
                self.held = self.kind._hold_saves(self.saver, effect.ops, before)
            except BaseException as exc:
                if not isinstance(exc, Exception):  # Ctrl-C: what was held is still to send
                    self.held = before
                raise
            late = self.held is not None and not self._timed  # ``_timed`` read once (see _late_due)
            if late:
                self._timed = True
        if late:
            _timers.call_at(time.monotonic() + GRACE, self._late_due, self._send_late)

    def finish(self) -> None:
        """Send what is held (the run ends without a last save, or something else is saved next)."""
        with self._wire:
            self._send()
        self._raise_failure()

    def finish_quietly(self) -> None:
        """:meth:`finish` as a run ends with an error of its own: a failure here is logged."""
        try:
            self.finish()
        except Exception:  # noqa: BLE001 - the run's own error goes on
            _log.exception("saving the checkpoints a failed run held back failed")

    def _late_due(self) -> bool:
        """The timer thread's check at the deadline: is anything still held?

        A hold from now on times its own send. It stores ``held`` before it reads ``_timed``, and
        this clears ``_timed`` before it reads ``held``: either the hold sees ``_timed`` cleared and
        schedules a send of its own, or this sees what it holds (and :meth:`_send_late` sends it,
        or tries again a grace period later while the run still holds ``_wire``).
        """
        self._timed = False
        return self.held is not None

    def _send_late(self) -> None:
        """A sender's call: the next step took longer than the grace period."""
        if not self._wire.acquire(blocking=False):
            # the run is saving: it sends or takes what is held itself, unless it decided before
            # this deadline that a timer was pending; a later look finds nothing held, or sends it
            _timers.call_at(time.monotonic() + GRACE, self._late_due, self._send_late)
            return
        try:
            self._send()
        except Exception as exc:  # noqa: BLE001 - raised by the run's next save
            self.failed = exc
        finally:
            self._wire.release()

    def _send(self) -> None:
        before, self.held = self.held, None
        if before is not None:
            save(self.saver, Save(()), None, before)


class AsyncHeldSaves(_Held):
    """The saves an async run holds back (see the module's docstring)."""

    def __init__(self, saver: Any, thread: tuple[str, str]) -> None:
        super().__init__(saver, thread)
        self._wire = asyncio.Lock()
        self._timer: asyncio.TimerHandle | None = None  # the grace period of what is held
        self._late: asyncio.Task[None] | None = None  # the last late send (a reference keeps it alive)

    async def save(self, effect: Save) -> None:
        """Async :meth:`HeldSaves.save` (run to its end when cancelled, see :func:`_complete`:
        a send under way, in a worker thread for a sync saver, cannot be called back)."""
        await _complete(self._save(effect))
        if self.held is not None and self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(GRACE, self._deadline)

    def _deadline(self) -> None:
        """The grace period is over: a task sends what is still held (usually the run's last save
        took it already, and no task is needed)."""
        self._timer = None
        if self.held is not None:  # run to its end even if someone cancels the task (see _complete)
            self._late = asyncio.get_running_loop().create_task(_complete(self._late_send()))

    async def _save(self, effect: Save) -> None:
        async with self._wire:
            self._raise_failure()
            before, self.held = self.held, None
            if effect.last:
                await asave(self.saver, effect, self.thread, before)
                return
            self.held = await self.kind._ahold_saves(self.saver, effect.ops, before)

    async def finish(self) -> None:
        """Async :meth:`HeldSaves.finish` (run to its end when cancelled, see :func:`_complete`)."""
        await _complete(self._finish())

    async def finish_quietly(self) -> None:
        """Async :meth:`HeldSaves.finish_quietly`."""
        try:
            await self.finish()
        except Exception:  # noqa: BLE001 - the run's own error goes on
            _log.exception("saving the checkpoints a failed run held back failed")

    async def _finish(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        async with self._wire:  # after a late send under way
            await self._send()
        self._raise_failure()

    async def _late_send(self) -> None:
        async with self._wire:
            try:
                await self._send()
            except Exception as exc:  # noqa: BLE001 - raised by the run's next save
                self.failed = exc

    async def _send(self) -> None:
        before, self.held = self.held, None
        if before is not None:
            await asave(self.saver, Save(()), None, before)


_H = TypeVar("_H", HeldSaves, AsyncHeldSaves)


def held_for(loop: Loop, kind: type[_H]) -> None:
    """Set ``loop.holding``: the holder of the saves ``loop``'s run holds back (a step cut short
    sends them before its writes), or ``None`` when its saves go out at once."""
    thread = _holds(loop)
    loop.holding = None if thread is None else kind(loop.settings.saver, thread)


async def _complete(step: Awaitable[_T]) -> _T:
    """Await ``step`` to its end even when the caller is cancelled, again and again as anyio's
    cancel scopes do (for at most :data:`AFTER_CANCEL` seconds more), then let the cancellation go
    on, chained to ``step``'s own error if it failed."""
    job = asyncio.ensure_future(step)
    cancelled_at: float | None = None
    while not job.done():
        left = None if cancelled_at is None else AFTER_CANCEL - (time.monotonic() - cancelled_at)
        if left is not None and left <= 0:
            job.add_done_callback(_retrieve)  # it goes on alone; its error is not left unread
            break
        try:
            await asyncio.wait((job,), timeout=left)
        except asyncio.CancelledError:
            cancelled_at = cancelled_at or time.monotonic()
    if cancelled_at is not None:
        error = job.exception() if job.done() and not job.cancelled() else None
        raise asyncio.CancelledError from error
    return job.result()


def _retrieve(job: asyncio.Future[Any]) -> None:
    if not job.cancelled():
        job.exception()
