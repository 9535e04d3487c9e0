"""Turn user callables into ``call(input, ctx)`` functions, once, at compile time.

The signature of a node is inspected here and never again: the returned
closure passes exactly the extra arguments the node declared (``config``,
``runtime``, ``store``, ``writer``).
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, NamedTuple, Protocol, cast, get_args

from langchain_core.callbacks.base import BaseCallbackManager

from plait._internal._narrow import is_list, is_str_dict
from plait.checkpoint.base import INTERRUPT
from plait.errors import GraphInterrupt, NodeError
from plait.pregel._context import TaskContext, running_task
from plait.pregel._legacy_ns import aresumed_config, resumed_config
from plait.pregel._message_events import MESSAGE_EVENTS_KEY
from plait.pregel._messages import MessageStreamHandler
from plait.pregel._thread import config_with, configurable_of, run_config, without_thread
from plait.pregel._tool_events import ToolEventHandler
from plait.pregel._travel import TRAVEL, nested_travel, stable_ns, travel_input
from plait.types import Command, Interrupt

__all__ = [
    "NodeCalls",
    "accepts_config",
    "arun_nested",
    "injected",
    "make_call",
    "nesting_task",
    "run_coroutine",
    "run_nested",
]

_EXTRAS = ("config", "runtime", "store", "writer")


class _Saving(Protocol):
    """What running a compiled graph inside a task reads of how it saves (a ``Pregel``'s)."""

    @property
    def subgraph_saving(self) -> str: ...

    @property
    def checkpointer(self) -> object: ...


_NODE_ERROR = re.compile(r"(?:\w+\.)*NodeError(?: \| None)?|Optional\[(?:\w+\.)*NodeError\]")


def _signature(fn: Callable[..., object]) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def accepts_config(fn: Callable[..., object]) -> bool:
    """Whether ``fn`` has a parameter named ``config`` (it then receives the run config)."""
    sig = _signature(fn)
    return sig is not None and "config" in sig.parameters


def _asks_error(param: inspect.Parameter) -> bool:
    """An ``error: NodeError`` parameter (an error handler's; other nodes get ``None``)."""
    hint = param.annotation
    if param.name != "error" or hint is param.empty:
        return False
    if isinstance(hint, str):
        return _NODE_ERROR.fullmatch(hint.strip()) is not None
    return hint is NodeError or NodeError in get_args(hint)


def _extras(fn: Callable[..., object]) -> tuple[bool, tuple[str, ...]]:
    sig = _signature(fn)
    if sig is None:
        return False, ()
    params = list(sig.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    config_positional = len(positional) >= 2 and positional[1].name == "config"
    taken = set(map(id, positional[: 2 if config_positional else 1]))
    names = tuple(
        p.name
        for p in params
        if (p.name in _EXTRAS or _asks_error(p)) and p.kind is not p.POSITIONAL_ONLY and id(p) not in taken
    )
    return config_positional, names


def injected(names: Sequence[str], ctx: TaskContext) -> dict[str, object]:
    """The values of the injectable parameters ``names`` (config, store, writer, runtime, error) for ``ctx``."""
    out: dict[str, object] = {}
    for name in names:
        if name == "error":
            out[name] = ctx.node_error
        elif name == "config":
            out[name] = ctx.node_config
        elif name == "store":
            out[name] = ctx.store
        elif name == "writer":
            out[name] = ctx.writer
        else:
            out[name] = ctx.runtime()
    return out


def _subgraph_config(graph: Any, ctx: TaskContext) -> tuple[Any, dict[str, object], str]:
    """The graph to run, its config and its namespace segment: where a subgraph keeps its state."""
    mode = graph.subgraph_saving
    calls = ctx.subgraph_calls
    ctx.subgraph_calls += 1
    # inherit: the task's namespace (node:task_id), then one more level per later call (|1, |2..):
    # stable across a resume (the task id and call order repeat). persist: the same without task
    # ids, its parents' included (node, node|1..), so that the next run finds it again
    name = ctx.node if mode == "persist" else f"{ctx.node}:{ctx.task_id}"
    if calls:
        name = f"{name}|{calls}"
    if mode == "off" or ctx.saver is None:
        return (
            (graph if graph.checkpointer is None else graph.with_saver(None)),
            without_thread(ctx.config),
            name,
        )
    parent = stable_ns(ctx.checkpoint_ns) if mode == "persist" else ctx.checkpoint_ns
    ns = f"{parent}|{name}" if parent else name
    config = config_with(ctx.config, checkpoint_ns=ns, checkpoint_id=None)
    return graph.with_saver(ctx.saver), config, name


def _push(graph: Any, ctx: TaskContext, segment: str) -> Callable[[tuple[object, ...]], None]:
    """Where a streaming subgraph run hands its events: the parent's sink, under ``segment``."""
    return partial(ctx.stream.forward, segment=segment, recast=graph.subgraph_saving == "persist")


def nesting_task(graph: _Saving, config: Mapping[str, object] | None) -> TaskContext | None:
    """The running task ``graph`` is invoked from, when it runs there as a subgraph (saving into
    the task's thread), else ``None``.

    Raises:
        InvalidConfigError: ``config`` is malformed (a top-level run's is checked as its loop is made).
    """
    task = running_task()
    if task is None:  # a top-level run (its config is checked when its loop is made)
        return None
    thread_id = configurable_of(run_config(config)).get("thread_id")
    if graph.subgraph_saving not in ("inherit", "persist"):
        return None
    # a graph with a saver of its own runs in the task too: unsaved, when the parent saves nothing;
    # so does one without, when the parent streams its subgraphs (its events go there, as LangGraph's)
    if thread_id or (task.saver is None and graph.checkpointer is None and task.stream is None):
        return None
    return task


_STREAM_HANDLERS = (MessageStreamHandler, ToolEventHandler)


def _without_stream_handlers(callbacks: object) -> object:
    """``callbacks`` without the parent run's stream handlers: they report at the parent's namespace,
    and the nested run streams its events into the parent's sink under its own."""
    if isinstance(callbacks, BaseCallbackManager):
        manager = copy.copy(callbacks)
        manager.handlers = [h for h in callbacks.handlers if not isinstance(h, _STREAM_HANDLERS)]
        manager.inheritable_handlers = [
            h for h in callbacks.inheritable_handlers if not isinstance(h, _STREAM_HANDLERS)
        ]
        return manager
    if is_list(callbacks):
        return [h for h in callbacks if not isinstance(h, _STREAM_HANDLERS)]
    return callbacks


def _with_given(config: dict[str, Any], given: Mapping[str, Any] | None, ctx: TaskContext) -> dict[str, Any]:
    """The subgraph run's config with the metadata of the config it was invoked with on top
    (e.g. a bound ``lc_agent_name``) and its callbacks, as LangGraph merges a nested call's config
    into its parent's; in a v3 run it streams its model calls as protocol events too."""
    if configurable_of(ctx.config).get(MESSAGE_EVENTS_KEY) and not configurable_of(config).get(
        MESSAGE_EVENTS_KEY
    ):
        config = config_with(config, **{MESSAGE_EVENTS_KEY: True})
    callbacks = (given or {}).get("callbacks")
    if callbacks is not None:  # a traced invoke's: the subgraph's runs go inside its run
        config = {**config, "callbacks": _without_stream_handlers(callbacks)}
    metadata = (given or {}).get("metadata")
    if not metadata:
        return config
    return {**config, "metadata": {**(config.get("metadata") or {}), **metadata}}


# >>> async source
async def arun_nested(
    graph: Any,
    state: object,
    ctx: TaskContext,
    *,
    parent_keys: frozenset[str] = frozenset(),
    given: Mapping[str, object] | None = None,
    **kwargs: object,
) -> object:
    """Run ``graph`` inside the running task ``ctx``: it saves into the parent's thread and
    its interrupts pause the parent task (resuming resumes the subgraph); the async form runs the
    subgraph's nodes and routers on this event loop.

    Args:
        graph: The subgraph.
        state: Its input.
        ctx: The running task.
        parent_keys: The parent's state keys, when ``graph`` is the node itself: its other
            output keys are dropped (the subgraph's own keys are not the parent's business).
        given: The config ``graph`` was invoked with (its metadata is kept).
        **kwargs: For ``invoke``.

    Raises:
        GraphInterrupt: the subgraph paused.
    """
    sub, config, segment = _subgraph_config(graph, ctx)
    config = await aresumed_config(sub, _with_given(config, given, ctx), ctx)
    config, value = _travel(sub, config, _given(sub, state, ctx), ctx, kwargs)
    kwargs.setdefault("durability", ctx.durability)
    kwargs.setdefault("control", ctx.control)
    if ctx.stream is not None:
        sink = ctx.stream
        out = await sub.ainvoke_streaming(
            value, config, sink.modes, _push(graph, ctx, segment), context=ctx.context, outer=sink, **kwargs
        )
    else:
        out = await sub.ainvoke_here(value, config, context=ctx.context, **kwargs)
    return _nested_output(out, parent_keys)


# <<< async source


# >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
def run_nested(
    graph: Any,
    state: object,
    ctx: TaskContext,
    *,
    parent_keys: frozenset[str] = frozenset(),
    given: Mapping[str, object] | None = None,
    **kwargs: object,
) -> object:
    """Run ``graph`` inside the running task ``ctx``: it saves into the parent's thread and
    its interrupts pause the parent task (resuming resumes the subgraph); the async form runs the
    subgraph's nodes and routers on this event loop.

    Args:
        graph: The subgraph.
        state: Its input.
        ctx: The running task.
        parent_keys: The parent's state keys, when ``graph`` is the node itself: its other
            output keys are dropped (the subgraph's own keys are not the parent's business).
        given: The config ``graph`` was invoked with (its metadata is kept).
        **kwargs: For ``invoke``.

    Raises:
        GraphInterrupt: the subgraph paused.
    """
    sub, config, segment = _subgraph_config(graph, ctx)
    config = resumed_config(sub, _with_given(config, given, ctx), ctx)
    config, value = _travel(sub, config, _given(sub, state, ctx), ctx, kwargs)
    kwargs.setdefault("durability", ctx.durability)
    kwargs.setdefault("control", ctx.control)
    if ctx.stream is not None:
        sink = ctx.stream
        out = sub.invoke_streaming(
            value, config, sink.modes, _push(graph, ctx, segment), context=ctx.context, outer=sink, **kwargs
        )
    else:
        out = sub.invoke_here(value, config, context=ctx.context, **kwargs)
    return _nested_output(out, parent_keys)


# <<< generated sync


def _travel(
    sub: _Saving, config: dict[str, object], given: object, ctx: TaskContext, kwargs: dict[str, object]
) -> tuple[dict[str, object], object]:
    """The subgraph run's part in its parent's time travel (``kwargs`` gets it): its config and input."""
    if sub.checkpointer is None:
        return config, given
    loop = ctx.loop
    parent = loop.settings.travel if loop is not None else None
    parent_id = loop.checkpoint_id if loop is not None else None
    config, travel, continues = nested_travel(parent, ctx.checkpoint_ns, parent_id, config)
    kwargs[TRAVEL] = travel
    return config, travel_input(given, continues)


def _given(sub: _Saving, state: object, ctx: TaskContext) -> object:
    """What a subgraph runs with: the answer to its interrupt, nothing (it continues from its
    breakpoint), or its input."""
    if sub.checkpointer is None:
        return state
    if ctx.resume:
        return Command(resume=ctx.resume[-1])
    return None if ctx.paused else state


def _nested_output(values: object, parent_keys: frozenset[str]) -> object:
    """A subgraph's output as its parent sees it; an interrupt inside pauses the parent task.

    Raises:
        GraphInterrupt: the subgraph paused.
    """
    if is_str_dict(values):  # the subgraph's output state
        paused = values.get(INTERRUPT)
        if paused:
            raise GraphInterrupt(tuple(cast("Iterable[Interrupt]", paused)))
        if parent_keys:
            return {k: v for k, v in values.items() if k in parent_keys}
        return values
    return values


def _runnable_call(runnable: Any) -> Callable[[object, TaskContext], object]:
    def call(state: object, ctx: TaskContext) -> object:
        return runnable.invoke(state, ctx.node_config)

    return call


def _runnable_acall(runnable: Any) -> Callable[[object, TaskContext], Awaitable[object]]:
    def acall(state: object, ctx: TaskContext) -> Awaitable[object]:
        return runnable.ainvoke(state, ctx.node_config)  # type: ignore[no-any-return]

    return acall


def _direct_call(
    fn: Callable[..., object], config_positional: bool, names: tuple[str, ...]
) -> Callable[[object, TaskContext], object]:
    if config_positional:

        def with_config(state: object, ctx: TaskContext) -> object:
            return fn(state, ctx.node_config, **injected(names, ctx)) if names else fn(state, ctx.node_config)

        return with_config
    if names:

        def with_kwargs(state: object, ctx: TaskContext) -> object:
            return fn(state, **injected(names, ctx))

        return with_kwargs

    def plain(state: object, ctx: TaskContext) -> object:
        return fn(state)

    return plain


class NodeCalls(NamedTuple):
    """How the drivers call one node.

    Attributes:
        call: ``call(input, ctx)``; returns an awaitable when ``is_async``.
        is_async: The node is a coroutine function.
        acall: An async form for the async driver, where the node has one (subgraphs and
            runnables: their own nodes then run on the caller's event loop), else ``None``.
        plain: The function itself, when it is a sync function called with the state alone
            (the fast path calls it directly, :mod:`plait.pregel._fast`), else ``None``.
    """

    call: Callable[[Any, TaskContext], Any]
    is_async: bool
    acall: Callable[[Any, TaskContext], Awaitable[object]] | None = None
    plain: Callable[[Any], object] | None = None


def make_call(fn: Any, keys: frozenset[str] = frozenset(), *, subgraph: bool = False) -> NodeCalls:
    """Wrap ``fn`` as ``call(input, ctx)`` (and ``acall``), inspecting its signature once.

    Args:
        fn: The node: a function, a runnable or a compiled graph.
        keys: The parent graph's state keys (a subgraph's other output keys are dropped).
        subgraph: ``fn`` is a compiled graph.
    """
    if subgraph:
        return NodeCalls(
            partial(run_nested, fn, parent_keys=keys), False, partial(arun_nested, fn, parent_keys=keys)
        )
    if not (inspect.isfunction(fn) or inspect.ismethod(fn) or inspect.isbuiltin(fn)) and hasattr(
        fn, "invoke"
    ):
        # a runnable (tools included: they keep their function as ``func`` but are not callable)
        if hasattr(fn, "ainvoke") and (not hasattr(fn, "func") or not callable(fn)):
            return NodeCalls(_runnable_call(fn), False, _runnable_acall(fn))
    method = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else type(fn).__call__
    config_positional, names = _extras(fn)
    is_async = inspect.iscoroutinefunction(method)
    plain = fn if not (is_async or config_positional or names) else None
    return NodeCalls(_direct_call(fn, config_positional, names), is_async, None, plain)


_PLAIN: frozenset[type[object]] = frozenset({dict, str, list, tuple, type(None), int, bool})
"""Types a node or router returns that are never awaitable (checked first: the common answers)."""


def run_coroutine(value: object) -> object:
    """Finish a coroutine returned by an async node run from the sync driver: on a loop of its own,
    in a worker thread when this thread runs an event loop already (a sync ``invoke`` made from
    async code, which blocks that loop meanwhile: ``ainvoke`` is the better call there)."""
    if type(value) in _PLAIN:
        return value
    if inspect.isawaitable(value):
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # the usual case: no loop in this thread
            return asyncio.run(_await(value))
        context = contextvars.copy_context()  # (the running node's context: interrupt(), get_config())
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="plait-async-node") as pool:
            return pool.submit(context.run, asyncio.run, _await(value)).result()
    return value


async def _await(value: Awaitable[object]) -> object:
    return await value
