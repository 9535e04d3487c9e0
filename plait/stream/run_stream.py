"""The handle of a v3 run: its projections, its main event log, its output.

``graph.stream_events(version="v3")`` returns a :class:`GraphRunStream` (``astream_events``:
an :class:`AsyncGraphRunStream`). The run does not start until something is
consumed: iterating any projection pulls the graph's next stream part when the
projection is empty, so the run advances at the pace of its consumer.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any, NoReturn, cast

from plait.stream._convert import convert_to_protocol_event
from plait.stream._mux import StreamMux
from plait.stream._types import LifecyclePayload, ProtocolEvent, SubgraphStatus
from plait.stream.stream_channel import StreamChannel, stamped

if TYPE_CHECKING:
    from langchain_core.language_models.chat_model_stream import AsyncChatModelStream, ChatModelStream

__all__ = ["AsyncGraphRunStream", "AsyncSubgraphRunStream", "GraphRunStream", "SubgraphRunStream"]


def _missing(run: object, name: str) -> NoReturn:
    mux: StreamMux | None = run.__dict__.get("_mux")
    kind = type(run).__name__
    if mux is None or name.startswith("__"):
        raise AttributeError(f"{kind!r} object has no attribute {name!r}")
    raise AttributeError(
        f"{kind!r} has no projection {name!r}; registered: {sorted(mux.native_keys)} "
        f"(projections of non-native transformers are in run.extensions: {sorted(mux.extensions)})"
    )


class _Run:
    """What sync and async runs share: projections as attributes, output tracking."""

    _mux: StreamMux

    def _setup(self, mux: StreamMux) -> None:
        self._mux = mux
        self._exhausted = False
        self._error: BaseException | None = None
        self._output: dict[str, Any] | None = None
        self._interrupts: list[Any] = []
        for key in mux.native_keys:
            setattr(self, key, mux.extensions[key])

    def __getattr__(self, name: str) -> StreamChannel[Any]:
        _missing(self, name)

    @property
    def extensions(self) -> Mapping[str, Any]:
        """Every projection of the run by name (read-only)."""
        return MappingProxyType(self._mux.extensions)

    def _observe(self, event: ProtocolEvent) -> None:
        """Track the output and the interrupts from the root graph's ``values`` events."""
        params = event["params"]
        if event["method"] == "values" and tuple(params["namespace"]) == self._mux.scope:
            self._output = params["data"]
            interrupts = params.get("interrupts") or ()
            if interrupts:
                self._interrupts = list(interrupts)

    _observe_event = _observe

    def _result(self) -> dict[str, Any] | None:
        if self._error is not None:
            raise self._error
        return self._output


class GraphRunStream(_Run):
    """A v3 run consumed synchronously.

    Attributes:
        values: The root graph's state after the input and each step.
        messages: One ``ChatModelStream`` per chat-model message of the root graph.

    Projections of transformers marked native (``run.updates``, ``run.tool_calls``…) are
    attributes too; every projection is in :attr:`extensions`. Iterating the run yields
    its main log of :class:`~plait.stream.ProtocolEvent`.

    Args:
        graph_iter: The graph's ``stream(version="v2")`` parts.
        mux: The run's transformers.
        wire_pump: Let the mux pull ``graph_iter`` when a projection is empty.
    """

    values: StreamChannel[dict[str, Any]]
    messages: StreamChannel[ChatModelStream]
    lifecycle: StreamChannel[LifecyclePayload]
    subgraphs: StreamChannel[SubgraphRunStream]

    def __init__(self, graph_iter: Iterator[Any] | None, mux: StreamMux, *, wire_pump: bool = True) -> None:
        self._iter = graph_iter
        self._setup(mux)
        if wire_pump:
            mux.bind_pump(self._pump_next)

    def _pump_next(self) -> bool:
        """Feed the graph's next stream part to the mux; ``False`` once the run is over."""
        if self._exhausted or self._iter is None:
            return False
        try:
            part = next(self._iter)
        except StopIteration:
            self._end(None)
            return False
        except BaseException as exc:  # noqa: BLE001 - the run failed: its consumers raise it
            self._end(exc)
            return False
        event = convert_to_protocol_event(part)
        self._observe(event)
        try:
            self._mux.push(event)
        except BaseException as exc:  # noqa: BLE001 - a transformer failed: so does the run
            self._close_graph()
            self._end(exc)
            return False
        return True

    def _end(self, err: BaseException | None) -> None:
        self._exhausted = True
        if err is not None:
            self._error = err
            self._mux.fail(err)
            return
        try:
            self._mux.close()
        except BaseException as exc:
            self._error = exc
            raise

    def _close_graph(self) -> None:
        close = getattr(self._iter, "close", None)
        if close is not None:
            close()

    def _drain(self) -> None:
        while self._pump_next():
            pass

    def abort(self) -> None:
        """Stop the run now: the graph is closed and every projection ends (idempotent)."""
        if self._exhausted and self._mux.finished:
            return
        self._exhausted = True
        self._close_graph()
        if not self._mux.finished:
            self._mux.close()

    def __enter__(self) -> GraphRunStream:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.abort()

    @property
    def output(self) -> dict[str, Any] | None:
        """The root graph's last state (runs the graph to its end; raises what the run raised)."""
        self._drain()
        return self._result()

    @property
    def interrupted(self) -> bool:
        """Whether the run stopped on interrupts (runs the graph to its end)."""
        self._drain()
        self._result()
        return bool(self._interrupts)

    @property
    def interrupts(self) -> list[Any]:
        """The interrupts the run stopped on (runs the graph to its end)."""
        self._drain()
        self._result()
        return list(self._interrupts)

    def __iter__(self) -> Iterator[ProtocolEvent]:
        return iter(self._mux._events)  # pyright: ignore[reportPrivateUsage]

    def interleave(self, *names: str) -> Iterator[tuple[str, Any]]:
        """``(name, item)`` from several projections, in the order the items were pushed.

        Raises:
            KeyError: a name is not a projection of the run.
        """
        channels: list[tuple[str, StreamChannel[Any]]] = []
        for name in names:
            found: Any = self._mux.extensions[name]
            if not isinstance(found, StreamChannel):
                raise TypeError(f"projection {name!r} is not a StreamChannel")
            channel: StreamChannel[Any] = found  # pyright: ignore[reportUnknownVariableType]
            channels.append((name, channel))
        for _, channel in channels:
            channel._subscribe(False)  # pyright: ignore[reportPrivateUsage]
        try:
            while True:
                ready = [(stamped(c)[0][0], name, c) for name, c in channels if stamped(c)]
                if ready:
                    _, name, channel = min(ready, key=lambda r: r[0])
                    yield name, stamped(channel).popleft()[1]
                    continue
                errors = [c._error for _, c in channels if c._error is not None]  # pyright: ignore[reportPrivateUsage]
                if errors:
                    raise errors[0]
                closed = all(c._closed for _, c in channels)  # pyright: ignore[reportPrivateUsage]
                if closed or (not self._pump_next() and not any(stamped(c) for _, c in channels)):
                    if not any(c._error for _, c in channels):  # pyright: ignore[reportPrivateUsage]
                        return
        finally:
            for _, channel in channels:
                channel._release()  # pyright: ignore[reportPrivateUsage]


class AsyncGraphRunStream(_Run):
    """A v3 run consumed with ``async for`` / ``await`` (from ``astream_events(version="v3")``).

    As :class:`GraphRunStream`; ``output()``, ``interrupted()``, ``interrupts()`` and
    ``abort()`` are coroutines, and ``run.messages`` yields ``AsyncChatModelStream`` objects.
    Several tasks may consume projections at once: one graph step is pulled at a time.
    """

    values: StreamChannel[dict[str, Any]]
    messages: StreamChannel[AsyncChatModelStream]
    lifecycle: StreamChannel[LifecyclePayload]
    subgraphs: StreamChannel[AsyncSubgraphRunStream]

    def __init__(
        self, graph_aiter: AsyncIterator[Any] | None, mux: StreamMux, *, wire_pump: bool = True
    ) -> None:
        self._aiter = graph_aiter
        self._inflight: asyncio.Task[bool] | None = None
        self._waiters = 0
        self._aborted = False
        self._setup(mux)
        if wire_pump:
            mux.bind_apump(self._apump_next)

    async def _apump_next(self) -> bool:
        """Feed the graph's next stream part to the mux (shared by concurrent consumers)."""
        if self._exhausted or self._aiter is None:
            return False
        task = self._inflight
        if task is None:
            task = self._inflight = asyncio.ensure_future(self._pull())
        self._waiters += 1
        try:
            await asyncio.wait((task,))
        except asyncio.CancelledError:  # the last consumer gave up: so does the run
            if self._waiters == 1:
                task.cancel()
            raise
        finally:
            self._waiters -= 1
            if self._inflight is task and task.done():
                self._inflight = None
        return False if task.cancelled() else task.result()

    async def _pull(self) -> bool:
        aiter = cast("AsyncIterator[Any]", self._aiter)
        try:
            part = await anext(aiter)
        except StopAsyncIteration:
            self._exhausted = True
            try:
                await self._mux.aclose()
            except BaseException as exc:
                self._error = exc
                raise
            return False
        except asyncio.CancelledError:
            self._shut()
            raise
        except BaseException as exc:  # noqa: BLE001 - the run failed: its consumers raise it
            await self._fail(exc)
            return False
        event = convert_to_protocol_event(part)
        self._observe(event)
        try:
            await self._mux.apush(event)
        except BaseException as exc:  # noqa: BLE001 - a transformer failed: so does the run
            await self._close_graph()
            await self._fail(exc)
            return False
        return True

    async def _fail(self, exc: BaseException) -> None:
        self._exhausted = True
        self._error = exc
        await self._mux.afail(exc)

    def _shut(self) -> None:
        """End every projection now (abort, cancellation): scheduled work is cancelled."""
        self._exhausted = True
        if self._mux.finished:
            return
        for task in self._mux._scheduled():  # pyright: ignore[reportPrivateUsage]
            task.cancel()
        try:
            self._mux.close()
        except Exception:  # noqa: BLE001, S110 - a stopped run reports no finalize error
            pass

    async def _close_graph(self) -> None:
        close = getattr(self._aiter, "aclose", None)
        if close is not None:
            try:
                await close()
            except RuntimeError:  # still running in a cancelled step: it is being closed already
                pass

    async def abort(self) -> None:
        """Stop the run now, even while a step is in flight (idempotent)."""
        if self._aborted:
            return
        self._aborted = True
        self._exhausted = True
        task = self._inflight
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait((task,))
        await self._close_graph()
        self._shut()

    async def __aenter__(self) -> AsyncGraphRunStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.abort()

    async def _adrain(self) -> None:
        while await self._apump_next():
            pass

    async def output(self) -> dict[str, Any] | None:
        """The root graph's last state (runs the graph to its end; raises what the run raised)."""
        await self._adrain()
        return self._result()

    async def interrupted(self) -> bool:
        """Whether the run stopped on interrupts (runs the graph to its end)."""
        await self._adrain()
        self._result()
        return bool(self._interrupts)

    async def interrupts(self) -> list[Any]:
        """The interrupts the run stopped on (runs the graph to its end)."""
        await self._adrain()
        self._result()
        return list(self._interrupts)

    def __aiter__(self) -> AsyncIterator[ProtocolEvent]:
        return self._mux._events.__aiter__()  # pyright: ignore[reportPrivateUsage]


class _SubgraphHandle:
    """What the handles of ``run.subgraphs`` add to a run: where the subgraph is, how it ended.

    A handle pulls nothing of its own: reading it pulls the enclosing run, until the subgraph
    ended (its ``status`` is then ``completed``, ``failed``, ``interrupted`` or ``drained``).

    Attributes:
        path: The subgraph's namespace (``("node:task_id", ...)``).
        graph_name: Its name: the ``lc_agent_name`` of an agent, else the node running it.
        trigger_call_id: The id of the parent task running it.
        status: ``started`` until it ends.
        error: The error text, when it failed.
    """

    _mux: StreamMux
    _output: dict[str, Any] | None

    def _init_handle(
        self, path: tuple[str, ...], graph_name: str | None, trigger_call_id: str | None
    ) -> None:
        self.path = tuple(path)
        self.graph_name = graph_name
        self.trigger_call_id = trigger_call_id
        self.status: SubgraphStatus = "started"
        self.error: str | None = None
        self._seen_terminal = False

    def _over(self) -> bool:
        return self._seen_terminal or self._mux._events._closed  # pyright: ignore[reportPrivateUsage]

    def _result(self) -> dict[str, Any] | None:
        error = self._mux._events._error  # pyright: ignore[reportPrivateUsage]
        if error is not None:
            raise error
        return self._output


class SubgraphRunStream(_SubgraphHandle, GraphRunStream):
    """A subgraph's own view of a sync v3 run (an item of ``run.subgraphs``).

    Its projections (``handle.values``, ``handle.messages``, ``handle.subgraphs``…) and its
    main log (iterating it) hold the subgraph's events only; ``handle.output`` is its last state.

    Args:
        mux: The subgraph's mux (made by the run's ``SubgraphTransformer``).
        path: Its namespace.
        graph_name: Its name.
        trigger_call_id: The id of the parent task running it.
    """

    def __init__(
        self,
        mux: StreamMux,
        *,
        path: tuple[str, ...],
        graph_name: str | None = None,
        trigger_call_id: str | None = None,
    ) -> None:
        self._parent_pump = mux._pump  # pyright: ignore[reportPrivateUsage]
        super().__init__(None, mux, wire_pump=False)
        self._init_handle(path, graph_name, trigger_call_id)

    def _pump_next(self) -> bool:
        if self._exhausted or self._over() or self._parent_pump is None:
            return False
        return self._parent_pump()


class AsyncSubgraphRunStream(_SubgraphHandle, AsyncGraphRunStream):
    """Async :class:`SubgraphRunStream` (an item of ``run.subgraphs`` of ``astream_events``)."""

    def __init__(
        self,
        mux: StreamMux,
        *,
        path: tuple[str, ...],
        graph_name: str | None = None,
        trigger_call_id: str | None = None,
    ) -> None:
        self._parent_apump = mux._apump  # pyright: ignore[reportPrivateUsage]
        super().__init__(None, mux, wire_pump=False)
        self._init_handle(path, graph_name, trigger_call_id)

    async def _apump_next(self) -> bool:
        if self._exhausted or self._over() or self._parent_apump is None:
            return False
        return await self._parent_apump()
