"""The compiled graph object: run it, stream it, read and rewrite its threads."""

from __future__ import annotations

import asyncio
import copy
import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import aclosing, closing
from typing import TYPE_CHECKING, Any, Generic, cast

from typing_extensions import Self

from plait.checkpoint.base import get_checkpoint_id
from plait.errors import GraphBuildError
from plait.pregel._arun import afinish, run_async
from plait.pregel._callable import arun_nested, run_nested
from plait.pregel._context import running_task
from plait.pregel._history import empty_snapshot, prepare_update, snapshot
from plait.pregel._loop import Loop, RunOptions
from plait.pregel._plan import Plan
from plait.pregel._run import finish_sync, run_sync
from plait.pregel._thread import ThreadRef, configurable_of, found, run_config
from plait.types import Command, StateSnapshot
from plait.typing import ContextT, InputT, OutputT, StateT

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

__all__ = ["Pregel"]

_MODES = frozenset({"values", "updates", "custom", "messages", "debug", "checkpoints", "tasks"})


def _modes(stream_mode: Any, default: str) -> tuple[frozenset[str], bool]:
    if stream_mode is None:
        stream_mode = default
    single = isinstance(stream_mode, str)
    modes = frozenset([stream_mode] if single else stream_mode)
    unknown = modes - _MODES
    if unknown:
        raise ValueError(f"Unknown stream_mode {sorted(unknown)}; choose from {sorted(_MODES)}")
    return modes, single


def _as_set(nodes: Any) -> frozenset[str] | None:
    if nodes is None:
        return None
    return frozenset(["*"] if nodes == "*" else nodes)


class Pregel(Generic[StateT, ContextT, InputT, OutputT]):
    """A runnable graph: the plan plus its checkpointer and store.

    Args:
        plan: The compiled plan.
        checkpointer: Saver for durable threads, or ``None``.
        store: Long-term store handed to nodes, or ``None``.
        name: Name of the graph (used when it runs as a subgraph).
        debug: Accepted for compatibility.
        stream_mode: What ``stream`` yields when no mode is given.
    """

    def __init__(
        self,
        plan: Plan,
        *,
        checkpointer: Any = None,
        store: Any = None,
        name: str = "LangGraph",
        debug: bool = False,
        stream_mode: str = "values",
    ) -> None:
        self.plan = plan
        self.checkpointer = checkpointer if checkpointer not in (True, False) else None
        # As a subgraph: None inherits the parent's saver per call, True keeps one thread
        # across calls, False never saves.
        self.subgraph_saving = (
            "inherit"
            if checkpointer is None
            else "persist"
            if checkpointer is True
            else "off"
            if checkpointer is False
            else "own"
        )
        self.store = store
        self.name = name
        self.debug = debug
        self.stream_mode = stream_mode

    # -- running ------------------------------------------------------------

    def _loop(self, config: Mapping[str, Any] | None, modes: frozenset[str], kwargs: dict[str, Any]) -> Loop:
        strategy = kwargs.get("multitask_strategy") or "enqueue"
        if strategy not in ("enqueue", "reject"):
            raise ValueError(f"multitask_strategy must be 'enqueue' or 'reject', got {strategy!r}")
        options = RunOptions(
            interrupt_before=_as_set(kwargs.get("interrupt_before")),
            interrupt_after=_as_set(kwargs.get("interrupt_after")),
            multitask=strategy,
            lease_timeout=_seconds(kwargs.get("lease_timeout")),
        )
        return Loop(self.plan, self.checkpointer, run_config(config), modes, options)

    def stream(
        self,
        input: InputT | Command[Any] | None,
        config: RunnableConfig | None = None,
        *,  # noqa: A002
        stream_mode: Any = None,
        context: ContextT | None = None,
        **kwargs: Any,
    ) -> Iterator[Any]:
        """Run the graph, yielding progress as it happens.

        Args:
            input: The input state (dict or state object), a ``Command``, or ``None`` to resume.
            config: Run config: ``configurable.thread_id``, ``recursion_limit``, ``metadata``…
            stream_mode: One mode (events are payloads) or a list (events are ``(mode, payload)``).
            context: Run-scoped context object, available as ``runtime.context``.
            **kwargs: ``interrupt_before``, ``interrupt_after``, ``multitask_strategy``
                (``"enqueue"``: wait for a busy thread, ``"reject"``: raise ThreadBusyError),
                ``lease_timeout`` (seconds to wait for a busy thread, then ThreadBusyError),
                ``durability`` and ``subgraphs`` (accepted for compatibility).
        """
        modes, single = _modes(stream_mode, self.stream_mode)
        loop = self._loop(config, modes, kwargs)
        with closing(run_sync(loop, input, self.store, context)) as events:
            for event in events:
                yield from _shape(event, modes, single)

    def invoke(
        self,
        input: InputT | Command[Any] | None,
        config: RunnableConfig | None = None,
        *,  # noqa: A002
        stream_mode: str = "values",
        context: ContextT | None = None,
        **kwargs: Any,
    ) -> Any:
        """Run the graph to completion (or to an interrupt) and return the output state."""
        if (task := _nesting(self, config)) is not None:
            return run_nested(self, input, task, stream_mode=stream_mode, **kwargs)
        return self.invoke_here(input, config, stream_mode=stream_mode, context=context, **kwargs)

    def invoke_here(
        self,
        input: InputT | Command[Any] | None,
        config: RunnableConfig | None = None,
        *,  # noqa: A002
        stream_mode: str = "values",
        context: ContextT | None = None,
        **kwargs: Any,
    ) -> Any:
        """:meth:`invoke` as a graph of its own, even when called inside a running node."""
        if stream_mode != "values":
            return list(self.stream(input, config, stream_mode=stream_mode, context=context, **kwargs))
        loop = self._loop(config, frozenset(), kwargs)
        gen = run_sync(loop, input, self.store, context)
        for _ in gen:
            pass
        return loop.final()

    async def astream(
        self,
        input: InputT | Command[Any] | None,
        config: RunnableConfig | None = None,
        *,  # noqa: A002
        stream_mode: Any = None,
        context: ContextT | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        """Async :meth:`stream`."""
        modes, single = _modes(stream_mode, self.stream_mode)
        loop = self._loop(config, modes, kwargs)
        # closing this generator closes the run at once (releasing its thread), not when collected
        async with aclosing(run_async(loop, input, self.store, context)) as events:
            async for event in events:
                for item in _shape(event, modes, single):
                    yield item

    async def ainvoke(
        self,
        input: InputT | Command[Any] | None,
        config: RunnableConfig | None = None,
        *,  # noqa: A002
        stream_mode: str = "values",
        context: ContextT | None = None,
        **kwargs: Any,
    ) -> Any:
        """Async :meth:`invoke`."""
        if (task := _nesting(self, config)) is not None:
            return await arun_nested(self, input, task, stream_mode=stream_mode, **kwargs)
        return await self.ainvoke_here(input, config, stream_mode=stream_mode, context=context, **kwargs)

    async def ainvoke_here(
        self,
        input: InputT | Command[Any] | None,
        config: RunnableConfig | None = None,
        *,  # noqa: A002
        stream_mode: str = "values",
        context: ContextT | None = None,
        **kwargs: Any,
    ) -> Any:
        """Async :meth:`invoke_here`."""
        if stream_mode != "values":
            return [
                c
                async for c in self.astream(input, config, stream_mode=stream_mode, context=context, **kwargs)
            ]
        loop = self._loop(config, frozenset(), kwargs)
        async with aclosing(run_async(loop, input, self.store, context)) as events:
            async for _ in events:
                pass
        return loop.final()

    def batch(
        self,
        inputs: Sequence[Any],
        config: RunnableConfig | Sequence[RunnableConfig] | None = None,
        **kwargs: Any,
    ) -> list[Any]:
        """Invoke once per input (one config for all, or one per input), in parallel threads."""
        configs = _configs(config, len(inputs))
        if len(inputs) <= 1:
            return [self.invoke(i, c, **kwargs) for i, c in zip(inputs, configs, strict=True)]

        def invoke_one(ic: tuple[Any, RunnableConfig | None]) -> Any:
            return self.invoke(ic[0], ic[1], **kwargs)

        with ThreadPoolExecutor(max_workers=min(16, len(inputs))) as pool:
            return list(pool.map(invoke_one, zip(inputs, configs, strict=True)))

    async def abatch(
        self,
        inputs: Sequence[Any],
        config: RunnableConfig | Sequence[RunnableConfig] | None = None,
        **kwargs: Any,
    ) -> list[Any]:
        """Async :meth:`batch`."""
        configs = _configs(config, len(inputs))
        return list(
            await asyncio.gather(
                *(self.ainvoke(i, c, **kwargs) for i, c in zip(inputs, configs, strict=True))
            )
        )

    # -- threads ------------------------------------------------------------

    def _saver(self) -> Any:
        if self.checkpointer is None:
            raise ValueError("No checkpointer set: compile(checkpointer=...) to use threads and get_state")
        return self.checkpointer

    def get_state(self, config: RunnableConfig, *, subgraphs: bool = False) -> StateSnapshot:
        """The thread's newest checkpoint (or the one ``checkpoint_id`` names) as a snapshot."""
        ref = ThreadRef.from_config(config)
        saved = self._saver().get_tuple(ref.config())
        return empty_snapshot(config) if saved is None else snapshot(self.plan, saved)

    async def aget_state(self, config: RunnableConfig, *, subgraphs: bool = False) -> StateSnapshot:
        """Async :meth:`get_state`."""
        ref = ThreadRef.from_config(config)
        saved = await self._saver().aget_tuple(ref.config())
        return empty_snapshot(config) if saved is None else snapshot(self.plan, saved)

    def get_state_history(
        self,
        config: RunnableConfig,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002
        before: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> Iterator[StateSnapshot]:
        """The thread's checkpoints as snapshots, newest first, read lazily."""
        ref = ThreadRef.from_config(config)
        get_checkpoint_id(before)  # raises InvalidConfigError for a malformed ``before``
        for saved in self._saver().list(ref.config(), filter=filter, before=before, limit=limit):
            yield snapshot(self.plan, saved)

    async def aget_state_history(
        self,
        config: RunnableConfig,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002
        before: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[StateSnapshot]:
        """Async :meth:`get_state_history`."""
        ref = ThreadRef.from_config(config)
        get_checkpoint_id(before)  # raises InvalidConfigError for a malformed ``before``
        async for saved in self._saver().alist(ref.config(), filter=filter, before=before, limit=limit):
            yield snapshot(self.plan, saved)

    def update_state(self, config: RunnableConfig, values: Any, as_node: str | None = None) -> dict[str, Any]:
        """Write ``values`` to the thread through the reducers, as if ``as_node`` had returned them.

        Returns:
            The config of the new checkpoint.
        """
        ref = ThreadRef.from_config(config)
        saver = self._saver()
        saved = found(saver.get_tuple(ref.config()), ref)
        parent, checkpoint, metadata, versions = finish_sync(
            prepare_update(self.plan, ref, saved, values, as_node)
        )
        written: dict[str, Any] = saver.put(
            parent, checkpoint, metadata, versions, **_head_check(saver, ref, saved)
        )
        return written

    async def aupdate_state(
        self, config: dict[str, Any], values: Any, as_node: str | None = None
    ) -> dict[str, Any]:
        """Async :meth:`update_state`."""
        ref = ThreadRef.from_config(config)
        saver = self._saver()
        saved = found(await saver.aget_tuple(ref.config()), ref)
        parent, checkpoint, metadata, versions = await afinish(
            prepare_update(self.plan, ref, saved, values, as_node)
        )
        written: dict[str, Any] = await saver.aput(
            parent, checkpoint, metadata, versions, **_head_check(saver, ref, saved)
        )
        return written

    def with_saver(self, saver: Any) -> Self:
        """A copy of this graph that saves its threads in ``saver`` (used to run subgraphs)."""
        clone = copy.copy(self)
        clone.checkpointer = saver
        return clone

    def validate(self) -> Self:
        """Kept for LangGraph compatibility; plans are validated by ``compile()``."""
        if not self.plan.nodes:
            raise GraphBuildError("Graph has no nodes")
        return self


def _configs(
    config: RunnableConfig | Sequence[RunnableConfig] | None, count: int
) -> list[RunnableConfig | None]:
    """One config per input: the list given, or the one config repeated."""
    if isinstance(config, (list, tuple)):
        return list(cast("Sequence[RunnableConfig]", config))
    return [cast("RunnableConfig | None", config)] * count  # a config (or None): sequences were taken above


def _seconds(value: Any) -> float | None:
    """A ``lease_timeout``: ``None`` or a non-negative number of seconds."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"lease_timeout must be None or a number of seconds >= 0, got {value!r}")
    return None if value >= threading.TIMEOUT_MAX else float(value)  # longer than a lock can wait: no limit


def _nesting(graph: Pregel[Any, Any, Any, Any], config: Mapping[str, Any] | None) -> Any:
    """The running task a graph is invoked from (as a subgraph inside a node), if any.

    Raises:
        InvalidConfigError: ``config`` is malformed (checked first, so that nothing runs).
    """
    thread_id = configurable_of(run_config(config)).get("thread_id")
    if graph.subgraph_saving != "inherit":
        return None
    task = running_task()
    if task is None or task.saver is None or thread_id:
        return None
    return task


def _head_check(saver: Any, ref: ThreadRef, saved: Any) -> dict[str, Any]:
    """``expected_head`` for an update written on the thread head (none for explicit forks)."""
    if not saver.supports_head_check or ref.checkpoint_id is not None:
        return {}
    return {"expected_head": None if saved is None else saved.checkpoint["id"]}


def _shape(event: tuple[str, Any], modes: frozenset[str], single: bool) -> list[Any]:
    """Turn an internal event into what ``stream`` yields for the requested modes."""
    mode, payload = event
    if mode not in modes:
        return []
    return [payload if single else event]
