"""The subgraph lifecycle part of the v3 protocol, which plait does not implement.

The names exist (so code that imports them for type hints ports unchanged);
making any of these objects raises ``NotImplementedError``, and so does reading
``run.lifecycle`` or ``run.subgraphs``.
"""

from __future__ import annotations

from typing import Any, Literal, NoReturn

from typing_extensions import NotRequired, TypedDict

from plait.stream._types import ProtocolEvent, StreamTransformer
from plait.stream.run_stream import AsyncSubgraphRunStream, SubgraphRunStream

__all__ = [
    "AsyncSubgraphRunStream",
    "LifecyclePayload",
    "LifecycleTransformer",
    "SubgraphRunStream",
    "SubgraphStatus",
    "SubgraphTransformer",
]

SubgraphStatus = Literal["started", "completed", "failed", "interrupted", "drained"]
"""Where a subgraph run is in its life."""


class LifecyclePayload(TypedDict, total=False):
    """An item of ``run.lifecycle`` (not produced by plait)."""

    event: SubgraphStatus
    namespace: list[str]
    graph_name: NotRequired[str]
    trigger_call_id: NotRequired[str]
    cause: NotRequired[Any]
    error: NotRequired[str]


def _refuse(name: str) -> NoReturn:
    raise NotImplementedError(
        f"{name} (subgraph lifecycle of the v3 stream protocol) is not implemented by plait"
    )


class LifecycleTransformer(StreamTransformer):
    """``run.lifecycle`` in LangGraph: not implemented by plait (making one raises ``NotImplementedError``)."""

    required_stream_modes = ("tasks",)

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        _refuse("LifecycleTransformer")

    def init(self) -> dict[str, Any]:
        _refuse("LifecycleTransformer")

    def process(self, event: ProtocolEvent) -> bool:
        _refuse("LifecycleTransformer")


class SubgraphTransformer(StreamTransformer):
    """``run.subgraphs`` in LangGraph: not implemented by plait (making one raises ``NotImplementedError``)."""

    required_stream_modes = ("tasks",)

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        _refuse("SubgraphTransformer")

    def init(self) -> dict[str, Any]:
        _refuse("SubgraphTransformer")

    def process(self, event: ProtocolEvent) -> bool:
        _refuse("SubgraphTransformer")
