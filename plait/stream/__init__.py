"""The v3 event stream: ``graph.stream_events(input, version="v3")`` and its transformers.

A v3 run is a handle (:class:`GraphRunStream`, or :class:`AsyncGraphRunStream` from
``await graph.astream_events(..., version="v3")``) whose projections — ``run.values``,
``run.messages``, and those of the transformers given with ``transformers=[...]`` or
``compile(transformers=[...])`` — are :class:`StreamChannel` objects the caller
iterates; iterating the run yields every :class:`ProtocolEvent`.

Not implemented by plait: the subgraph lifecycle part of the protocol. ``LifecycleTransformer``,
``SubgraphTransformer``, ``SubgraphRunStream`` and ``AsyncSubgraphRunStream`` can be imported
(``LifecyclePayload`` and ``SubgraphStatus`` are plain types), but making one, or reading
``run.lifecycle`` / ``run.subgraphs``, raises ``NotImplementedError``.
"""

from __future__ import annotations

from plait.stream._types import ProtocolEvent, StreamTransformer
from plait.stream._unimplemented import (
    AsyncSubgraphRunStream,
    LifecyclePayload,
    LifecycleTransformer,
    SubgraphRunStream,
    SubgraphStatus,
    SubgraphTransformer,
)
from plait.stream.run_stream import AsyncGraphRunStream, GraphRunStream
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
