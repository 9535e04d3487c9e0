"""Streaming a sync run's step live: the events its tasks emit reach the caller as they come.

Two ways to run the step while the caller's generator hands out its events:

* :func:`stream_switching` - in a greenlet on the caller's thread: each event switches back to
  the caller and the task goes on when the caller asks for the next event (as an ``astream``
  caller and its tasks take turns on one event loop). No thread hand-over per step or event.
* :func:`stream_threaded` - on a runner thread (:func:`~plait.pregel._pool.on_runner`), the events
  handed over through a queue: for steps of several tasks, async nodes, and streams read from
  threads other than the main one (a greenlet cannot be resumed from another thread).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Generator
from contextvars import copy_context
from functools import partial
from queue import Empty, SimpleQueue

from greenlet import getcurrent, greenlet

from plait.pregel._pool import on_runner
from plait.pregel._stream import EventSink

__all__ = ["stream_switching", "stream_threaded"]

Event = tuple[object, ...]


def _taken(events: list[Event]) -> list[Event]:
    """The events so far, removed from ``events`` (tasks only append: later ones stay)."""
    count = len(events)
    batch = events[:count]
    del events[:count]
    return batch


def stream_switching(run: Callable[[], None], sink: EventSink) -> Generator[Event, None, None]:
    """Run ``run()`` in a greenlet here; each event ``sink`` gets from it is streamed at once.

    Events emitted elsewhere (threads the task started, an event loop it runs) cannot switch:
    they are streamed at the task's next switch or when it ends. Closing the stream mid-step lets
    the task finish first, as on a thread; Ctrl-C at the caller stops the task where it waits.
    """
    events = sink.events
    failed: list[BaseException] = []

    def work() -> None:
        try:
            run()
        except BaseException as exc:  # noqa: BLE001 - re-raised by the caller's generator
            failed.append(exc)

    step = greenlet(work)
    step.gr_context = copy_context()  # the caller's context variables, as a thread would get them

    def notify() -> None:
        if getcurrent() is step and asyncio._get_running_loop() is None:  # noqa: SLF001
            step.parent.switch()  # type: ignore[union-attr]  # the greenlet that resumed it

    sink.notify = notify
    home = threading.get_ident()
    try:
        while not step.dead:
            if threading.get_ident() != home:
                raise RuntimeError(
                    "A graph's stream was read on another thread in the middle of a step it started "
                    "streaming on the main thread; read a sync stream on one thread, or use astream()"
                )
            step.parent = getcurrent()  # whoever resumes the stream gets the next event
            step.switch()
            if events:
                yield from _taken(events)
    except KeyboardInterrupt:
        sink.notify = None
        step.throw()  # GreenletExit where the task waits: it unwinds now
        raise
    finally:
        sink.notify = None
        while not step.dead and threading.get_ident() == home:  # closed mid-step: the task ends first
            step.parent = getcurrent()
            step.switch()
    yield from _taken(events)
    if failed:
        raise failed[0]


def stream_threaded(run: Callable[[], None], sink: EventSink) -> Generator[Event, None, None]:
    """Run ``run()`` on a runner thread and stream the events ``sink`` gets as they come.

    Closing the stream mid-step waits for the step's tasks to end (threads cannot be cancelled);
    Ctrl-C (``KeyboardInterrupt``) returns at once and leaves them to finish on their own.
    """
    events = sink.events
    bell: SimpleQueue[bool] = SimpleQueue()  # False: an event came; True: the step ended
    failed: list[BaseException] = []

    def work() -> None:
        try:
            run()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            failed.append(exc)

    sink.notify = partial(bell.put, False)
    on_runner(partial(copy_context().run, work), partial(bell.put, True))
    ended = False
    try:
        while not ended:
            try:
                ended = bell.get(timeout=0.5)
            except Empty:
                continue
            if events:
                yield from _taken(events)
        yield from _taken(events)
    except KeyboardInterrupt:  # the caller stops now; the step's thread ends on its own
        sink.notify = None
        raise
    finally:
        if sink.notify is not None:  # finished, failed, or the consumer closed the stream
            while not ended:
                ended = bell.get()
            sink.notify = None
    if failed:
        raise failed[0]
