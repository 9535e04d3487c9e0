"""The graph an ``@entrypoint`` compiles to: one node over three keys, its input and output bare values.

The plan has the keys ``__start__`` (the input), ``__end__`` (what the function
returned) and ``__previous__`` (what it saved: the return value, or
``entrypoint.final(save=...)``), and one node, the function, run after START.
:class:`EntrypointPregel` is a :class:`~plait.pregel._pregel.Pregel` whose
input, output, stream events and snapshots are those bare values, as in
LangGraph: ``invoke(3)`` returns what the function returned, ``get_state()``
shows it as ``values``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from plait._internal._narrow import is_str_dict
from plait.channels.last_value import LastValue
from plait.checkpoint.base import INTERRUPT
from plait.constants import START
from plait.pregel._cache import node_namespace
from plait.pregel._context import TaskContext
from plait.pregel._func_tasks import afinish, finish, start_calls
from plait.pregel._loop import Loop
from plait.pregel._plan import NodeSpec, Plan
from plait.pregel._pregel import Pregel
from plait.runtime import Runtime
from plait.types import CachePolicy, Command, RetryPolicies, StateSnapshot, TimeoutPolicy

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

__all__ = ["INPUT", "PREVIOUS", "RETURN", "EntrypointPregel", "entrypoint_plan"]

INPUT = "__start__"
"""Key of the entrypoint's input."""
RETURN = "__end__"
"""Key of what it returned."""
PREVIOUS = "__previous__"
"""Key of what it saved for the next run on the thread (its ``previous`` parameter)."""
EXTRAS = ("previous", "config", "runtime", "store", "writer")
"""Parameters an entrypoint function may declare to receive them."""
_Split = Callable[[object], tuple[object, object]]
"""``value -> (returned, saved)``."""


def _extras(names: tuple[str, ...], ctx: TaskContext) -> dict[str, object]:
    previous: object = ctx.loop.run.values.get(PREVIOUS) if ctx.loop is not None else None
    out: dict[str, object] = {}
    for name in names:
        if name == "previous":
            out[name] = previous
        elif name == "config":
            out[name] = ctx.node_config
        elif name == "store":
            out[name] = ctx.store
        elif name == "writer":
            out[name] = ctx.writer
        else:
            runtime: Runtime[object] = Runtime(
                context=ctx.context, store=ctx.store, stream_writer=ctx.writer, previous=previous
            )
            out[name] = runtime if ctx.progress is None else runtime.override(heartbeat=ctx.progress.beat)
    return out


def _node_call(
    fn: Callable[..., Any], names: tuple[str, ...], is_async: bool, split: _Split
) -> Callable[[object, TaskContext], object]:
    """``call(input, ctx)`` for the entrypoint function (``fn`` returns an awaitable when ``is_async``);
    it returns the node's writes."""

    def writes(value: object) -> dict[str, object]:
        returned, saved = split(value)
        return {RETURN: returned, PREVIOUS: saved}

    if is_async:

        async def acall(value: object, ctx: TaskContext) -> dict[str, object]:
            start_calls(ctx, True)
            kwargs = _extras(names, ctx)
            return writes(await afinish(ctx, lambda: fn(value, **kwargs)))

        return acall

    def call(value: object, ctx: TaskContext) -> dict[str, object]:
        start_calls(ctx, False)
        kwargs = _extras(names, ctx)
        return writes(finish(ctx, lambda: fn(value, **kwargs)))

    return call


def entrypoint_plan(  # noqa: PLR0913 - the decorator's options
    fn: Callable[..., object],
    names: tuple[str, ...],
    is_async: bool,
    split: _Split,
    *,
    retry: RetryPolicies | None = None,
    cache_policy: CachePolicy[Callable[..., str | bytes]] | None = None,
    cache: object = None,
    timeout: TimeoutPolicy | None = None,
) -> Plan:
    """The plan of an entrypoint: ``START -> fn`` over the input, return and saved keys.

    Args:
        fn: The entrypoint function.
        names: The extra parameters it declares (see :data:`EXTRAS`).
        is_async: ``fn`` is a coroutine function.
        split: ``value -> (returned, saved)`` (``entrypoint.final`` separates them).
        retry: Retry policy of the function.
        cache_policy: Cache its results, keyed on the input.
        cache: Cache for the function and its tasks.
        timeout: Limits on each attempt of the (async) function.
    """
    name = fn.__name__
    node = NodeSpec(
        name=name,
        call=_node_call(fn, names, is_async, split),
        is_async=is_async,
        reads=(INPUT,),
        make_input=_input_value,
        retry=retry,
        timeout=timeout,
        cache_policy=cache_policy,
        cache_ns=node_namespace(fn, name) if cache_policy is not None else (),
        triggers=("__start__",),  # the input starts it (LangGraph's channel name)
    )
    keys = (INPUT, RETURN, PREVIOUS)
    return Plan(
        channels={key: LastValue(key) for key in keys},
        nodes={name: node},
        edges={START: (name,)},
        branches={},
        joins={},
        input_keys=(INPUT,),
        output_keys=(RETURN,),
        state_keys=keys,
        cache=cache,
    )


def _input_value(state: Mapping[str, object]) -> object:
    return state.get(INPUT)


def _wrap(value: object) -> object:
    """The run input: a ``Command`` or ``None`` as they are, anything else is the function's input."""
    return value if _as_is(value) else {INPUT: value}


def _as_is(value: object) -> bool:
    return value is None or isinstance(value, Command)


def _output(values: object) -> object:
    """What ``invoke`` returns: the return value, or ``{"__interrupt__": [...]}`` when paused."""
    if not is_str_dict(values):
        return values
    if INTERRUPT in values:
        return {INTERRUPT: values[INTERRUPT]}
    return values.get(RETURN)


def _snapshot(snap: StateSnapshot) -> StateSnapshot:
    values = snap.values
    shown = values.get(RETURN) if is_str_dict(values) else values
    return snap._replace(values=shown)


class _Events:
    """Turns the plan's stream events into the entrypoint's: bare values, ``{name: returned}`` updates."""

    def __init__(self, node: str, modes: frozenset[str]) -> None:
        self.node = node
        self.modes = modes
        self.ran = False

    def __call__(self, mode: str, event: object, top: bool) -> tuple[bool, object]:
        keep = mode in self.modes
        if not top or not is_str_dict(event):
            return keep, event
        if mode == "updates":
            return keep, self._update(event)
        if mode == "values":
            if INTERRUPT in event:
                return keep, event
            if not self.ran:  # the input, before the function ran: LangGraph shows no values yet
                return False, None
            self.ran = False
            return keep, event.get(RETURN)
        if mode == "checkpoints":
            shown = event.get("values")
            values = shown.get(RETURN) if is_str_dict(shown) else shown
            return keep, {**event, "values": values}
        return keep, event

    def _update(self, event: dict[str, object]) -> dict[str, object]:
        written = event.get(self.node)
        if is_str_dict(written) and RETURN in written:
            self.ran = True
            return {self.node: written[RETURN]}
        return event


def _requested(stream_mode: str | Sequence[str] | None, default: str) -> tuple[list[str], bool]:
    mode = default if stream_mode is None else stream_mode
    if isinstance(mode, str):
        return [mode], True
    return list(mode), False


class EntrypointPregel(Pregel[Any, Any, Any, Any]):
    """An ``@entrypoint`` workflow: invoke it with any input; it returns what the function returned.

    Args:
        plan: The plan from :func:`entrypoint_plan`.
        node: The function's name (its node).
        input_type: The annotated input type (for ``get_input_jsonschema``).
        output_type: The annotated return type.
        context_schema: The ``context_schema`` given to the decorator.
        **kwargs: For :class:`~plait.pregel._pregel.Pregel` (checkpointer, store, name).
    """

    def __init__(  # noqa: PLR0913 - the decorator's options
        self,
        plan: Plan,
        node: str,
        input_type: object = Any,
        output_type: object = Any,
        context_schema: object = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(plan, stream_mode="updates", **kwargs)
        self.node = node
        self.input_type = input_type
        self.output_type = output_type
        self.context_schema = context_schema

    def _loop(
        self, config: Mapping[str, object] | None, modes: frozenset[str], kwargs: dict[str, object]
    ) -> Loop:
        loop = super()._loop(config, modes, kwargs)
        if modes:  # task results are streamed as they come
            loop.sink.live = True
        return loop

    # -- running --------------------------------------------------------------------------------------

    # >>> async source
    async def astream(
        self,
        input: object,  # noqa: A002
        config: RunnableConfig | None = None,
        *,
        stream_mode: str | Sequence[str] | None = None,
        context: object = None,
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        """Run the workflow, yielding task results (``updates``), ``custom`` events, ``values``…"""
        modes, single = _requested(stream_mode, self.stream_mode)
        shape = _Events(self.node, frozenset(modes))
        subgraphs = bool(kwargs.get("subgraphs"))
        inner = sorted({*modes, "updates"})
        async for item in super().astream(_wrap(input), config, stream_mode=inner, context=context, **kwargs):
            out = _reshape(shape, item, single, subgraphs)
            if out is not None:
                yield out[0]

    async def ainvoke_here(
        self,
        input: object,  # noqa: A002
        config: RunnableConfig | None = None,
        *,
        stream_mode: str = "values",
        context: object = None,
        **kwargs: Any,
    ) -> object:
        """Run to the end (or an interrupt); the function's return value."""
        if stream_mode != "values":
            return [
                c
                async for c in self.astream(input, config, stream_mode=stream_mode, context=context, **kwargs)
            ]
        return _output(await super().ainvoke_here(_wrap(input), config, context=context, **kwargs))

    async def ainvoke_streaming(self, input: object, *args: Any, **kwargs: Any) -> object:  # noqa: A002
        """Run as a subgraph that streams into its parent; the function's return value."""
        return _output(await super().ainvoke_streaming(_wrap(input), *args, **kwargs))

    async def aget_state(self, config: RunnableConfig, *, subgraphs: bool = False) -> StateSnapshot:
        """The thread's newest checkpoint; ``values`` is the last return value."""
        return _snapshot(await super().aget_state(config, subgraphs=subgraphs))

    async def aget_state_history(self, config: RunnableConfig, **kwargs: Any) -> AsyncIterator[StateSnapshot]:
        """The thread's checkpoints, newest first; ``values`` are return values."""
        async for snap in super().aget_state_history(config, **kwargs):
            yield _snapshot(snap)

    async def aupdate_state(
        self, config: RunnableConfig, values: object, as_node: str | None = None, *args: Any, **kwargs: Any
    ) -> dict[str, Any]:
        """Store ``values`` as the thread's last return value (the next run's ``previous``)."""
        wrapped = {RETURN: values, PREVIOUS: values}
        return await super().aupdate_state(config, wrapped, as_node or self.node, *args, **kwargs)

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def stream(
        self,
        input: object,  # noqa: A002
        config: RunnableConfig | None = None,
        *,
        stream_mode: str | Sequence[str] | None = None,
        context: object = None,
        **kwargs: Any,
    ) -> Iterator[Any]:
        """Run the workflow, yielding task results (``updates``), ``custom`` events, ``values``…"""
        modes, single = _requested(stream_mode, self.stream_mode)
        shape = _Events(self.node, frozenset(modes))
        subgraphs = bool(kwargs.get("subgraphs"))
        inner = sorted({*modes, "updates"})
        for item in super().stream(_wrap(input), config, stream_mode=inner, context=context, **kwargs):
            out = _reshape(shape, item, single, subgraphs)
            if out is not None:
                yield out[0]

    def invoke_here(
        self,
        input: object,  # noqa: A002
        config: RunnableConfig | None = None,
        *,
        stream_mode: str = "values",
        context: object = None,
        **kwargs: Any,
    ) -> object:
        """Run to the end (or an interrupt); the function's return value."""
        if stream_mode != "values":
            return [c for c in self.stream(input, config, stream_mode=stream_mode, context=context, **kwargs)]
        return _output(super().invoke_here(_wrap(input), config, context=context, **kwargs))

    def invoke_streaming(self, input: object, *args: Any, **kwargs: Any) -> object:  # noqa: A002
        """Run as a subgraph that streams into its parent; the function's return value."""
        return _output(super().invoke_streaming(_wrap(input), *args, **kwargs))

    def get_state(self, config: RunnableConfig, *, subgraphs: bool = False) -> StateSnapshot:
        """The thread's newest checkpoint; ``values`` is the last return value."""
        return _snapshot(super().get_state(config, subgraphs=subgraphs))

    def get_state_history(self, config: RunnableConfig, **kwargs: Any) -> Iterator[StateSnapshot]:
        """The thread's checkpoints, newest first; ``values`` are return values."""
        for snap in super().get_state_history(config, **kwargs):
            yield _snapshot(snap)

    def update_state(
        self, config: RunnableConfig, values: object, as_node: str | None = None, *args: Any, **kwargs: Any
    ) -> dict[str, Any]:
        """Store ``values`` as the thread's last return value (the next run's ``previous``)."""
        wrapped = {RETURN: values, PREVIOUS: values}
        return super().update_state(config, wrapped, as_node or self.node, *args, **kwargs)

    # <<< generated sync

    # -- schemas --------------------------------------------------------------------------------------

    def get_input_jsonschema(self, config: RunnableConfig | None = None) -> dict[str, Any]:
        """JSON schema of the input (needs pydantic)."""
        return _json_schema(self.input_type, "LangGraphInput")

    def get_output_jsonschema(self, config: RunnableConfig | None = None) -> dict[str, Any]:
        """JSON schema of the return value (needs pydantic)."""
        return _json_schema(self.output_type, "LangGraphOutput")

    def get_context_jsonschema(self, config: RunnableConfig | None = None) -> dict[str, Any] | None:
        """JSON schema of ``context_schema`` (needs pydantic), or ``None`` without one."""
        if self.context_schema is None:
            return None
        return _json_schema(self.context_schema, None)


def _reshape(shape: _Events, item: Any, single: bool, subgraphs: bool) -> tuple[Any] | None:
    """One event of the inner stream (always in list mode) as the caller asked for it, or ``None``."""
    if subgraphs:
        ns, mode, payload = item
    else:
        ns, (mode, payload) = (), item
    keep, payload = shape(mode, payload, not ns)
    if not keep:
        return None
    if subgraphs:
        return ((ns, payload) if single else (ns, mode, payload),)
    return (payload if single else (mode, payload),)


def _json_schema(kind: Any, title: str | None) -> dict[str, Any]:
    try:
        from pydantic import TypeAdapter
    except ImportError as exc:  # pragma: no cover - pydantic comes with langchain-core
        raise ImportError("JSON schemas of entrypoints need pydantic: pip install pydantic") from exc
    schema: dict[str, Any] = TypeAdapter(kind).json_schema()
    if title is not None:
        schema = {**schema, "title": title}
    return schema
