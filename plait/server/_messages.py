"""The ``messages`` stream mode of the API: ``messages/metadata``, ``messages/partial``, ``messages/complete``.

plait streams ``(message_or_chunk, metadata)`` pairs; chunks of one message are added up
so each ``messages/partial`` event carries the message so far.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage, BaseMessageChunk

__all__ = ["MessagesMode"]


class MessagesMode:
    """Turns ``(message, metadata)`` pairs into the API's ``messages/*`` events."""

    def __init__(self) -> None:
        self.seen: dict[str, Any] = {}

    def events(self, pair: tuple[Any, dict[str, Any]]) -> list[tuple[str, Any]]:
        """The events for one streamed pair."""
        message, metadata = pair
        if not isinstance(message, BaseMessage):
            return []
        key = message.id or str(id(message))
        out: list[tuple[str, Any]] = []
        if key not in self.seen:
            out.append(("messages/metadata", {key: {"metadata": metadata}}))
        if isinstance(message, BaseMessageChunk):
            previous = self.seen.get(key)
            total = message if previous is None else previous + message
            self.seen[key] = total
            out.append(("messages/partial", [total]))
        else:
            self.seen[key] = message
            out.append(("messages/complete", [message]))
        return out
