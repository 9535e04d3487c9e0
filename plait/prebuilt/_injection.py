"""Tool arguments the graph fills in: state, store, the tool runtime (never shown to the model).

A tool declares them in its signature (``Annotated[dict, InjectedState]``,
``Annotated[BaseStore, InjectedStore()]``, ``runtime: ToolRuntime``); the
schema the model sees leaves them out (langchain-core drops every
``InjectedToolArg``), and :func:`inject` puts the real values into the call
right before the tool runs, overwriting anything the model sent under those
names.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Generic, Union, cast, get_args, get_origin

from langchain_core.messages import ToolCall
from langchain_core.tools import BaseTool, InjectedToolArg
from langchain_core.tools.base import (
    _DirectlyInjectedToolArg,  # pyright: ignore[reportPrivateUsage]  # the marker langchain-core hides from tool schemas
    get_all_basemodel_annotations,
)
from typing_extensions import TypeVar

from plait.pregel._tool_events import emit_output_delta

__all__ = ["InjectedArgs", "InjectedState", "InjectedStore", "ToolRuntime", "find_injected", "inject"]

StateT = TypeVar("StateT", default=dict[str, Any])
ContextT = TypeVar("ContextT", default=None)


class InjectedState(InjectedToolArg):
    """Marks a tool argument that receives the graph state (or one key of it).

    ``Annotated[dict, InjectedState]`` receives the whole state,
    ``Annotated[list, InjectedState("messages")]`` the value of one key.

    Args:
        field: The state key to pass, or ``None`` for the whole state.
    """

    def __init__(self, field: str | None = None) -> None:
        self.field = field


class InjectedStore(InjectedToolArg):
    """Marks a tool argument that receives the store given to ``compile(store=...)``."""


@dataclass
class ToolRuntime(_DirectlyInjectedToolArg, Generic[ContextT, StateT]):
    """What a tool parameter annotated ``ToolRuntime`` (or named ``runtime``) receives.

    Attributes:
        state: The graph state the tool call was made in.
        context: The run's ``context`` (``context_schema``).
        config: The run config.
        stream_writer: Emits ``custom`` stream events.
        tool_call_id: The id of the tool call being answered.
        store: The long-term store, or ``None``.
        tools: Every tool of the ``ToolNode``.
    """

    state: StateT
    context: ContextT
    config: dict[str, Any]
    stream_writer: Callable[[Any], None]
    tool_call_id: str | None
    store: object
    tools: list[BaseTool] = field(default_factory=lambda: list[BaseTool]())
    execution_info: object = None
    """Reserved (LangGraph's execution info); always ``None`` in plait."""
    server_info: object = None
    """Reserved (LangGraph's server info); always ``None`` in plait."""

    def emit_output_delta(self, delta: object) -> None:
        """Stream a piece of this tool call's output (a ``tool-output-delta`` event of the ``tools``
        stream mode, read by ``ToolCallTransformer``); does nothing when the run does not stream tools."""
        emit_output_delta(delta)


@dataclass(frozen=True, slots=True)
class InjectedArgs:
    """Which arguments of one tool the graph fills in (found once, when the ``ToolNode`` is built)."""

    state: dict[str, str | None]
    """Argument name -> state key (``None``: the whole state)."""
    store: str | None
    """The argument that receives the store."""
    runtime: str | None
    """The argument that receives the :class:`ToolRuntime`."""
    keys: frozenset[str]
    """Every injected argument (a model-sent value under these names is dropped)."""
    optional_state: frozenset[str]
    """State arguments with a default: a missing state key leaves them out instead of failing."""

    def __bool__(self) -> bool:
        return bool(self.state or self.store or self.runtime or self.keys)


def _is_marker(arg: object, kind: type[object]) -> bool:
    if isinstance(arg, kind) or (isinstance(arg, type) and issubclass(arg, kind)):
        return True
    origin = get_origin(arg)
    if origin is Union or origin is Annotated:
        return any(_is_marker(a, kind) for a in get_args(arg))
    return isinstance(origin, type) and issubclass(origin, kind)


def _marker(annotation: object, kind: type[object]) -> object:
    """The ``kind`` marker in ``annotation`` (an instance, or ``True`` for a bare class), or ``None``.

    Raises:
        ValueError: ``kind`` appears more than once in one annotation.
    """
    found = [a for a in get_args(annotation) if _is_marker(a, kind)]
    if len(found) > 1:
        raise ValueError(
            f"A tool argument should not be annotated with {kind.__name__} more than once. Found: {found}"
        )
    if found:
        return found[0]
    return True if _is_marker(annotation, kind) else None


def _is_injected(annotation: object) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, _DirectlyInjectedToolArg):
        return True
    origin = get_origin(annotation)
    if isinstance(origin, type) and issubclass(origin, _DirectlyInjectedToolArg):
        return True
    return origin is Annotated and any(
        isinstance(a, InjectedToolArg) or (isinstance(a, type) and issubclass(a, InjectedToolArg))
        for a in get_args(annotation)[1:]
    )


def _annotations(tool: BaseTool) -> tuple[dict[str, object], object]:
    schema = tool.get_input_schema()
    fn = getattr(tool, "func", None) or getattr(tool, "coroutine", None)
    hints = typing.get_type_hints(fn, include_extras=True) if fn is not None else {}
    return {**hints, **get_all_basemodel_annotations(schema)}, schema


def find_injected(tool: BaseTool) -> InjectedArgs:
    """Find the injected arguments of ``tool`` from its input schema and its function's hints.

    Raises:
        ValueError: an argument carries the same marker twice.
    """
    annotations, schema = _annotations(tool)
    fields: dict[str, Any] = getattr(schema, "model_fields", {}) or {}
    state: dict[str, str | None] = {}
    store: str | None = None
    runtime: str | None = "runtime" if "runtime" in annotations else None
    keys: set[str] = set()
    optional: set[str] = set()
    for name, annotation in annotations.items():
        if _is_injected(annotation):
            keys.add(name)
        if found := _marker(annotation, InjectedState):
            key = found.field if isinstance(found, InjectedState) else None
            state[name] = key
            info = fields.get(name)
            if key and info is not None and not info.is_required():
                optional.add(name)
        if _marker(annotation, InjectedStore):
            store = name
        if _marker(annotation, ToolRuntime):
            runtime = name
    return InjectedArgs(state, store, runtime, frozenset(keys), frozenset(optional))


def _state_values(
    call: ToolCall, state: object, injected: InjectedArgs, messages_key: str
) -> dict[str, object]:
    """Raises: ValueError, KeyError, AttributeError (the state lacks what the tool asks for)."""
    wanted = list(injected.state.values())
    if isinstance(state, list):
        if (len(wanted) == 1 and wanted[0] == messages_key) or wanted[0] is None:
            state = {messages_key: cast("Sequence[object]", state)}
        else:
            message = f"Invalid input to ToolNode. Tool {call['name']} requires graph state dict as input."
            if any(wanted):
                message += f" State should contain fields {', '.join(w for w in wanted if w)}."
            raise ValueError(message)
    out: dict[str, Any] = {}
    for arg, key in injected.state.items():
        if not key:
            out[arg] = state
        elif isinstance(state, dict):
            if key in state:
                out[arg] = state[key]
            elif arg not in injected.optional_state:
                raise KeyError(key)
        elif hasattr(state, key):
            out[arg] = getattr(state, key)
        elif arg not in injected.optional_state:
            raise AttributeError(key)
    return out


def inject(
    call: ToolCall, runtime: ToolRuntime[Any, Any], injected: InjectedArgs, messages_key: str
) -> ToolCall:
    """A copy of ``call`` whose injected arguments hold the graph's values.

    Raises:
        ValueError: the tool wants the store and the graph has none, or wants state keys
            from a plain message list.
        KeyError: the state lacks a key the tool asks for.
    """
    if not injected:
        return call
    values = _state_values(call, runtime.state, injected, messages_key) if injected.state else {}
    if injected.store:
        if runtime.store is None:
            raise ValueError(
                "Cannot inject store into tools with InjectedStore annotations - "
                "please compile your graph with a store."
            )
        values[injected.store] = runtime.store
    if injected.runtime:
        values[injected.runtime] = runtime
    args = {k: v for k, v in call["args"].items() if k not in injected.keys}
    return {**call, "args": {**args, **values}}
