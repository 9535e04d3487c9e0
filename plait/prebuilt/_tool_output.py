"""What a tool returned, checked and shaped into the ``ToolNode``'s output."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal, cast

from langchain_core.messages import RemoveMessage, ToolCall, ToolMessage, convert_to_messages
from langchain_core.tools.base import TOOL_MESSAGE_BLOCK_TYPES

from plait.graph.message import REMOVE_ALL_MESSAGES
from plait.types import Command, Send

__all__ = ["InputKind", "Output", "combine", "msg_content_output", "normalize"]

InputKind = Literal["list", "dict", "tool_calls"]
"""How the ``ToolNode`` was called: a message list, a state, or bare tool calls."""

Output = ToolMessage | Command[object] | list[ToolMessage | Command[object]]
"""The result of one tool call."""


def msg_content_output(output: object) -> str | list[dict[str, object]]:
    """Tool output as ``ToolMessage`` content: text and content blocks as they are, the rest as JSON.

    Args:
        output: What the tool returned.
    """
    if isinstance(output, str):
        return output
    blocks = _content_blocks(output)
    if blocks is not None:
        return blocks
    try:
        return json.dumps(output, ensure_ascii=False)
    except Exception:  # noqa: BLE001 - anything json cannot encode is shown as text
        return str(output)


def _content_blocks(output: object) -> list[dict[str, object]] | None:
    """``output`` when it is a list of tool-message content blocks, else ``None``."""
    if not isinstance(output, list):
        return None
    items = cast("Sequence[object]", output)
    if all(
        isinstance(x, dict) and cast("dict[str, object]", x).get("type") in TOOL_MESSAGE_BLOCK_TYPES
        for x in items
    ):
        return cast("list[dict[str, object]]", output)
    return None


def as_command(value: object) -> Command[object] | None:
    """``value`` if it is a ``Command``, else ``None``."""
    return value if isinstance(value, Command) else None  # pyright: ignore[reportUnknownVariableType]  # any Command[...] will do


def _check_command(
    command: Command[Any], call: ToolCall, kind: InputKind, key: str, *, terminator: bool = True
) -> Command[object]:
    """Raises: ValueError (the update has the wrong shape, or answers no tool call)."""
    update = command.update
    if isinstance(update, dict):
        if kind not in ("dict", "tool_calls"):
            raise ValueError(
                f"Tools can provide a dict in Command.update only when using dict with '{key}' key as "
                f"ToolNode input, got: {update} for tool '{call['name']}'"
            )
        state = copy.deepcopy(cast("dict[str, Any]", update))
        messages = convert_to_messages(state.get(key, []))
        command = replace(command, update=state)
    elif isinstance(update, list):
        if kind != "list":
            raise ValueError(
                "Tools can provide a list of messages in Command.update only when using list of messages "
                f"as ToolNode input, got: {update} for tool '{call['name']}'"
            )
        updates = copy.deepcopy(list(cast("Sequence[Any]", update)))
        messages = convert_to_messages(updates)
        command = replace(command, update=updates)
    else:
        return command
    if messages == [RemoveMessage(id=REMOVE_ALL_MESSAGES)]:
        return command
    answered = False
    for message in messages:
        if isinstance(message, ToolMessage) and message.tool_call_id == call["id"]:
            message.name = call["name"]
            answered = True
    if terminator and command.graph is None and not answered:
        example = (
            '`Command(update={"messages": [ToolMessage("Success", tool_call_id=tool_call_id), ...]}, ...)`'
            if kind == "dict"
            else '`Command(update=[ToolMessage("Success", tool_call_id=tool_call_id), ...], ...)`'
        )
        raise ValueError(
            f"Expected to have a matching ToolMessage in Command.update for tool '{call['name']}', got: "
            f"{messages}. Every tool call (LLM requesting to call a tool) in the message history MUST have "
            "a corresponding ToolMessage. You can fix it by modifying the tool to return "
            f"{example}."
        )
    return command


def _check_list(
    items: list[Any], call: ToolCall, kind: InputKind, key: str
) -> list[ToolMessage | Command[Any]]:
    """Raises: ValueError (not exactly one message answers the call)."""
    expected = call["id"]
    count = 0
    for item in items:
        if isinstance(item, ToolMessage):
            count += item.tool_call_id == expected
        elif (command := as_command(item)) is not None and isinstance(command.update, dict):
            update = cast("dict[str, Any]", command.update)  # pyright: ignore[reportUnknownMemberType,reportUnknownVariableType]  # checked: a dict
            answers: Sequence[Any] = update.get(key) or ()
            count += sum(isinstance(m, ToolMessage) and m.tool_call_id == expected for m in answers)
    if count != 1:
        raise ValueError(
            f"Tool {call['name']} returned a list with {count} messages bound to tool_call_id "
            f"{expected!r}; expected exactly one terminating ToolMessage."
        )
    out: list[ToolMessage | Command[Any]] = []
    for item in items:
        if (command := as_command(item)) is not None:
            out.append(_check_command(command, call, kind, key, terminator=False))
        else:
            message: ToolMessage = item
            message.content = cast("Any", msg_content_output(message.content))
            out.append(message)
    return out


def normalize(response: Any, call: ToolCall, kind: InputKind, key: str) -> Output:
    """Check what one tool call returned.

    Raises:
        TypeError: the tool returned something other than a message, a ``Command`` or a list of them.
        ValueError: a ``Command`` answers no tool call, or has the wrong shape for the input.
    """
    if (command := as_command(response)) is not None:
        return _check_command(command, call, kind, key)
    if isinstance(response, ToolMessage):
        response.content = cast("Any", msg_content_output(response.content))
        return response
    if isinstance(response, list):
        items = list(cast("Sequence[object]", response))
        if all(isinstance(r, (Command, ToolMessage)) for r in items):
            return _check_list(items, call, kind, key)
        raise TypeError(
            f"Tool {call['name']} returned a list with invalid element types: expected all Command or ToolMessage"
        )
    raise TypeError(f"Tool {call['name']} returned unexpected type: {type(response)}")


def _flatten(outputs: Sequence[Output]) -> list[ToolMessage | Command[object]]:
    flat: list[ToolMessage | Command[object]] = []
    for output in outputs:
        if isinstance(output, list):
            flat.extend(output)
        else:
            flat.append(output)
    return flat


def combine(outputs: Sequence[Output], kind: InputKind, key: str, *, in_graph: bool) -> Any:
    """The ``ToolNode``'s result: the messages (as a list or ``{key: [...]}``), or commands and updates.

    Commands that send to the parent graph are merged into one. Inside a running plait
    graph, plain updates next to commands are returned as ``Command(update=...)``.
    """
    flat = _flatten(outputs)
    if not any(isinstance(o, Command) for o in flat):
        return flat if kind == "list" else {key: flat}
    combined: list[object] = []
    parent: Command[Any] | None = None
    for output in flat:
        if not isinstance(output, Command):
            update: Any = [output] if kind == "list" else {key: [output]}
            combined.append(Command(update=update) if in_graph else update)
            continue
        goto: Any = output.goto
        targets: list[Any] = list(cast("Sequence[Any]", goto)) if isinstance(goto, list) else []
        sends = isinstance(goto, list) and all(isinstance(s, Send) for s in targets)
        if output.graph == Command.PARENT and sends:
            earlier: list[object] = list(cast("Sequence[object]", parent.goto)) if parent is not None else []
            merged = [*earlier, *targets]
            parent = Command(graph=Command.PARENT, goto=merged)
        else:
            combined.append(output)
    if parent is not None:
        combined.append(parent)
    return combined
