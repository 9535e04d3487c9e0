"""Callback managers of a graph's runs, as LangGraph configures them (:mod:`plait.pregel._traced`)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, TypeVar

from langchain_core.callbacks.base import BaseCallbackHandler, BaseCallbackManager, Callbacks
from langchain_core.callbacks.manager import (
    AsyncCallbackManager,
    AsyncCallbackManagerForChainRun,
    CallbackManager,
    CallbackManagerForChainRun,
)
from langchain_core.tracers._streaming import _StreamingCallbackHandler  # pyright: ignore[reportPrivateUsage]

__all__ = ["configure", "root_manager", "streamer"]

_M = TypeVar("_M", CallbackManager, AsyncCallbackManager)


def configure(  # noqa: PLR0913 - LangChain's configure, with a list of handlers understood
    manager: type[_M],
    config: Mapping[str, Any],
    callbacks: Callbacks,
    tags: list[str] | None = None,
    metadata: dict[str, object] | None = None,
    tracer: dict[str, object] | None = None,
) -> _M:
    """A callback manager of ``config`` (its tags and metadata, or ``metadata``) over ``callbacks``,
    which may be a list holding a parent run's manager and more handlers; ``tracer``: metadata
    only LangSmith's tracer records (langchain-core 1.x)."""
    handlers: list[BaseCallbackHandler] = []
    if isinstance(callbacks, (list, tuple)):  # a list may hold a parent run's manager (see _node_config)
        parents = [c for c in callbacks if isinstance(c, BaseCallbackManager)]
        handlers = [c for c in callbacks if not isinstance(c, BaseCallbackManager)]
        callbacks = parents[0] if parents else handlers
        handlers = handlers if parents else []
    extra: dict[str, Any] = {"langsmith_inheritable_metadata": tracer} if tracer else {}  # langchain-core 1.x
    out = manager.configure(
        callbacks,
        None,
        inheritable_tags=config.get("tags"),
        local_tags=tags,
        inheritable_metadata=config.get("metadata") if metadata is None else metadata,
        **extra,
    )
    for handler in handlers:
        out.add_handler(handler, inherit=True)
    return out


_PROPAGATED = ("thread_id", "checkpoint_id", "checkpoint_ns", "task_id", "run_id", "assistant_id", "graph_id")
"""``configurable`` keys a graph's run records in its metadata (when set and not there already)."""
_SECRET = ("key", "token", "secret", "password", "auth")
_TRACER_METADATA = "langsmith_inheritable_metadata" in inspect.signature(CallbackManager.configure).parameters


def _tracer_metadata(configurable: Mapping[str, object]) -> dict[str, object] | None:
    """The ``configurable`` values LangSmith's tracer records as metadata: scalars, not private
    (``__``), not named like a secret."""
    if not _TRACER_METADATA:
        return None
    out: dict[str, object] = {
        k: v
        for k, v in configurable.items()
        if not k.startswith("__")
        and isinstance(v, (str, int, float, bool))
        and not any(word in k.casefold() for word in _SECRET)
    }
    return out or None


def root_manager(manager: type[_M], config: Mapping[str, Any], callbacks: Callbacks) -> _M:
    """The callback manager of a graph's run, with LangGraph's metadata: the thread's keys of
    ``configurable`` (``thread_id``…), ``ls_integration``, and the other ``configurable``
    values for LangSmith's tracer (so it groups a thread's traces)."""
    configurable: Mapping[str, object] = config.get("configurable") or {}
    metadata: dict[str, object] = dict(config.get("metadata") or {})
    for key in _PROPAGATED:
        value = configurable.get(key)
        if value and key not in metadata:
            metadata[key] = value
    out = configure(manager, config, callbacks, None, metadata, _tracer_metadata(configurable))
    if "ls_integration" not in out.metadata:
        out.add_metadata({"ls_integration": "langgraph"})
    return out


def streamer(run: CallbackManagerForChainRun | AsyncCallbackManagerForChainRun) -> Any:
    """The handler that streams a run's output (``astream_events``, a ``_StreamingCallbackHandler``), if any."""
    for handler in run.handlers:
        if isinstance(handler, _StreamingCallbackHandler):
            return handler
    return None
