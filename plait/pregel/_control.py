"""Run-scoped runtime pieces: the run's context and store, its ``RunControl`` and server info.

Read once when a run starts (:func:`run_inputs`, :func:`control_of`, :func:`server_info_of`);
nodes see them through :class:`~plait.runtime.Runtime`. A run config may carry a runtime
under ``configurable["__pregel_runtime"]`` (LangGraph's slot, which servers seed): its
``context``, ``store`` and ``control`` are used when the run does not give its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Protocol, cast

from pydantic import BaseModel

from plait.pregel._thread import configurable_of
from plait.runtime import RunControl, Runtime, ServerInfo

__all__ = [
    "CONFIG_KEY_RUNTIME",
    "CONFIG_KEY_STRICT_RESUME",
    "coerce_context",
    "control_of",
    "drain_reason",
    "run_extras",
    "run_inputs",
    "server_info_of",
    "strict_resume",
    "usual_configurable",
]

CONFIG_KEY_RUNTIME = "__pregel_runtime"
"""``configurable`` key of a runtime given to the run from outside (LangGraph's name)."""
CONFIG_KEY_STRICT_RESUME = "__pregel_strict_resume"
"""``configurable`` key that turns on strict resume checks (LangGraph's name)."""


class _Graph(Protocol):
    """What a run reads of its graph here (a ``Pregel``'s store)."""

    @property
    def store(self) -> object: ...


def _slot(config: Mapping[str, object] | None) -> object:
    return configurable_of(config).get(CONFIG_KEY_RUNTIME)


def coerce_context(schema: object, context: object) -> object:
    """``context`` as the run's ``context_schema``: a dict becomes the dataclass / pydantic model.

    Raises:
        TypeError: a dict that does not fit the dataclass (missing or unknown fields).
        pydantic.ValidationError: a dict the pydantic model rejects.
    """
    if context is None or schema is None or not isinstance(context, dict):  # (per run: the builtin check)
        return context
    fields = cast("dict[str, object]", context)  # isinstance() leaves its keys and values Unknown
    if not isinstance(schema, type):
        return fields
    kind: type[object] = schema
    if issubclass(kind, BaseModel) or dataclasses.is_dataclass(kind):
        return kind(**fields)
    return fields


def run_inputs(graph: _Graph, config: Mapping[str, object] | None, context: object) -> tuple[object, object]:
    """The store and the (coerced) context a run of ``graph`` hands its nodes.

    A runtime in the config's slot supplies the store, and the context when none is given.
    """
    if context is not None:
        context = coerce_context(getattr(graph, "context_schema", None), context)
    slot = _slot(config)
    store = graph.store
    if slot is not None:
        if context is None:
            context = getattr(slot, "context", None)
        store = getattr(slot, "store", None) or store
    return store, context


def run_extras(
    config: Mapping[str, object] | None, given: object
) -> tuple[RunControl, ServerInfo | None, bool]:
    """:func:`control_of`, :func:`server_info_of` and :func:`strict_resume` of one run, in one pass.

    Raises:
        TypeError: ``control=`` is not a :class:`~plait.runtime.RunControl`.
    """
    configurable = configurable_of(config)
    if given is None and (not configurable or not configurable.keys() & _EXTRA_KEYS):  # the common case
        return RunControl(), None, False
    return control_of(config, given), server_info_of(config), strict_resume(config)


def usual_configurable(config: Mapping[str, Any]) -> bool:
    """The (checked) run config carries none of the keys :func:`run_extras` looks for."""
    configurable = config.get("configurable")
    return not configurable or not configurable.keys() & _EXTRA_KEYS


_EXTRA_KEYS = frozenset(
    {CONFIG_KEY_RUNTIME, CONFIG_KEY_STRICT_RESUME, "assistant_id", "graph_id", "langgraph_auth_user"}
)


def control_of(config: Mapping[str, object] | None, given: object) -> RunControl:
    """The run's control: the one given, the config slot's, or a new one.

    Raises:
        TypeError: ``control=`` is not a :class:`~plait.runtime.RunControl`.
    """
    if given is not None:
        if not isinstance(given, RunControl):
            raise TypeError(f"control must be a plait.runtime.RunControl, got {type(given).__name__}")
        return given
    slot = _slot(config)
    inherited = slot.control if isinstance(slot, Runtime) else None
    return inherited if inherited is not None else RunControl()


def server_info_of(config: Mapping[str, object] | None) -> ServerInfo | None:
    """What a LangGraph server put in ``configurable``: assistant, graph and user; else ``None``."""
    configurable = configurable_of(config)
    slot = _slot(config)
    assistant_id = configurable.get("assistant_id")
    graph_id = configurable.get("graph_id")
    user = configurable.get("langgraph_auth_user")
    if user is not None and not hasattr(user, "identity"):
        user = None
    if assistant_id is None and graph_id is None and user is None:
        return slot.server_info if isinstance(slot, Runtime) else None
    return ServerInfo(
        assistant_id=str(assistant_id) if assistant_id else "",
        graph_id=str(graph_id) if graph_id else "",
        user=user,
    )


def strict_resume(config: Mapping[str, object] | None) -> bool:
    """Whether the run checks ``Command(resume=...)`` strictly against the pending interrupts."""
    return bool(configurable_of(config).get(CONFIG_KEY_STRICT_RESUME, False))


def drain_reason(control: RunControl | None) -> str | None:
    """Why the run should stop before its next step (``None``: go on)."""
    if control is None or not control.drain_requested:
        return None
    return control.drain_reason or "shutdown"
