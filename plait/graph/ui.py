"""Generative UI messages: a node pushes UI components to the client (``custom`` stream) and state.

Keep them in the state under a key merged by :func:`ui_message_reducer`::

    class State(TypedDict):
        ui: Annotated[list[AnyUIMessage], ui_message_reducer]

    def node(state: State) -> dict:
        push_ui_message("weather", {"city": "Paris"})  # streamed, and added to state["ui"]
        return {}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, cast
from uuid import uuid4

from langchain_core.messages import AnyMessage
from typing_extensions import TypedDict

from plait.pregel._context import current_task

__all__ = [
    "AnyUIMessage",
    "RemoveUIMessage",
    "UIMessage",
    "delete_ui_message",
    "push_ui_message",
    "ui_message_reducer",
]


class UIMessage(TypedDict):
    """A UI component to render: its ``name``, ``props`` and ``metadata`` (``merge``, ``run_id``…)."""

    type: Literal["ui"]
    id: str
    name: str
    props: dict[str, Any]
    metadata: dict[str, Any]


class RemoveUIMessage(TypedDict):
    """Removes the UI message with this ``id``."""

    type: Literal["remove-ui"]
    id: str


AnyUIMessage = UIMessage | RemoveUIMessage


def _message_id(message: AnyMessage | Mapping[str, object] | None) -> object:
    if isinstance(message, Mapping):
        return message.get("id")
    return getattr(message, "id", None)


def push_ui_message(  # noqa: PLR0913 - LangGraph's signature
    name: str,
    props: dict[str, Any],
    *,
    id: str | None = None,  # noqa: A002 - LangGraph's name
    metadata: dict[str, Any] | None = None,
    message: AnyMessage | None = None,
    state_key: str | None = "ui",
    merge: bool = False,
) -> UIMessage:
    """Stream a UI message on ``stream_mode="custom"`` and write it to the state key ``state_key``.

    Args:
        name: The UI component to render.
        props: Its properties.
        id: The message id (default: a new UUID); pushing the same id again replaces the message.
        metadata: Extra metadata.
        message: A chat message the UI belongs to (its id goes in ``metadata["message_id"]``).
        state_key: The state key holding UI messages (``None``: stream only).
        merge: Merge ``props`` into those of the message with the same id instead of replacing them.

    Raises:
        RuntimeError: called outside a running graph node.
    """
    ctx = current_task()
    config = ctx.node_config
    message_id = _message_id(message)
    evt: UIMessage = {
        "type": "ui",
        "id": id or str(uuid4()),
        "name": name,
        "props": props,
        "metadata": {
            "merge": merge,
            "run_id": config.get("run_id"),
            "tags": config.get("tags"),
            "name": config.get("run_name"),
            **(metadata or {}),
            **({"message_id": message_id} if message_id else {}),
        },
    }
    ctx.writer(evt)
    if state_key:
        ctx.pushed.append((state_key, evt))
    return evt


def delete_ui_message(id: str, *, state_key: str = "ui") -> RemoveUIMessage:  # noqa: A002 - LangGraph's name
    """Stream the removal of UI message ``id`` and write it to ``state_key`` (the reducer drops it).

    Raises:
        RuntimeError: called outside a running graph node.
    """
    ctx = current_task()
    evt: RemoveUIMessage = {"type": "remove-ui", "id": id}
    ctx.writer(evt)
    ctx.pushed.append((state_key, evt))
    return evt


def ui_message_reducer(
    left: list[AnyUIMessage] | AnyUIMessage,
    right: list[AnyUIMessage] | AnyUIMessage,
) -> list[AnyUIMessage]:
    """Merge UI messages: a new id is appended, a known id replaced (or its props merged with
    ``metadata["merge"]``), and a ``remove-ui`` message drops its id.

    Raises:
        ValueError: a ``remove-ui`` message names an id that is not in ``left``.
    """
    merged = list(left) if isinstance(left, list) else [left]
    news = right if isinstance(right, list) else [right]
    index = {m.get("id"): i for i, m in enumerate(merged)}
    removed: set[object] = set()
    for msg in news:
        msg_id = msg.get("id")
        at = index.get(msg_id)
        if at is None:
            if msg.get("type") == "remove-ui":
                raise ValueError(
                    f"Attempting to delete an UI message with an ID that doesn't exist ('{msg_id}')"
                )
            index[msg_id] = len(merged)
            merged.append(msg)
            continue
        if msg.get("type") == "remove-ui":
            removed.add(msg_id)
            continue
        removed.discard(msg_id)
        ui = cast("UIMessage", msg)
        if ui.get("metadata", {}).get("merge", False):
            old = cast("UIMessage", merged[at])
            ui = ui.copy()
            ui["props"] = {**old.get("props", {}), **ui["props"]}
        merged[at] = ui
    return [m for m in merged if m.get("id") not in removed]
