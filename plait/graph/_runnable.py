"""A compiled graph as a LangChain ``Runnable``: config, callbacks, events, composition.

The runtime knows nothing of LangChain's Runnable machinery. This facade adds it
around the run:

* ``with_config`` / ``copy`` return a graph (not a binding) whose config applies to every run;
* with callbacks in the config (or LangSmith tracing on), a run reports a chain run for the
  graph and one for each node (:func:`traced_call`), so model calls inside a node nest under
  it and ``astream_events(version="v2")`` sees ``on_chain_start/stream/end`` for both;
* ``graph | runnable`` and ``runnable | graph`` come from ``Runnable`` itself.

Without callbacks and tracing, a run pays for one dict lookup and two cached calls.
"""

from __future__ import annotations

import copy as _copy
import warnings
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import aclosing
from typing import Any, Generic, Literal, cast, overload

from langchain_core.callbacks.manager import (
    AsyncCallbackManager,
    AsyncCallbackManagerForChainRun,
    CallbackManager,
    CallbackManagerForChainRun,
)
from langchain_core.runnables.config import RunnableConfig, merge_configs, var_child_runnable_config
from langchain_core.tracers.context import tracing_v2_callback_var
from langsmith.run_helpers import get_current_run_tree
from langsmith.utils import get_env_var
from pydantic import BaseModel
from typing_extensions import Self

from plait.graph._jsonschema import config_model, context_jsonschema, schema_model, state_jsonschema
from plait.pregel._fast import SLOW
from plait.pregel._thread import run_config
from plait.pregel._traced import arelease, release, root_manager, streamer, traced_call
from plait.types import Command, GraphOutput
from plait.typing import ContextT, InputT, OutputT, StateT
from plait.warnings import LangGraphDeprecatedSinceV10

__all__ = ["GraphRunnable", "traced_call"]

_RUN_KEYS = ("run_id", "run_name")


def _tracing() -> bool:
    """LangSmith tracing is on (env, a ``tracing_v2_enabled()`` block, or inside a ``@traceable``)."""
    if tracing_v2_callback_var.get() is not None or get_current_run_tree() is not None:
        return True
    # positional arguments: the cached lookup hashes them faster than keywords
    return get_env_var("TRACING_V2", get_env_var("TRACING", "")) == "true"


def _run_config(config: Mapping[str, object], child: object) -> dict[str, object]:
    """The config the runtime gets: the graph run's child callbacks, without run id and name."""
    out = {k: v for k, v in config.items() if k not in _RUN_KEYS}
    out["callbacks"] = child
    return out


# -- the graph -----------------------------------------------------------------------


class _Modes:
    """The stream modes a traced ``stream`` asks for: the caller's plus ``values`` (for the run's output)."""

    def __init__(self, requested: str | Sequence[str], kwargs: Mapping[str, object]) -> None:
        self.single = isinstance(requested, str)
        self.requested = [requested] if isinstance(requested, str) else list(requested)
        self.subgraphs = bool(kwargs.get("subgraphs"))
        self.plain = kwargs.get("version") == "v2"  # typed stream parts: passed through as they are
        self.extra = "values" not in self.requested and not self.plain
        self.asked: str | Sequence[str] = [*self.requested, "values"] if self.extra else requested
        self.output: object = None

    def shape(self, event: Any) -> list[object]:  # a tuple or a payload, as the flags above say
        """What the caller gets for ``event`` (``[]`` for the added ``values`` events)."""
        if self.plain:
            return [event]
        if self.single and not self.extra:  # "values" alone
            ns, payload = event if self.subgraphs else ((), event)
            if not ns:
                self.output = payload
            return [event]
        ns, mode, payload = event if self.subgraphs else ((), *event)
        if mode == "values" and not ns:
            self.output = payload
        if not self.extra:
            return [event]
        if mode == "values":
            return []
        if self.single:
            return [(ns, payload) if self.subgraphs else payload]
        return [(ns, mode, payload) if self.subgraphs else (mode, payload)]


class GraphRunnable(Generic[StateT, ContextT, InputT, OutputT]):
    """Mixin for the compiled graph: LangChain ``Runnable`` behaviour on top of the runtime.

    It comes first among the compiled graph's bases (before ``Pregel``, with
    LangChain's ``Runnable`` last), so ``invoke``/``stream`` here wrap the runtime's.
    """

    config: RunnableConfig | None = None
    """Config applied to every run (``with_config``), under the run's own."""
    builder: Any  # the StateGraph (plait.graph.state imports this module)
    run_fast: Callable[[InputT | Command[Any] | None, dict[str, Any], ContextT | None], object]
    """``Pregel.run_fast`` (the next class in the MRO): a plain run's output, or ``SLOW``."""

    # -- schemas ------------------------------------------------------------------------

    def _pregel(self, method: str) -> Any:
        """The runtime's ``method`` (the next class in the MRO is ``Pregel``)."""
        return getattr(super(), method)

    def _named(self, suffix: str) -> str:
        return f"{getattr(self, 'name', None) or 'LangGraph'}{suffix}"

    def get_input_schema(self, config: RunnableConfig | None = None) -> type[BaseModel]:
        """A pydantic model of the graph input."""
        schema = self.builder.input_schema
        return schema_model(schema, self.builder.schema_fields[schema], self._named("Input"))

    def get_output_schema(self, config: RunnableConfig | None = None) -> type[BaseModel]:
        """A pydantic model of the graph output."""
        schema = self.builder.output_schema
        return schema_model(schema, self.builder.schema_fields[schema], self._named("Output"))

    def get_input_jsonschema(self, config: RunnableConfig | None = None) -> dict[str, Any]:
        """The JSON schema of the graph input."""
        schema = self.builder.input_schema
        return state_jsonschema(schema, self.builder.schema_fields[schema], self._named("Input"))

    def get_output_jsonschema(self, config: RunnableConfig | None = None) -> dict[str, Any]:
        """The JSON schema of the graph output."""
        schema = self.builder.output_schema
        return state_jsonschema(schema, self.builder.schema_fields[schema], self._named("Output"))

    def get_context_jsonschema(self) -> dict[str, Any] | None:
        """The JSON schema of the context schema, or ``None`` without one."""
        return context_jsonschema(self.builder.context_schema)

    def config_schema(self, *, include: Sequence[str] | None = None) -> type[BaseModel]:
        """Deprecated: a model whose ``configurable`` is the context schema (use ``get_context_jsonschema``)."""
        warnings.warn(
            LangGraphDeprecatedSinceV10(
                "`config_schema` is deprecated. Use `get_context_jsonschema` for the relevant schema instead."
            ),
            stacklevel=2,
        )
        return config_model(self.builder.context_schema)

    def get_config_jsonschema(self, *, include: Sequence[str] | None = None) -> dict[str, Any]:
        """Deprecated: the JSON schema of :meth:`config_schema` (use ``get_context_jsonschema``)."""
        warnings.warn(
            LangGraphDeprecatedSinceV10(
                "`get_config_jsonschema` is deprecated. Use `get_context_jsonschema` instead."
            ),
            stacklevel=2,
        )
        return config_model(self.builder.context_schema).model_json_schema()

    def _config(self, config: object) -> dict[str, Any]:
        given = run_config(config)  # a malformed config fails here, before any callback runs
        if not self.config:
            return given
        merged = merge_configs(self.config, cast("RunnableConfig", given))  # run_config checked its shape
        own: dict[str, object] = {**(self.config.get("metadata") or {}), **(given.get("metadata") or {})}
        merged["metadata"] = {**(merged.get("metadata") or {}), **own}  # over the caller's context (a node's)
        return run_config(merged)  # what with_config() set is checked too

    # >>> async source
    async def _astart(self, config: dict[str, Any], input: object) -> AsyncCallbackManagerForChainRun | None:  # noqa: A002
        callbacks = config.get("callbacks")
        if callbacks is None:  # invoked inside a runnable (or a node) that carries callbacks
            parent = var_child_runnable_config.get()
            callbacks = parent.get("callbacks") if parent else None
        if not callbacks and not _tracing():
            return None
        manager = root_manager(AsyncCallbackManager, config, callbacks)
        name = config.get("run_name") or self._named("")
        run: AsyncCallbackManagerForChainRun = await manager.on_chain_start(
            None, input, name=name, run_id=config.get("run_id")
        )
        return run

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def _start(self, config: dict[str, Any], input: object) -> CallbackManagerForChainRun | None:  # noqa: A002
        callbacks = config.get("callbacks")
        if callbacks is None:  # invoked inside a runnable (or a node) that carries callbacks
            parent = var_child_runnable_config.get()
            callbacks = parent.get("callbacks") if parent else None
        if not callbacks and not _tracing():
            return None
        manager = root_manager(CallbackManager, config, callbacks)
        name = config.get("run_name") or self._named("")
        run: CallbackManagerForChainRun = manager.on_chain_start(
            None, input, name=name, run_id=config.get("run_id")
        )
        return run

    # <<< generated sync

    def with_config(self, config: RunnableConfig | None = None, **kwargs: Any) -> Self:
        """A copy of this graph whose runs use ``config`` (and ``kwargs``) under their own config."""
        extra = cast("RunnableConfig", {**(config or {}), **kwargs})  # kwargs are config keys
        merged = merge_configs(self.config, extra)
        return self.copy({"config": merged})

    def copy(self, update: Mapping[str, object] | None = None) -> Self:
        """A shallow copy of this graph, with the attributes in ``update`` replaced."""
        clone = _copy.copy(self)
        for key, value in (update or {}).items():
            setattr(clone, key, value)
        return clone

    # -- running, with a chain run when callbacks are on ------------------------------

    # >>> async source
    @overload
    async def ainvoke(
        self,
        input: InputT | Command[Any] | None,  # noqa: A002
        config: RunnableConfig | None = None,
        *,
        context: ContextT | None = None,
        stream_mode: Literal["values"] = ...,
        version: Literal["v2"],
        **kwargs: object,
    ) -> GraphOutput[OutputT]: ...

    @overload
    async def ainvoke(
        self,
        input: InputT | Command[Any] | None,  # noqa: A002
        config: RunnableConfig | None = None,
        *,
        context: ContextT | None = None,
        stream_mode: str | Sequence[str] = ...,
        version: Literal["v1", "v2"] = ...,
        **kwargs: object,
    ) -> dict[str, Any] | Any: ...

    async def ainvoke(
        self,
        input: InputT | Command[Any] | None,  # noqa: A002
        config: RunnableConfig | None = None,
        *,
        context: ContextT | None = None,
        **kwargs: object,
    ) -> object:
        """Run the graph (see ``Pregel.invoke``); reports a chain run when callbacks are configured.

        Returns ``GraphOutput[Output]`` with ``version="v2"``; with ``"v1"`` (the default) the output
        dict (``__interrupt__`` included when it paused), or a list of chunks for another ``stream_mode``.
        """
        cfg = self._config(config)
        run = None if kwargs.get("stream_mode", "values") != "values" else await self._astart(cfg, input)
        if run is None:
            # >>> sync only
            # if not kwargs and (out := self.run_fast(input, cfg, context)) is not SLOW:
            #     return out  # a plain run (pregel/_fast.py)
            # <<< sync only
            return await self._pregel("ainvoke")(input, cfg, context=context, **kwargs)
        try:
            out = await self._pregel("ainvoke")(
                input, _run_config(cfg, run.get_child()), context=context, **kwargs
            )
        except BaseException as exc:
            await arelease(run.run_id)
            await run.on_chain_error(exc)
            raise
        await arelease(run.run_id)  # node runs whose routers never ran (a step stopped by another task)
        await run.on_chain_end(out)
        return out

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    @overload
    def invoke(
        self,
        input: InputT | Command[Any] | None,  # noqa: A002
        config: RunnableConfig | None = None,
        *,
        context: ContextT | None = None,
        stream_mode: Literal["values"] = ...,
        version: Literal["v2"],
        **kwargs: object,
    ) -> GraphOutput[OutputT]: ...

    @overload
    def invoke(
        self,
        input: InputT | Command[Any] | None,  # noqa: A002
        config: RunnableConfig | None = None,
        *,
        context: ContextT | None = None,
        stream_mode: str | Sequence[str] = ...,
        version: Literal["v1", "v2"] = ...,
        **kwargs: object,
    ) -> dict[str, Any] | Any: ...

    def invoke(
        self,
        input: InputT | Command[Any] | None,  # noqa: A002
        config: RunnableConfig | None = None,
        *,
        context: ContextT | None = None,
        **kwargs: object,
    ) -> object:
        """Run the graph (see ``Pregel.invoke``); reports a chain run when callbacks are configured.

        Returns ``GraphOutput[Output]`` with ``version="v2"``; with ``"v1"`` (the default) the output
        dict (``__interrupt__`` included when it paused), or a list of chunks for another ``stream_mode``.
        """
        cfg = self._config(config)
        run = None if kwargs.get("stream_mode", "values") != "values" else self._start(cfg, input)
        if run is None:
            if not kwargs and (out := self.run_fast(input, cfg, context)) is not SLOW:
                return out  # a plain run (pregel/_fast.py)
            return self._pregel("invoke")(input, cfg, context=context, **kwargs)
        try:
            out = self._pregel("invoke")(input, _run_config(cfg, run.get_child()), context=context, **kwargs)
        except BaseException as exc:
            release(run.run_id)
            run.on_chain_error(exc)
            raise
        release(run.run_id)  # node runs whose routers never ran (a step stopped by another task)
        run.on_chain_end(out)
        return out

    # <<< generated sync

    def stream(
        self,
        input: InputT | Command[Any] | None,  # noqa: A002
        config: RunnableConfig | None = None,
        *,
        context: ContextT | None = None,
        **kwargs: Any,
    ) -> Iterator[Any]:
        """Stream the graph (see ``Pregel.stream``); reports a chain run when callbacks are configured."""
        cfg = self._config(config)
        run = self._start(cfg, input)
        if run is None:
            yield from self._pregel("stream")(input, cfg, context=context, **kwargs)
            return
        modes = _Modes(kwargs.pop("stream_mode", None) or getattr(self, "stream_mode", "values"), kwargs)
        inner = self._pregel("stream")
        events = inner(
            input, _run_config(cfg, run.get_child()), stream_mode=modes.asked, context=context, **kwargs
        )
        try:
            yield from _tapped(run, (item for event in events for item in modes.shape(event)))
        except BaseException as exc:
            release(run.run_id)
            run.on_chain_error(exc)
            raise
        release(run.run_id)
        run.on_chain_end(modes.output)

    async def astream(
        self,
        input: InputT | Command[Any] | None,  # noqa: A002
        config: RunnableConfig | None = None,
        *,
        context: ContextT | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        """Async :meth:`stream`."""
        cfg = self._config(config)
        run = await self._astart(cfg, input)
        if run is None:  # closing this stream closes the run at once (releasing its thread)
            async with aclosing(self._pregel("astream")(input, cfg, context=context, **kwargs)) as plain:
                async for event in plain:
                    yield event
            return
        modes = _Modes(kwargs.pop("stream_mode", None) or getattr(self, "stream_mode", "values"), kwargs)
        inner = self._pregel("astream")
        events = inner(
            input, _run_config(cfg, run.get_child()), stream_mode=modes.asked, context=context, **kwargs
        )
        try:
            async with aclosing(events), aclosing(_atapped(run, _ashaped(modes, events))) as items:
                async for item in items:
                    yield item
        except BaseException as exc:
            await arelease(run.run_id)
            await run.on_chain_error(exc)
            raise
        await arelease(run.run_id)
        await run.on_chain_end(modes.output)


async def _ashaped(modes: _Modes, events: AsyncIterator[object]) -> AsyncGenerator[object, None]:
    async for event in events:
        for item in modes.shape(event):
            yield item


def _tapped(run: CallbackManagerForChainRun, events: Iterator[object]) -> Iterator[object]:
    found = streamer(run)
    if found is None:
        return events
    tapped: Iterator[object] = found.tap_output_iter(run.run_id, events)  # the same items, passed through
    return tapped


def _atapped(
    run: AsyncCallbackManagerForChainRun, events: AsyncGenerator[object, None]
) -> AsyncGenerator[object, None]:
    found = streamer(run)
    if found is None:
        return events
    tapped: AsyncGenerator[object, None] = found.tap_output_aiter(run.run_id, events)  # passed through
    return tapped
