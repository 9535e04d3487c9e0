"""The compiled graph object: run it, stream it, read and rewrite its threads."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import aclosing, closing
from typing import TYPE_CHECKING, Any, Generic

from typing_extensions import Self

from plait._context import TASK_CONTEXT
from plait.checkpoint.base import INTERRUPT, BaseCheckpointSaver
from plait.errors import GraphBuildError
from plait.pregel._arun import run_async
from plait.pregel._batch import abatch, batch
from plait.pregel._callable import arun_nested, nesting_task, run_nested
from plait.pregel._channel_graph import channel_plan, output_value
from plait.pregel._control import run_extras, run_inputs
from plait.pregel._fast import SLOW, Handed, run_fast
from plait.pregel._loop import Loop
from plait.pregel._message_events import plain_messages
from plait.pregel._options import modes_of, run_options, shape, version_of
from plait.pregel._plan import Plan
from plait.pregel._run import run_sync
from plait.pregel._settings import run_settings
from plait.pregel._stream import EventSink
from plait.pregel._thread import ThreadRef, run_config
from plait.pregel._threads_api import ThreadAccess
from plait.pregel._travel import TRAVEL, Travel, top_level
from plait.types import Command, GraphOutput
from plait.typing import ContextT, InputT, OutputT, StateT

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

__all__ = ["Pregel"]


class Pregel(ThreadAccess, Generic[StateT, ContextT, InputT, OutputT]):
    """A runnable graph: the plan plus its checkpointer and store.

    Args:
        plan: The compiled plan (``None``: LangGraph's low-level ``nodes=``, ``channels=``… in ``graph``).
        checkpointer: Saver for durable threads, or ``None``.
        store: Long-term store handed to nodes, or ``None``.
        name: Name of the graph (used when it runs as a subgraph).
        debug: Accepted for compatibility.
        stream_mode: What ``stream`` yields when no mode is given.
    """

    step_timeout: float | None = None
    """Seconds a step may take (set on the compiled graph, as in LangGraph); the run then raises
    ``TimeoutError`` after saving what the step's finished tasks wrote. An async run
    (``ainvoke``/``astream``) cancels the tasks still running at once; a sync run's threads cannot be
    stopped, so it raises when the step has ended."""

    def __init__(
        self,
        plan: Plan | None = None,
        *,
        checkpointer: Any = None,
        store: object = None,
        name: str = "LangGraph",
        debug: bool = False,
        stream_mode: str = "values",
        **graph: Any,
    ) -> None:
        plan = channel_plan(given=plan, **graph) if plan is None or graph else plan  # a channel graph
        if checkpointer not in (None, True, False) and not isinstance(checkpointer, BaseCheckpointSaver):
            raise TypeError(
                "Invalid checkpointer provided: expected a BaseCheckpointSaver (InMemorySaver, SqliteSaver, "
                f"PostgresSaver, ...), True, False or None, got {type(checkpointer).__name__}. A saver of your "
                "own must subclass plait.checkpoint.base.BaseCheckpointSaver."
            )
        self.plan = plan
        self.checkpointer = checkpointer if checkpointer not in (True, False) else None
        # As a subgraph: True keeps one thread across calls, False never saves; else (None or a
        # saver of its own) it saves per call with its parent's saver (as LangGraph's do).
        self.subgraph_saving = (
            "persist" if checkpointer is True else "off" if checkpointer is False else "inherit"
        )
        self.store = store
        self.name = name
        self.debug = debug
        self.stream_mode = stream_mode

    # -- running ------------------------------------------------------------

    def _loop(
        self, config: Mapping[str, object] | None, modes: frozenset[str], kwargs: dict[str, Any]
    ) -> Loop:
        # a subgraph run's travel is its parent task's
        travel: Travel | None = kwargs.pop(TRAVEL, None) if kwargs else None
        checked = run_config(config)
        options = run_options(kwargs, *run_extras(checked, kwargs.get("control")))
        if travel is None and self.checkpointer is not None:
            addressed, travel = top_level(checked)
            if addressed is not checked:  # re-addressed: a malformed thread is refused first
                ThreadRef.from_config(checked)
            checked = addressed
        return Loop(
            run_settings(self.plan, self.checkpointer, checked, modes, options, travel, self.step_timeout)
        )

    def run_fast(
        self, input: InputT | Command[Any] | None, config: dict[str, object], context: ContextT | None
    ) -> Any:
        """The output of a plain run (``config``: checked, no options) on the fast path
        (:mod:`plait.pregel._fast`), or :data:`~plait.pregel._fast.SLOW` when it needs the loop."""
        fast = self.plan.fast
        if (
            fast is None
            or self.checkpointer is not None
            or self.step_timeout is not None
            or input is None
            or type(input) is Command
            or TASK_CONTEXT.get() is not None  # inside a node: the loop knows how to nest
        ):
            return SLOW
        out = run_fast(self, fast, input, config, context)
        return _output(self.plan, out.loop, False) if type(out) is Handed else out

    def with_saver(self, saver: BaseCheckpointSaver | None) -> Self:
        """A copy of this graph that saves its threads in ``saver`` (used to run subgraphs)."""
        clone = copy.copy(self)
        clone.checkpointer = saver
        return clone

    def validate(self) -> Self:
        """Kept for LangGraph compatibility; plans are validated by ``compile()``."""
        if not self.plan.nodes:
            raise GraphBuildError("Graph has no nodes")
        return self

    # >>> async source
    async def ainvoke_streaming(
        self,
        input: object,  # noqa: A002
        config: Mapping[str, object] | None,
        modes: frozenset[str],
        push: Callable[[tuple[object, ...]], None],
        *,
        context: object = None,
        outer: EventSink | None = None,
        **kwargs: Any,
    ) -> Any:
        """Run as a streaming subgraph: hand every event to ``push`` (``outer``'s sink receives them)."""
        kwargs.pop("stream_mode", None)
        loop = self._loop(config, modes, {**kwargs, "subgraphs": True})
        loop.sink.nest_in(outer)
        async with aclosing(run_async(loop, input, *run_inputs(self, config, context))) as events:
            async for event in events:
                push(event)
        return _output(self.plan, loop, False)

    async def astream(
        self,
        input: InputT | Command[Any] | None,
        config: RunnableConfig | None = None,
        *,  # noqa: A002
        stream_mode: Any = None,
        context: ContextT | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        """Run the graph, yielding progress as it happens.

        Args:
            input: The input state (dict or state object), a ``Command``, or ``None`` to resume.
            config: Run config: ``configurable.thread_id``, ``recursion_limit``, ``metadata``…
            stream_mode: One mode (events are payloads) or a list (events are ``(mode, payload)``).
            context: Run-scoped context object, available as ``runtime.context``.
            **kwargs: ``interrupt_before``, ``interrupt_after``, ``multitask_strategy``
                (``"enqueue"``: wait for a busy thread, ``"reject"``: raise ThreadBusyError),
                ``lease_timeout`` (seconds to wait for a busy thread, then ThreadBusyError),
                ``durability`` (``"sync"``, ``"async"`` or ``"exit"``), ``subgraphs`` (stream subgraph events
                with their namespaces), ``version`` (``"v2"``: typed stream parts).
        """
        modes, single = modes_of(stream_mode, self.stream_mode)
        v2 = version_of(kwargs.pop("version", None))
        loop = self._loop(config if v2 else plain_messages(config), modes, kwargs)
        subgraphs = loop.sink.subgraphs
        # closing this generator closes the run at once (releasing its thread), not when collected
        async with aclosing(run_async(loop, input, *run_inputs(self, config, context))) as events:
            async for event in events:
                for item in shape(event, modes, single, subgraphs, self.plan.root, v2, self.plan.output_make):
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
        """Run the graph to completion (or to an interrupt) and return the output state."""
        if (task := nesting_task(self, config)) is not None:
            return await arun_nested(self, input, task, stream_mode=stream_mode, given=config, **kwargs)
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
        """:meth:`invoke` as a graph of its own, even when called inside a running node."""
        if stream_mode != "values":
            return [
                c
                async for c in self.astream(input, config, stream_mode=stream_mode, context=context, **kwargs)
            ]
        v2 = version_of(kwargs.pop("version", None))
        loop = self._loop(config, frozenset(), kwargs)
        async with aclosing(run_async(loop, input, *run_inputs(self, config, context))) as events:
            async for _ in events:
                pass
        return _output(self.plan, loop, v2)

    async def abatch(
        self,
        inputs: Sequence[object],
        config: RunnableConfig | Sequence[RunnableConfig] | None = None,
        **kwargs: Any,
    ) -> list[Any]:
        """Invoke once per input (one config for all, or one per input), concurrently."""
        return await abatch(self, inputs, config, **kwargs)

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def invoke_streaming(
        self,
        input: object,  # noqa: A002
        config: Mapping[str, object] | None,
        modes: frozenset[str],
        push: Callable[[tuple[object, ...]], None],
        *,
        context: object = None,
        outer: EventSink | None = None,
        **kwargs: Any,
    ) -> Any:
        """Run as a streaming subgraph: hand every event to ``push`` (``outer``'s sink receives them)."""
        kwargs.pop("stream_mode", None)
        loop = self._loop(config, modes, {**kwargs, "subgraphs": True})
        loop.sink.nest_in(outer)
        with closing(run_sync(loop, input, *run_inputs(self, config, context))) as events:
            for event in events:
                push(event)
        return _output(self.plan, loop, False)

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
                ``durability`` (``"sync"``, ``"async"`` or ``"exit"``), ``subgraphs`` (stream subgraph events
                with their namespaces), ``version`` (``"v2"``: typed stream parts).
        """
        modes, single = modes_of(stream_mode, self.stream_mode)
        v2 = version_of(kwargs.pop("version", None))
        loop = self._loop(config if v2 else plain_messages(config), modes, kwargs)
        subgraphs = loop.sink.subgraphs
        # closing this generator closes the run at once (releasing its thread), not when collected
        with closing(run_sync(loop, input, *run_inputs(self, config, context))) as events:
            for event in events:
                yield from shape(event, modes, single, subgraphs, self.plan.root, v2, self.plan.output_make)

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
        if (task := nesting_task(self, config)) is not None:
            return run_nested(self, input, task, stream_mode=stream_mode, given=config, **kwargs)
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
            return [c for c in self.stream(input, config, stream_mode=stream_mode, context=context, **kwargs)]
        v2 = version_of(kwargs.pop("version", None))
        loop = self._loop(config, frozenset(), kwargs)
        with closing(run_sync(loop, input, *run_inputs(self, config, context))) as events:
            for _ in events:
                pass
        return _output(self.plan, loop, v2)

    def batch(
        self,
        inputs: Sequence[object],
        config: RunnableConfig | Sequence[RunnableConfig] | None = None,
        **kwargs: Any,
    ) -> list[Any]:
        """Invoke once per input (one config for all, or one per input), concurrently."""
        return batch(self, inputs, config, **kwargs)

    # <<< generated sync


def _output(plan: Plan, loop: Loop, v2: bool) -> Any:
    """What ``invoke`` returns: the output (``__interrupt__`` included), or a ``GraphOutput``."""
    final = loop.final()
    thread = loop.settings.thread
    if loop.interrupts and INTERRUPT not in final and thread is not None and thread.checkpoint_ns:
        # a subgraph stopped at a breakpoint: its parent task pauses too (and continues it later)
        final[INTERRUPT] = list(loop.interrupts)
    if not v2:
        return output_value(plan, final)
    interrupts = tuple(final.pop(INTERRUPT, ()))
    make = plan.output_make  # version 2: the output schema's class (dataclass, pydantic)
    return GraphOutput(
        value=output_value(plan, final) if make is None else make(final), interrupts=interrupts
    )
