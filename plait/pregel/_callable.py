"""Turn user callables into ``call(input, ctx)`` functions, once, at compile time.

The signature of a node is inspected here and never again: the returned
closure passes exactly the extra arguments the node declared (``config``,
``runtime``, ``store``, ``writer``).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from plait.pregel._context import TaskContext
from plait.pregel._thread import config_with
from plait.runtime import Runtime

__all__ = ["accepts_config", "make_call"]

_EXTRAS = ("config", "runtime", "store", "writer")


def _signature(fn: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def accepts_config(fn: Any) -> bool:
    """Whether ``fn`` has a parameter named ``config`` (it then receives the run config)."""
    sig = _signature(fn)
    return sig is not None and "config" in sig.parameters


def _extras(fn: Any) -> tuple[bool, tuple[str, ...]]:
    sig = _signature(fn)
    if sig is None:
        return False, ()
    params = list(sig.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    config_positional = len(positional) >= 2 and positional[1].name == "config"
    taken = set(map(id, positional[: 2 if config_positional else 1]))
    names = tuple(p.name for p in params if p.name in _EXTRAS and p.kind is not p.POSITIONAL_ONLY
                  and id(p) not in taken)
    return config_positional, names


def _kwargs(names: tuple[str, ...], ctx: TaskContext) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in names:
        if name == "config":
            out[name] = ctx.config
        elif name == "store":
            out[name] = ctx.store
        elif name == "writer":
            out[name] = ctx.writer
        else:
            out[name] = Runtime(context=ctx.context, store=ctx.store, stream_writer=ctx.writer)
    return out


def _subgraph_call(graph: Any) -> Callable[[Any, TaskContext], Any]:
    def call(state: Any, ctx: TaskContext) -> Any:
        config = ctx.config
        if graph.checkpointer is None:
            config = {k: v for k, v in config.items() if k != "configurable"}
        else:
            config = config_with(config, checkpoint_ns=ctx.node, checkpoint_id=None)
        return graph.invoke(state, config, context=ctx.context)

    return call


def _runnable_call(runnable: Any) -> Callable[[Any, TaskContext], Any]:
    def call(state: Any, ctx: TaskContext) -> Any:
        return runnable.invoke(state, ctx.config)

    return call


def _direct_call(fn: Any, config_positional: bool, names: tuple[str, ...]) -> Callable[[Any, TaskContext], Any]:
    if config_positional:
        def with_config(state: Any, ctx: TaskContext) -> Any:
            return fn(state, ctx.config, **_kwargs(names, ctx)) if names else fn(state, ctx.config)

        return with_config
    if names:
        def with_kwargs(state: Any, ctx: TaskContext) -> Any:
            return fn(state, **_kwargs(names, ctx))

        return with_kwargs

    def plain(state: Any, ctx: TaskContext) -> Any:
        return fn(state)

    return plain


def make_call(fn: Any) -> tuple[Callable[[Any, TaskContext], Any], bool, bool]:
    """Wrap ``fn`` as ``call(input, ctx)``.

    Returns:
        ``(call, is_async, is_subgraph)``.
    """
    from plait.pregel._pregel import Pregel

    if isinstance(fn, Pregel):
        return _subgraph_call(fn), False, True
    if not (inspect.isfunction(fn) or inspect.ismethod(fn) or inspect.isbuiltin(fn)) and hasattr(fn, "invoke"):
        if hasattr(fn, "ainvoke") and not hasattr(fn, "func"):
            return _runnable_call(fn), False, False
    method = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else type(fn).__call__
    is_async = inspect.iscoroutinefunction(method)
    config_positional, names = _extras(fn)
    call = _direct_call(fn, config_positional, names)
    return call, is_async, False


def run_coroutine(value: Any) -> Any:
    """Finish a coroutine returned by an async node run from the sync driver."""
    if inspect.isawaitable(value):
        return asyncio.run(_await(value))
    return value


async def _await(value: Any) -> Any:
    return await value
