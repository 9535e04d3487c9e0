"""``StreamMux``: hands each protocol event of a v3 run to every transformer, in order.

The mux owns the run's main event log (``_events``, what iterating the run yields)
and the projections the transformers contribute (``extensions``). An event any
transformer rejects (``process`` returned ``False``) stays out of the main log;
every transformer still sees it. When the run ends the mux finalizes the
transformers and closes (or fails) every channel it knows.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import cast

from plait._internal._narrow import is_str_dict
from plait.stream._types import ProtocolEvent, StreamTransformer, needs_async
from plait.stream.stream_channel import StreamChannel

__all__ = ["StreamMux", "TransformerFactory"]

TransformerFactory = Callable[[tuple[str, ...]], StreamTransformer]
"""Makes the transformer of one run for a scope: a transformer class, or ``lambda scope: ...``."""


class StreamMux:
    """Routes the events of one run through its transformers.

    Args:
        transformers: Transformer instances, in order.
        is_async: The run is consumed with ``async for`` (``astream_events``).
        factories: Transformer classes or factories, called with ``scope`` (after ``transformers``);
            a subgraph's mux (:meth:`_make_child`) is made of them anew.
        scope: The namespace of the run's graph (``()``: a root run).
        _assign_seq: Number the events of the main log (a subgraph's mux leaves them as they are).

    Transformers that set ``before_builtins`` come first; the order is otherwise kept.

    Raises:
        TypeError: a transformer's ``init()`` did not return a dict.
        ValueError: two transformers contribute the same projection name.
        RuntimeError: an async-only transformer in a sync run.
    """

    def __init__(
        self,
        transformers: Iterable[StreamTransformer] | None = None,
        *,
        is_async: bool = False,
        factories: Iterable[TransformerFactory] | None = None,
        scope: tuple[str, ...] = (),
        _assign_seq: bool = True,
    ) -> None:
        self.is_async = is_async
        self.scope = tuple(scope)
        self._assign_seq = _assign_seq
        self._factories = list(factories) if factories is not None else None
        self._events: StreamChannel[ProtocolEvent] = StreamChannel()
        self._events._bind_mux(self)  # pyright: ignore[reportPrivateUsage]
        self._transformers: list[StreamTransformer] = []
        self._channels: list[StreamChannel[object]] = []
        self._owners: dict[str, StreamTransformer] = {}
        self._seq = 0
        self._pump: Callable[[], bool] | None = None
        self._apump: Callable[[], Awaitable[bool]] | None = None
        self._finished = False
        self.extensions: dict[str, object] = {}
        self.native_keys: set[str] = set()
        made = [*(transformers or ()), *(factory(self.scope) for factory in self._factories or ())]
        for transformer in sorted(made, key=lambda t: not t.before_builtins):
            self._register(transformer)

    # -- setup ----------------------------------------------------------------------------------

    def _register(self, transformer: StreamTransformer) -> None:
        name = type(transformer).__name__
        if not self.is_async and needs_async(transformer):
            raise RuntimeError(f"{name} requires an async run: use astream_events(version='v3')")
        made = cast(object, transformer.init())  # a subclass may return anything
        if not is_str_dict(made):
            raise TypeError(f"{name}.init() must return a dict of projections, got {type(made).__name__}")
        for key, value in made.items():
            if key in self._owners:
                raise ValueError(
                    f"Projection key conflict: {key!r} is already provided by "
                    f"{type(self._owners[key]).__name__}; {name} cannot provide it too"
                )
            self._owners[key] = transformer
            self.extensions[key] = value
            if transformer._native:  # pyright: ignore[reportPrivateUsage]
                self.native_keys.add(key)
            if isinstance(value, StreamChannel):
                channel: StreamChannel[object] = value  # pyright: ignore[reportUnknownVariableType]
                self.adopt(channel)
                if channel.name is not None:  # a native transformer's channel is a protocol method
                    method = channel.name if transformer._native else f"custom:{channel.name}"  # pyright: ignore[reportPrivateUsage]
                    channel._wire(self._forwarder(method))  # pyright: ignore[reportPrivateUsage]
        self._transformers.append(transformer)
        transformer._on_register(self)  # pyright: ignore[reportPrivateUsage]

    def adopt(self, channel: StreamChannel[object]) -> None:
        """Make ``channel`` part of this run: iterated in its mode, pulling the run when empty, and
        closed (or failed) when the run ends."""
        channel._bind_mux(self)  # pyright: ignore[reportPrivateUsage]
        self._channels.append(channel)

    def _forwarder(self, method: str) -> Callable[[object], None]:
        def forward(item: object) -> None:
            self._append(
                {
                    "type": "event",
                    "method": method,
                    "params": {
                        "namespace": [],
                        "timestamp": int(time.time() * 1000),
                        "data": item,
                    },
                }
            )

        return forward

    def _make_child(self, scope: tuple[str, ...]) -> StreamMux:
        """A mux for the subgraph at ``scope``: the same factories made anew for that scope, pulling
        this run (its pump) when its projections are empty; its events are not numbered.

        Raises:
            RuntimeError: this mux was made of transformer instances only (no factories to scope anew).
        """
        if self._factories is None:
            raise RuntimeError(
                "StreamMux._make_child needs a mux made with factories= (instances cannot be re-scoped)"
            )
        child = StreamMux(factories=self._factories, is_async=self.is_async, scope=scope, _assign_seq=False)
        if self._pump is not None:
            child.bind_pump(self._pump)
        if self._apump is not None:
            child.bind_apump(self._apump)
        return child

    def transformer_by_key(self, key: str) -> StreamTransformer | None:
        """The transformer that contributes projection ``key``, if any."""
        return self._owners.get(key)

    # -- pulling --------------------------------------------------------------------------------

    def bind_pump(self, fn: Callable[[], bool]) -> None:
        """Use ``fn`` to pull the run's next event (it returns ``False`` once the run is over);
        transformers with a ``_bind_pump(fn)`` method get it too."""
        self._pump = fn
        for transformer in self._transformers:
            hook = getattr(transformer, "_bind_pump", None)
            if callable(hook):
                hook(fn)

    def bind_apump(self, fn: Callable[[], Awaitable[bool]]) -> None:
        """Async :meth:`bind_pump` (``_bind_apump(fn)`` for transformers)."""
        self._apump = fn
        for transformer in self._transformers:
            hook = getattr(transformer, "_bind_apump", None)
            if callable(hook):
                hook(fn)

    def request_more(self) -> bool:
        """Pull one more event of the run; ``False`` when there is none (the run is over)."""
        return self._pump() if self._pump is not None else False

    async def arequest_more(self) -> bool:
        """Async :meth:`request_more`."""
        return await self._apump() if self._apump is not None else False

    # -- events ---------------------------------------------------------------------------------

    def _append(self, event: ProtocolEvent) -> None:
        """Number ``event`` (in place: a subgraph's handle shares it) and add it to the main log."""
        if self._assign_seq:
            self._seq += 1
            event["seq"] = self._seq
        if not self._events._closed:  # pyright: ignore[reportPrivateUsage]
            self._events.push(event)

    # >>> async source
    async def apush(self, event: ProtocolEvent) -> None:
        """Give ``event`` to every transformer (each one's ``process`` done before the next one runs);
        keep it in the main log unless one rejects it."""
        keep = True
        for transformer in self._transformers:
            if await transformer.aprocess(event) is False:
                keep = False
        if keep:
            self._append(event)

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def push(self, event: ProtocolEvent) -> None:
        """Give ``event`` to every transformer (each one's ``process`` done before the next one runs);
        keep it in the main log unless one rejects it."""
        keep = True
        for transformer in self._transformers:
            if transformer.process(event) is False:
                keep = False
        if keep:
            self._append(event)

    # <<< generated sync

    # -- the end --------------------------------------------------------------------------------

    @property
    def finished(self) -> bool:
        """The run ended (closed or failed)."""
        return self._finished

    def _close_channels(self, err: BaseException | None) -> None:
        channels: list[StreamChannel[object] | StreamChannel[ProtocolEvent]] = [*self._channels, self._events]
        for channel in channels:
            if err is None:
                channel.close()
            else:
                channel.fail(err)

    def _scheduled(self) -> list[asyncio.Task[object]]:
        return [task for t in self._transformers for task in t._scheduled_tasks()]  # pyright: ignore[reportPrivateUsage]

    # >>> async source
    async def aclose(self) -> None:
        """The run ended: finalize every transformer, then close every channel. The async form waits
        for the transformers' scheduled work first, and fails the run if that work or a finalize failed.

        Raises:
            Exception: the first error a transformer's ``finalize`` raised (after all ran), or (async)
                a scheduled task's error (``on_error="raise"``).
        """
        first: BaseException | None = None
        # >>> async only
        while pending := [t for t in self._scheduled() if not t.done()]:
            await asyncio.wait(pending)
        for task in self._scheduled():
            if not task.cancelled() and task.exception() is not None:
                first = first or task.exception()
        # <<< async only
        self._finished = True
        for transformer in self._transformers:
            try:
                await transformer.afinalize()
            except Exception as exc:  # noqa: BLE001 - the others finalize first
                first = first or exc
        # >>> async only
        if first is not None:
            self.fail(first)
            raise first
        # <<< async only
        self._close_channels(None)
        if first is not None:
            raise first

    async def afail(self, err: BaseException) -> None:
        """The run failed: tell every transformer, then fail every channel with ``err``. The async form
        cancels the transformers' pending scheduled work first."""
        # >>> async only
        pending = [t for t in self._scheduled() if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)
        # <<< async only
        self._finished = True
        for transformer in self._transformers:
            try:
                await transformer.afail(err)
            except Exception:  # noqa: BLE001, S110 - the run's own error is the one to report
                pass
        self._close_channels(err)

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def close(self) -> None:
        """The run ended: finalize every transformer, then close every channel. The async form waits
        for the transformers' scheduled work first, and fails the run if that work or a finalize failed.

        Raises:
            Exception: the first error a transformer's ``finalize`` raised (after all ran), or (async)
                a scheduled task's error (``on_error="raise"``).
        """
        first: BaseException | None = None
        self._finished = True
        for transformer in self._transformers:
            try:
                transformer.finalize()
            except Exception as exc:  # noqa: BLE001 - the others finalize first
                first = first or exc
        self._close_channels(None)
        if first is not None:
            raise first

    def fail(self, err: BaseException) -> None:
        """The run failed: tell every transformer, then fail every channel with ``err``. The async form
        cancels the transformers' pending scheduled work first."""
        self._finished = True
        for transformer in self._transformers:
            try:
                transformer.fail(err)
            except Exception:  # noqa: BLE001, S110 - the run's own error is the one to report
                pass
        self._close_channels(err)

    # <<< generated sync
