"""``RunnableCallable`` (``langgraph._internal._runnable``): a sync/async function pair as a Runnable.

Code written on LangGraph (LangChain's ``create_agent`` among it) builds its nodes and routers
with it. The function receives, besides its input, the extras its signature names (``config``,
``writer``, ``store``, ``previous``, ``runtime``, ``error``), taken from the run's
:class:`~plait.runtime.Runtime`: the one in ``config["configurable"]["__pregel_runtime"]`` when
a caller put one there, else the running node's.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Optional, TypeAlias, TypeVar, Union, cast

from langchain_core.callbacks.base import BaseCallbackManager
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.base import RunnableLike as LCRunnableLike
from langchain_core.runnables.config import (
    ensure_config,
    get_async_callback_manager_for_config,
    get_callback_manager_for_config,
    patch_config,
    set_config_context,
)

from plait._context import running_task
from plait._internal._constants import CONF, CONFIG_KEY_NODE_ERROR, CONFIG_KEY_RUNTIME
from plait._internal._io_primitives import arun_in_context, run_in_context
from plait._schema import MISSING
from plait.errors import NodeError
from plait.store.base import BaseStore
from plait.types import StreamWriter

__all__ = ["RunnableCallable", "RunnableLike", "coerce_to_runnable", "is_async_callable"]

RunnableLike: TypeAlias = LCRunnableLike[Any, Any]
"""What a node or router may be: a Runnable, or a function LangChain can turn into one."""

_EMPTY = inspect.Parameter.empty
_Manager = TypeVar("_Manager", bound=BaseCallbackManager)
_CONFIG_HINTS: tuple[object, ...] = (
    RunnableConfig,
    "RunnableConfig",
    Optional[RunnableConfig],  # noqa: UP045 - matched against annotations as written
    "Optional[RunnableConfig]",
    "RunnableConfig | None",
    _EMPTY,
)
_WRITER_HINTS: tuple[object, ...] = (StreamWriter, "StreamWriter", _EMPTY)
_STORE_HINTS: tuple[object, ...] = (BaseStore, "BaseStore", _EMPTY)
_OPTIONAL_STORE_HINTS: tuple[object, ...] = (
    Optional[BaseStore],  # noqa: UP045
    Union[BaseStore, None],  # noqa: UP007
    "Optional[BaseStore]",
    "BaseStore | None",
)
_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def _hint_in(hint: object, hints: tuple[object, ...]) -> bool:
    return any(hint is h or (isinstance(hint, str) == isinstance(h, str) and hint == h) for h in hints)


def _no_writer(_: object) -> None:
    return None


def _accepted(fn: Callable[..., object]) -> dict[str, object]:
    """The extras ``fn`` declares, each with its default (``MISSING``: required)."""
    params = inspect.signature(fn).parameters
    out: dict[str, object] = {}
    for name, param in params.items():
        if param.kind not in _KINDS:
            continue
        hint = param.annotation
        if name == "config":
            if _hint_in(hint, _CONFIG_HINTS):
                out[name] = MISSING
            else:
                warnings.warn(
                    f"The 'config' parameter should be typed as 'RunnableConfig' or "
                    f"'RunnableConfig | None', not '{hint}'.",
                    UserWarning,
                    stacklevel=4,
                )
        elif name == "writer" and _hint_in(hint, _WRITER_HINTS):
            out[name] = _no_writer
        elif name == "store" and _hint_in(hint, _STORE_HINTS):
            out[name] = MISSING
        elif name == "store" and _hint_in(hint, _OPTIONAL_STORE_HINTS):
            out[name] = None
        elif name in ("previous", "runtime"):
            out[name] = MISSING
        elif name == "error" and _hint_in(hint, (NodeError, "NodeError")):
            out[name] = None
    return out


_RUNTIME_FIELDS = {"writer": "stream_writer", "store": "store", "previous": "previous"}


def _runtime_of(config: RunnableConfig) -> object:
    given = (config.get(CONF) or {}).get(CONFIG_KEY_RUNTIME)
    if given is not None:
        return given
    task = running_task()
    make = getattr(task, "runtime", None)
    return make() if callable(make) else None


class RunnableCallable(Runnable[Any, Any]):
    """A function (and optionally its async twin) as a Runnable, with LangGraph's extras injected.

    Args:
        func: The sync function, or ``None`` (then only the async API works).
        afunc: The async function, or ``None`` (``ainvoke`` then calls ``func``).
        name: The run's name (default: the function's).
        tags: Tags of the run when traced.
        trace: Make a chain run for each call (callbacks, LangSmith).
        recurse: A returned Runnable is invoked with the same input.
        explode_args: The input is ``(args, kwargs)`` to call the function with.
        **kwargs: Keyword arguments passed to every call.

    Raises:
        ValueError: neither ``func`` nor ``afunc`` is given.
    """

    def __init__(  # noqa: PLR0913 - LangGraph's signature
        self,
        func: Callable[..., object] | None,
        afunc: Callable[..., Awaitable[object]] | None = None,
        *,
        name: str | None = None,
        tags: Sequence[str] | None = None,
        trace: bool = True,
        recurse: bool = True,
        explode_args: bool = False,
        **kwargs: object,
    ) -> None:
        fn = func or afunc
        if fn is None:
            raise ValueError("At least one of func or afunc must be provided.")
        own = getattr(fn, "__name__", None)
        self.name = name if name is not None else (own if own != "<lambda>" else None)
        self.func = func
        self.afunc = afunc
        self.tags = tags
        self.kwargs = kwargs
        self.trace = trace
        self.recurse = recurse
        self.explode_args = explode_args
        self.func_accepts: dict[str, object] = _accepted(fn)

    def __repr__(self) -> str:
        shown = {
            k: v for k, v in self.__dict__.items() if k not in {"name", "func", "afunc", "kwargs", "trace"}
        }
        return f"{self.get_name()}({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

    def _call_args(
        self,
        input: Any,  # noqa: A002 - (args, kwargs) with explode_args
        config: RunnableConfig,
        kwargs: dict[str, object],
    ) -> tuple[Sequence[object], dict[str, object]]:
        args: Sequence[object]
        extra: Mapping[str, object]
        if self.explode_args:
            args, extra = input
            kwargs = {**self.kwargs, **extra, **kwargs}
        else:
            args, kwargs = (input,), {**self.kwargs, **kwargs}
        runtime: object = None
        for kw, default in self.func_accepts.items():
            if kw in kwargs:
                continue
            value: object = MISSING
            if kw == "config":
                value = config
            elif kw == "error":
                value = (config.get(CONF) or {}).get(CONFIG_KEY_NODE_ERROR, MISSING)
            else:
                runtime = runtime if runtime is not None else _runtime_of(config)
                if runtime is not None:
                    value = runtime if kw == "runtime" else getattr(runtime, _RUNTIME_FIELDS[kw], MISSING)
            if value is MISSING:
                if default is MISSING:
                    raise ValueError(
                        f"Missing required config key '{_RUNTIME_FIELDS.get(kw, kw)}' for '{self.name}'."
                    )
                value = default
            kwargs[kw] = value
        return args, kwargs

    # >>> async source
    async def ainvoke(self, input: object, config: RunnableConfig | None = None, **kwargs: object) -> Any:
        """Await ``afunc`` (sync: call ``func``), traced as a chain run when ``trace``; with no
        ``afunc``, the async form calls ``func`` (:meth:`invoke`).

        Raises:
            TypeError: (sync form) there is no sync function.
        """
        if self.afunc is None:
            # >>> async only
            return self.invoke(input, config, **kwargs)
            # <<< async only
            raise TypeError(  # only the sync form gets here (the async one has just called func)
                f'No synchronous function provided to "{self.name}".'
                "\nEither initialize with a synchronous function or invoke"
                " via the async API (ainvoke, astream, etc.)"
            )
        config = ensure_config(config)
        args, kw = self._call_args(input, config, kwargs)
        if not self.trace:
            ret = await self.afunc(*args, **kw)
        else:
            manager = _without_task_ns(get_async_callback_manager_for_config(config))
            run = await manager.on_chain_start(
                None, input, name=config.get("run_name") or self.get_name(), run_id=config.pop("run_id", None)
            )
            try:
                with set_config_context(patch_config(config, callbacks=run.get_child())) as context:
                    ret = await arun_in_context(context, self.afunc, *args, **kw)
            except BaseException as exc:
                await run.on_chain_error(exc)
                raise
            await run.on_chain_end(ret)
        if self.recurse and isinstance(ret, Runnable):
            return await ret.ainvoke(input, config)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        return ret

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def invoke(self, input: object, config: RunnableConfig | None = None, **kwargs: object) -> Any:
        """Await ``afunc`` (sync: call ``func``), traced as a chain run when ``trace``; with no
        ``afunc``, the async form calls ``func`` (:meth:`invoke`).

        Raises:
            TypeError: (sync form) there is no sync function.
        """
        if self.func is None:
            raise TypeError(  # only the sync form gets here (the async one has just called func)
                f'No synchronous function provided to "{self.name}".'
                "\nEither initialize with a synchronous function or invoke"
                " via the async API (ainvoke, astream, etc.)"
            )
        config = ensure_config(config)
        args, kw = self._call_args(input, config, kwargs)
        if not self.trace:
            ret = self.func(*args, **kw)
        else:
            manager = _without_task_ns(get_callback_manager_for_config(config))
            run = manager.on_chain_start(
                None, input, name=config.get("run_name") or self.get_name(), run_id=config.pop("run_id", None)
            )
            try:
                with set_config_context(patch_config(config, callbacks=run.get_child())) as context:
                    ret = run_in_context(context, self.func, *args, **kw)
            except BaseException as exc:
                run.on_chain_error(exc)
                raise
            run.on_chain_end(ret)
        if self.recurse and isinstance(ret, Runnable):
            return ret.invoke(input, config)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        return ret

    # <<< generated sync


def _without_task_ns(manager: _Manager) -> _Manager:
    """``manager`` without the task's ``checkpoint_ns`` in its metadata: LangGraph's traced functions
    do not record it (LangChain's runnables do)."""
    for metadata in (manager.metadata, manager.inheritable_metadata):
        if "checkpoint_ns" in metadata and metadata["checkpoint_ns"] == metadata.get(
            "langgraph_checkpoint_ns"
        ):
            del metadata["checkpoint_ns"]
    return manager


def is_async_callable(func: object) -> bool:
    """Whether calling ``func`` gives a coroutine (a coroutine function or such a ``__call__``)."""
    kind: type[object] = type(func)
    call: object = vars(kind).get("__call__")
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(call)


def coerce_to_runnable(thing: Any, *, name: str | None, trace: bool) -> Runnable[Any, Any]:
    """``thing`` as a Runnable: itself, a :class:`RunnableCallable` of a function, or a parallel map of a dict.

    Raises:
        TypeError: ``thing`` is none of these.
    """
    if isinstance(thing, Runnable):
        return thing  # pyright: ignore[reportUnknownVariableType]
    if is_async_callable(thing):
        return RunnableCallable(None, thing, name=name, trace=trace)
    if callable(thing):
        return RunnableCallable(thing, name=name or getattr(thing, "__name__", None), trace=trace)
    if isinstance(thing, dict):
        from langchain_core.runnables import RunnableParallel

        return RunnableParallel(cast("dict[str, Any]", thing))
    raise TypeError(f"Expected a Runnable, callable or dict. Instead got an unsupported type: {type(thing)}")
