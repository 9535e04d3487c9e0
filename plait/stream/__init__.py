"""The v3 event stream: ``graph.stream_events(input, version="v3")`` and its transformers.

A v3 run is a handle (:class:`GraphRunStream`, or :class:`AsyncGraphRunStream` from
``await graph.astream_events(..., version="v3")``) whose projections — ``run.values``,
``run.messages``, and those of the transformers given with ``transformers=[...]`` or
``compile(transformers=[...])`` — are :class:`StreamChannel` objects the caller
iterates; iterating the run yields every :class:`ProtocolEvent`.

Every run also has ``run.lifecycle`` (a :class:`LifecyclePayload` when a subgraph starts or
ends) and ``run.subgraphs`` (a :class:`SubgraphRunStream` handle per child subgraph), read off
the graph's ``tasks`` events, which stay out of the main log.
"""

from __future__ import annotations

from plait.stream._lifecycle import LifecycleTransformer, SubgraphTransformer
from plait.stream._types import LifecyclePayload, ProtocolEvent, StreamTransformer, SubgraphStatus
from plait.stream.run_stream import (
    AsyncGraphRunStream,
    AsyncSubgraphRunStream,
    GraphRunStream,
    SubgraphRunStream,
)
from plait.stream.stream_channel import StreamChannel
from plait.stream.transformers import (
    CheckpointsTransformer,
    CustomTransformer,
    DebugTransformer,
    MessagesTransformer,
    TasksTransformer,
    UpdatesTransformer,
    ValuesTransformer,
)

__all__ = [
    "AsyncGraphRunStream",
    "AsyncSubgraphRunStream",
    "CheckpointsTransformer",
    "CustomTransformer",
    "DebugTransformer",
    "GraphRunStream",
    "LifecyclePayload",
    "LifecycleTransformer",
    "MessagesTransformer",
    "ProtocolEvent",
    "StreamChannel",
    "StreamTransformer",
    "SubgraphRunStream",
    "SubgraphStatus",
    "SubgraphTransformer",
    "TasksTransformer",
    "UpdatesTransformer",
    "ValuesTransformer",
]
