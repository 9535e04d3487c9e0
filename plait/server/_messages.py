"""Stream payloads as LangGraph's server sends them.

The ``messages`` stream mode of the API: ``messages/metadata``, ``messages/partial``,
``messages/complete``.  plait streams ``(message_or_chunk, metadata)`` pairs; chunks of one
message are added up so each ``messages/partial`` event carries the message so far, as a
whole message (``type: "ai"``, tool calls parsed), not as a chunk.

``debug`` checkpoints also carry ``checkpoint`` / ``parent_checkpoint`` (the config's ids), and
task results of ``debug`` / ``tasks`` are a ``{channel: value}`` dict (several writes to one
channel as ``{"$writes": [...]}``).
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage, BaseMessageChunk, message_chunk_to_message

from plait.server._wire import as_dict, as_list

__all__ = ["MessagesMode", "debug_payload"]


class MessagesMode:
    """Turns ``(message, metadata)`` pairs into the API's ``messages/*`` events."""

    def __init__(self) -> None:
        self.seen: dict[str, BaseMessage] = {}

    def events(self, pair: tuple[Any, dict[str, object]]) -> list[tuple[str, Any]]:
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
            total = previous + message if isinstance(previous, BaseMessageChunk) else message
            self.seen[key] = total
            out.append(("messages/partial", [message_chunk_to_message(total)]))
        else:
            self.seen[key] = message
            out.append(("messages/complete", [message]))
        return out


def _checkpoint(config: Any) -> dict[str, object] | None:
    conf = as_dict(as_dict(config).get("configurable"))
    if not conf.get("thread_id") or not conf.get("checkpoint_id"):
        return None
    out = {"checkpoint_id": conf["checkpoint_id"], "thread_id": conf["thread_id"]}
    if "checkpoint_ns" in conf:
        out["checkpoint_ns"] = conf["checkpoint_ns"] or ""
    if "checkpoint_map" in conf:
        out["checkpoint_map"] = conf["checkpoint_map"]
    return out


def debug_payload(chunk: Any) -> Any:
    """A ``debug`` event as LangGraph's server sends it."""
    if not isinstance(chunk, dict):
        return chunk
    event = as_dict(chunk)
    payload = event.get("payload")
    if event.get("type") != "checkpoint" or not isinstance(payload, dict):
        return event
    data = as_dict(payload)
    tasks: list[object] = []
    for item in as_list(data.get("tasks")):
        task: dict[str, object] = as_dict(item)
        state = as_dict(task.get("state"))
        if state.get("configurable"):
            item = {k: v for k, v in task.items() if k != "state"} | {"checkpoint": state["configurable"]}
        tasks.append(item)
    shaped = {
        **data,
        "checkpoint": _checkpoint(data.get("config")),
        "parent_checkpoint": _checkpoint(data.get("parent_config")),
        "tasks": tasks,
    }
    return {**event, "payload": shaped}
