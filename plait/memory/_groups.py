"""Tool-call groups: the units a history may only be cut between.

An ``AIMessage`` that requests tools and the ``ToolMessage`` answers to those
requests form one *group*. Chat-model providers reject a transcript where a
tool call has no answer, or where an answer has no call, so every memory helper
keeps or drops a group as a whole.

A history is split into *units*: contiguous index ranges that a cut must not
fall inside. A plain message is a unit of its own; a tool-call group spans from
the ``AIMessage`` to its last answering ``ToolMessage`` (including anything that
sits between them). Overlapping groups are merged into one unit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

__all__ = ["check_tool_groups", "tool_call_ids", "units"]

Span = tuple[int, int]
"""A half-open index range ``[start, end)`` into a message list."""


def tool_call_ids(message: BaseMessage) -> list[str]:
    """Return the ids of the tool calls an ``AIMessage`` requests.

    Args:
        message: Any message; only ``AIMessage`` instances request tools.

    Returns:
        The ``id`` of every entry in ``message.tool_calls`` that has one, in
        order; an empty list for other message types.
    """
    if not isinstance(message, AIMessage):
        return []
    # ToolCall read as a Mapping: its TypedDict is partly Unknown to pyright (langchain-core imports
    # typing.NotRequired, absent from Python 3.10), and .get() tolerates a missing "id"
    calls = cast("Sequence[Mapping[str, Any]]", message.tool_calls)
    return [call_id for call in calls if (call_id := call.get("id"))]


def _group_ends(messages: Sequence[BaseMessage]) -> list[int]:
    """For each index, the exclusive end of the group that starts there."""
    ends = [idx + 1 for idx in range(len(messages))]
    owner: dict[str, int] = {}
    for idx, message in enumerate(messages):
        if isinstance(message, AIMessage):
            for call_id in tool_call_ids(message):
                owner[call_id] = idx
        elif isinstance(message, ToolMessage):
            start = owner.get(message.tool_call_id)
            if start is not None:
                ends[start] = max(ends[start], idx + 1)
    return ends


def units(messages: Sequence[BaseMessage]) -> list[Span]:
    """Split a history into the units a cut may fall between.

    Args:
        messages: The history, oldest first.

    Returns:
        Half-open spans covering every index exactly once, in order. A cut at
        the start of any span keeps every tool-call group whole.
    """
    ends = _group_ends(messages)
    spans: list[Span] = []
    start = 0
    while start < len(messages):
        end = ends[start]
        probe = start
        while probe < end:  # a group may contain the start of another group
            end = max(end, ends[probe])
            probe += 1
        spans.append((start, end))
        start = end
    return spans


def _label(message: BaseMessage, idx: int) -> str:
    """A short human-readable name for a message in problem reports."""
    return f"{type(message).__name__} #{idx} (id={message.id!r})"


def check_tool_groups(messages: Sequence[BaseMessage]) -> list[str]:
    """List every broken tool-call group in a history.

    A history is well formed when each tool call of an ``AIMessage`` is
    answered by exactly one later ``ToolMessage`` and each ``ToolMessage``
    answers a call made by an earlier ``AIMessage``. A trailing ``AIMessage``
    whose tools have not run yet is reported too; callers that allow an
    in-flight call can ignore problems about the last message.

    Args:
        messages: The history, oldest first.

    Returns:
        One sentence per problem (answers without a call first, then calls
        without an answer, each in history order); empty when the history is
        well formed.
    """
    problems: list[str] = []
    pending: dict[str, tuple[int, BaseMessage]] = {}
    answered: set[str] = set()
    for idx, message in enumerate(messages):
        if isinstance(message, AIMessage):
            for call_id in tool_call_ids(message):
                pending[call_id] = (idx, message)
        elif isinstance(message, ToolMessage):
            call_id = message.tool_call_id
            if call_id in pending:
                del pending[call_id]
                answered.add(call_id)
            elif call_id in answered:
                problems.append(f"{_label(message, idx)} answers tool call {call_id!r} a second time")
            else:
                problems.append(
                    f"{_label(message, idx)} answers tool call {call_id!r}, "
                    "which no earlier AIMessage requested"
                )
    for call_id, (idx, message) in sorted(pending.items(), key=lambda item: item[1][0]):
        problems.append(f"{_label(message, idx)} requests tool call {call_id!r}, which has no ToolMessage")
    return problems
