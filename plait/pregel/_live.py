"""Streaming a sync run's step live: the step runs on a runner thread
(:func:`~plait.pregel._pool.on_runner`) and the events its tasks emit reach the caller as they come.

A step cannot stay live on the caller's own stack: the events its node emits from threads it
starts (parallel tool calls, ``batch``, ``RunnableParallel``) must reach the caller while the node
waits for those threads, as LangGraph's do; a greenlet on the caller's thread could not deliver
them until the node's own next event.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from contextvars import copy_context
from functools import partial
from queue import Empty, SimpleQueue

from plait.pregel._pool import on_runner
from plait.pregel._stream import EventSink

__all__ = ["stream_threaded"]

Event = tuple[object, ...]


def _taken(events: list[Event]) -> list[Event]:
    """The events so far, removed from ``events`` (tasks only append: later ones stay)."""
    count = len(events)
    batch = events[:count]
    del events[:count]
    return batch


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
