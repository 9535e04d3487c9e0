"""``StreamChannel``: a single-consumer, drain-on-consume log of one projection of a v3 run.

Nothing runs in the background: when a subscriber finds the channel empty it asks
the run for more (the mux pulls the graph's next stream part), so the graph makes
progress only as fast as it is consumed. Items pushed before anyone subscribed
are dropped, and consumed items are not kept, so an unread projection costs nothing.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Generic, Protocol, TypeVar

__all__ = ["StreamChannel"]

T = TypeVar("T")

_STAMPS = itertools.count(1)
"""Push stamps: one increasing order over every channel, so several channels can be merged in push order."""


class _Source(Protocol):
    """What a channel needs of the run feeding it (a ``StreamMux``): its mode, and more items on demand."""

    @property
    def is_async(self) -> bool: ...

    def request_more(self) -> bool: ...

    async def arequest_more(self) -> bool: ...


class StreamChannel(Generic[T]):
    """A projection of a run that one consumer iterates (``for``/``async for``).

    A run binds it to sync or async iteration. A *named* channel, returned by a
    transformer's ``init()``, also copies each item into the run's main event log as
    a ``custom:<name>`` event.

    Args:
        name: Forward items to the main log under ``custom:<name>`` (``None``: don't).
        maxlen: Keep at most this many unread items (the oldest are dropped).

    Raises:
        ValueError: ``maxlen`` is not a positive int or None.
    """

    def __init__(self, name: str | None = None, *, maxlen: int | None = None) -> None:
        if maxlen is not None and (isinstance(maxlen, bool) or not isinstance(maxlen, int) or maxlen < 1):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers pass anything
            raise ValueError(f"maxlen must be a positive int or None, got {maxlen!r}")
        self.name = name
        self._items: deque[tuple[int, T]] = deque(maxlen=maxlen)
        self._maxlen = maxlen
        self._closed = False
        self._error: BaseException | None = None
        self._is_async: bool | None = None
        self._subscribed = False
        self._wire_fn: Callable[[T], None] | None = None
        self._mux: _Source | None = None

    # -- binding (done by the run) -------------------------------------------------------------

    def _bind(self, *, is_async: bool) -> None:
        """Fix how the channel is iterated: ``for`` (sync run) or ``async for`` (async run)."""
        if self._is_async is not None:
            raise RuntimeError("StreamChannel is already bound to a run")
        self._is_async = is_async

    def _bind_mux(self, mux: _Source) -> None:
        """Belong to ``mux``'s run: bound to its mode, asking it for more when empty."""
        if self._is_async is None:
            self._bind(is_async=mux.is_async)
        elif self._is_async != mux.is_async:
            raise RuntimeError("StreamChannel is already bound to a run of the other mode (sync/async)")
        self._mux = mux

    def _wire(self, fn: Callable[[T], None]) -> None:
        """Call ``fn(item)`` for every item pushed (the run forwards named channels to its main log)."""
        self._wire_fn = fn

    # -- producing ------------------------------------------------------------------------------

    def push(self, item: T) -> None:
        """Add an item (kept only while someone is subscribed).

        Raises:
            RuntimeError: the channel was closed or failed.
        """
        if self._closed:
            raise RuntimeError("Cannot push to a closed StreamChannel")
        if self._wire_fn is not None:
            self._wire_fn(item)
        if self._subscribed:
            self._items.append((next(_STAMPS), item))

    def close(self) -> None:
        """No more items: the consumer stops after the buffered ones (closing twice is harmless)."""
        self._closed = True

    def fail(self, err: BaseException) -> None:
        """No more items: the consumer raises ``err`` after the buffered ones."""
        if not self._closed:
            self._error = err
            self._closed = True

    # -- consuming ------------------------------------------------------------------------------

    def _subscribe(self, is_async: bool) -> None:
        if self._is_async is None:
            raise TypeError("StreamChannel has not been bound to a run; iterate the projections of a run")
        if self._is_async != is_async:
            mode = "async" if self._is_async else "sync"
            how = "async for" if self._is_async else "for"
            raise TypeError(f"StreamChannel is bound to {mode} mode; use `{how}`")
        if self._subscribed:
            raise RuntimeError("StreamChannel already has a subscriber; use .tee(n) for fan-out")
        self._subscribed = True

    def _release(self) -> None:
        """Stop receiving items (what was buffered is dropped)."""
        self._subscribed = False
        self._items.clear()

    def _more(self) -> bool:
        return self._mux.request_more() if self._mux is not None else False

    async def _amore(self) -> bool:
        return await self._mux.arequest_more() if self._mux is not None else False

    def __iter__(self) -> Iterator[T]:
        self._subscribe(False)
        return self._cursor()

    def __aiter__(self) -> AsyncIterator[T]:
        self._subscribe(True)
        return self._acursor()

    # >>> async source
    async def _acursor(self) -> AsyncIterator[T]:
        while True:
            if self._items:
                yield self._items.popleft()[1]
            elif self._error is not None:
                raise self._error
            elif self._closed:
                return
            elif not await self._amore() and not self._items and not self._closed:
                return  # the run has nothing more to give

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def _cursor(self) -> Iterator[T]:
        while True:
            if self._items:
                yield self._items.popleft()[1]
            elif self._error is not None:
                raise self._error
            elif self._closed:
                return
            elif not self._more() and not self._items and not self._closed:
                return  # the run has nothing more to give

    # <<< generated sync

    def tee(self, n: int = 2) -> tuple[Iterator[T], ...]:
        """``n`` independent iterators over this channel (it has one subscriber: the tee)."""
        source = iter(self)
        buffers: list[deque[T]] = [deque() for _ in range(n)]
        failure: list[BaseException] = []

        def branch(buffer: deque[T]) -> Iterator[T]:
            while True:
                if buffer:
                    yield buffer.popleft()
                    continue
                if failure:
                    raise failure[0]
                try:
                    item = next(source)
                except StopIteration:
                    return
                except BaseException as exc:
                    failure.append(exc)
                    raise
                for each in buffers:
                    each.append(item)

        return tuple(branch(b) for b in buffers)

    def atee(self, n: int = 2) -> tuple[AsyncIterator[T], ...]:
        """Async :meth:`tee`."""
        source = self.__aiter__()
        buffers: list[deque[T]] = [deque() for _ in range(n)]
        failure: list[BaseException] = []
        done: list[bool] = []
        lock = asyncio.Lock()

        async def branch(buffer: deque[T]) -> AsyncIterator[T]:
            while True:
                if buffer:
                    yield buffer.popleft()
                    continue
                async with lock:
                    if buffer:
                        continue
                    if failure:
                        raise failure[0]
                    if done:
                        return
                    try:
                        item = await anext(source)
                    except StopAsyncIteration:
                        done.append(True)
                        return
                    except BaseException as exc:
                        failure.append(exc)
                        raise
                    for each in buffers:
                        each.append(item)

        return tuple(branch(b) for b in buffers)

    def __repr__(self) -> str:
        state = "failed" if self._error is not None else "closed" if self._closed else "open"
        return f"StreamChannel(name={self.name!r}, {state}, buffered={len(self._items)})"


def stamped(channel: StreamChannel[object]) -> deque[tuple[int, object]]:
    """The unread ``(stamp, item)`` pairs of ``channel`` (for merging channels in push order)."""
    return channel._items  # pyright: ignore[reportPrivateUsage]
