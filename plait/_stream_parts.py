"""The typed stream parts of ``stream(..., version="v2")``, re-exported by :mod:`plait.types`.

Each part is a dict ``{"type": mode, "ns": namespace, "data": ...}``; check ``part["type"]``
to narrow :data:`StreamPart` to one of them.
"""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

from langchain_core.messages import AnyMessage
from langchain_core.runnables import RunnableConfig
from typing_extensions import NotRequired, TypeAliasType, TypedDict

from plait._snapshot import Interrupt, StateSnapshot

StateT = TypeVar("StateT")
OutputT = TypeVar("OutputT")  # plait.typing's defaults to StateT, out of scope in a part's own generics

__all__ = [
    "CheckpointPayload",
    "CheckpointStreamPart",
    "CheckpointTask",
    "CustomStreamPart",
    "DebugPayload",
    "DebugStreamPart",
    "MessagesStreamPart",
    "StreamPart",
    "TaskPayload",
    "TaskResultPayload",
    "TasksStreamPart",
    "UpdatesStreamPart",
    "ValuesStreamPart",
]


class TaskPayload(TypedDict):
    """A task starting (``tasks`` mode): its id, node name, input and the channels that started it."""

    id: str
    name: str
    input: Any
    triggers: list[str]
    metadata: NotRequired[dict[str, Any]]


class TaskResultPayload(TypedDict):
    """A task ending (``tasks`` mode): its error message or ``None``, interrupts and writes by key."""

    id: str
    name: str
    error: str | None
    interrupts: list[dict[str, Any]]
    result: dict[str, Any]


class CheckpointTask(TypedDict):
    """A task listed in a :class:`CheckpointPayload` (``error``, or ``result``/``interrupts``)."""

    id: str
    name: str
    error: NotRequired[str]
    result: NotRequired[Any]
    interrupts: NotRequired[list[dict[str, Any]]]
    state: StateSnapshot | RunnableConfig | None


class CheckpointPayload(TypedDict, Generic[StateT]):
    """A saved checkpoint (``checkpoints`` mode): config, metadata, values, next nodes, tasks."""

    config: RunnableConfig | None
    metadata: dict[str, Any]
    values: StateT
    next: list[str]
    parent_config: RunnableConfig | None
    tasks: list[CheckpointTask]


class _DebugCheckpoint(TypedDict, Generic[StateT]):
    step: int
    timestamp: str
    type: Literal["checkpoint"]
    payload: CheckpointPayload[StateT]


class _DebugTask(TypedDict):
    step: int
    timestamp: str
    type: Literal["task"]
    payload: TaskPayload


class _DebugTaskResult(TypedDict):
    step: int
    timestamp: str
    type: Literal["task_result"]
    payload: TaskResultPayload


DebugPayload = TypeAliasType(
    "DebugPayload",
    _DebugCheckpoint[StateT] | _DebugTask | _DebugTaskResult,
    type_params=(StateT,),
)
"""A ``debug`` event: a checkpoint, a task start or a task result (check ``type``)."""


class ValuesStreamPart(TypedDict, Generic[OutputT]):
    """``values`` mode: the whole state after a step, and the interrupts pending then."""

    type: Literal["values"]
    ns: tuple[str, ...]
    data: OutputT
    interrupts: tuple[Interrupt, ...]


class UpdatesStreamPart(TypedDict):
    """``updates`` mode: each node's update (``__interrupt__`` for interrupts)."""

    type: Literal["updates"]
    ns: tuple[str, ...]
    data: dict[str, Any]


class MessagesStreamPart(TypedDict):
    """``messages`` mode: a ``(message chunk, metadata)`` pair."""

    type: Literal["messages"]
    ns: tuple[str, ...]
    data: tuple[AnyMessage, dict[str, Any]]


class CustomStreamPart(TypedDict):
    """``custom`` mode: what a node passed to its stream writer."""

    type: Literal["custom"]
    ns: tuple[str, ...]
    data: Any


class CheckpointStreamPart(TypedDict, Generic[StateT]):
    """``checkpoints`` mode: a checkpoint as it is saved."""

    type: Literal["checkpoints"]
    ns: tuple[str, ...]
    data: CheckpointPayload[StateT]


class TasksStreamPart(TypedDict):
    """``tasks`` mode: a task starting or ending."""

    type: Literal["tasks"]
    ns: tuple[str, ...]
    data: TaskPayload | TaskResultPayload


class DebugStreamPart(TypedDict, Generic[StateT]):
    """``debug`` mode: checkpoints and tasks, with step and timestamp."""

    type: Literal["debug"]
    ns: tuple[str, ...]
    data: DebugPayload[StateT]


StreamPart = TypeAliasType(
    "StreamPart",
    ValuesStreamPart[OutputT]
    | UpdatesStreamPart
    | MessagesStreamPart
    | CustomStreamPart
    | CheckpointStreamPart[StateT]
    | TasksStreamPart
    | DebugStreamPart[StateT],
    type_params=(StateT, OutputT),
)
"""Any part of a ``version="v2"`` stream (check ``part["type"]``)."""
