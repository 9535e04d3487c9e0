"""Executing a run for the thread event protocol (langgraph-sdk 0.4's ``client.threads.stream``).

A run started by a protocol command (``run.start``, ``input.respond``) carries
:data:`PROTOCOL_KEY` in its ``configurable`` (LangGraph's server marks its runs so). It streams
as ``astream_events(version="v3")`` does and publishes each protocol event in its log: the event
name is ``method|ns…`` (as the other runs' events), the data the event's ``params``. A chat model's
message events keep only their content-block event (its metadata is the run's config, again);
whole messages a node returned are not message events of the protocol and are left out.
:mod:`plait.server._protocol` turns these logs into what the stream routes send.
"""

from __future__ import annotations

from typing import Any

from plait.server._stream import Broker
from plait.server._wire import as_dict, as_list, as_str

__all__ = ["PROTOCOL_KEY", "is_protocol_run", "stream_protocol"]

PROTOCOL_KEY = "__event_streaming_v2"
"""The ``configurable`` key marking a protocol run (LangGraph's name for it)."""


def is_protocol_run(doc: dict[str, object]) -> bool:
    """Whether the run (its API document) was made by a protocol command."""
    configurable = as_dict(as_dict(as_dict(doc.get("kwargs")).get("config")).get("configurable"))
    return bool(configurable.get(PROTOCOL_KEY))


def _published(event: dict[str, object]) -> tuple[str, dict[str, object]] | None:
    """The log entry of one v3 event (``None``: not an event of the protocol)."""
    params = dict(as_dict(event["params"]))
    method = as_str(event["method"])
    if method == "messages":
        data: Any = params.get("data")
        head = as_dict(data[0] if isinstance(data, (list, tuple)) and data else data)
        if not isinstance(head.get("event"), str):
            return None  # a whole message, not a chat model's content-block event
        params["data"] = head
    suffix = "".join(f"|{part}" for part in as_list(params.get("namespace")))
    return method + suffix, params


async def stream_protocol(  # noqa: PLR0913 - the parts of a run
    broker: Broker,
    run_id: str,
    graph: Any,
    value: Any,
    config: dict[str, object],
    options: dict[str, object],
) -> Any:
    """Run ``graph`` as a v3 event stream, publishing its events to the run's log; its last root values.

    Raises:
        Exception: what the graph raised (the caller records the run's failure).
    """
    run = await graph.astream_events(value, config, version="v3", **options)
    values: Any = None
    async with run:
        async for event in run:
            entry = _published(event)
            if entry is None:
                continue
            name, params = entry
            if event["method"] == "values" and not params.get("namespace"):
                values = params.get("data")
            broker.publish(run_id, name, params)
    return values
