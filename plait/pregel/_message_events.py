"""``messages`` events as content-block protocol events (the v3 event stream's form).

A run whose config sets :data:`MESSAGE_EVENTS_KEY` (``stream_events(version="v3")``
does) streams each chat-model call as the events langchain-core's content-block
protocol defines (``message-start``, ``content-block-*``, ``message-finish``)
instead of message chunks. Messages a node returns whole are still emitted whole;
tool messages are not (the ``tools`` mode reports tool calls).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from uuid import UUID

from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.tracers._streaming import _V2StreamingCallbackHandler  # pyright: ignore[reportPrivateUsage]

from plait.pregel._messages import MessageStreamHandler, Meta
from plait.pregel._thread import configurable_of

__all__ = ["MESSAGE_EVENTS_KEY", "MessageEventHandler", "plain_messages"]

MESSAGE_EVENTS_KEY = "__pregel_stream_messages_v2"
"""``configurable`` key that asks for protocol events in ``messages`` mode (LangGraph's name)."""


def plain_messages(config: Mapping[str, object] | None) -> Mapping[str, object] | None:
    """``config`` without the request for protocol events: only typed (``version="v2"``) streams honour
    it, so a graph streamed plainly inside a node of a v3 run still gets message chunks."""
    configurable = configurable_of(config)
    if config is None or not configurable.get(MESSAGE_EVENTS_KEY):
        return config
    rest = {k: v for k, v in configurable.items() if k != MESSAGE_EVENTS_KEY}
    return {**config, "configurable": rest}


class MessageEventHandler(MessageStreamHandler, _V2StreamingCallbackHandler):
    """Forwards chat-model calls to the ``messages`` stream as ``(protocol_event, metadata)`` pairs.

    Being a ``_V2StreamingCallbackHandler`` makes langchain-core chat models called with
    ``invoke`` produce content-block events (``on_stream_event``). Tokens of an explicit
    ``model.stream()`` are not forwarded: its whole message is, when the call ends.
    """

    def on_llm_new_token(  # type: ignore[override]  # chunks are not this handler's output
        self, token: str, *, chunk: Any = None, run_id: UUID, **kwargs: Any
    ) -> None:
        """Ignore v1 chunks (the whole message follows in ``on_llm_end``)."""

    def on_stream_event(self, event: Mapping[str, Any], *, run_id: UUID, **kwargs: Any) -> None:
        """Emit one content-block event of a model call started in a node."""
        meta = self._runs.get(run_id)
        if meta is None:
            return
        self._streamed.add(run_id)
        self.emit((dict(event), {**meta, "run_id": str(run_id)}))  # type: ignore[arg-type]  # an event, not a message

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A model call that streamed events failed: its stream ends with an ``error`` event."""
        meta = self._runs.get(run_id)
        if meta is not None and run_id in self._streamed:
            self.emit(({"event": "error", "message": str(error)}, {**meta, "run_id": str(run_id)}))  # type: ignore[arg-type]
        super().on_llm_error(error, run_id=run_id, **kwargs)

    def emit_written(self, messages: Iterable[BaseMessage], meta: Meta) -> None:
        """Emit what a node returned, tool messages aside."""
        super().emit_written((m for m in messages if not isinstance(m, ToolMessage)), meta)
