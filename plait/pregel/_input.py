"""The graph input as writes: what ``invoke(input)`` and ``update_state(..., as_node="__input__")``
keep as the ``__start__`` task's pending writes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from plait.constants import START
from plait.errors import (
    ErrorCode,
    InvalidUpdateError,
    SerializationError,
    StrictModeError,
    create_error_message,
)
from plait.pregel._effects import blame
from plait.pregel._plan import Plan

__all__ = ["check_storable", "input_writes"]


def input_writes(plan: Plan, input: Any, node: str = START) -> list[tuple[str, Any]]:  # noqa: A002
    """The ``(key, value)`` writes of ``input`` (a dict or a state object): the input keys it sets.

    Raises:
        InvalidUpdateError: ``input`` is not a mapping or a state object.
        StrictModeError: strict mode, and ``input`` has keys the input schema does not declare.
    """
    if plan.input_channel is not None:  # a channel graph with one input channel: the input is its value
        return [(plan.input_channel, input)]
    if plan.input_make is not None and not isinstance(input, dict):
        input = plan.input_make(input)  # noqa: A001
    kind: type[object] = type(input)  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    if kind is not dict and not isinstance(input, Mapping):  # dict first: the ABC check is slow
        message = create_error_message(
            message=f"Expected dict, got {input}", error_code=ErrorCode.INVALID_GRAPH_NODE_RETURN_VALUE
        )
        raise InvalidUpdateError(message, node=node, value=input)
    values = cast("Mapping[str, Any]", input)  # isinstance() leaves it Mapping[Unknown, Unknown]
    keys = plan.input_keys
    if plan.strict:
        extra = [k for k in values if k not in keys]
        if extra:
            raise StrictModeError(
                f"The graph input has key(s) {extra} that the input schema does not declare "
                f"(declared: {list(keys)}); without strict mode they would be dropped silently.",
                key=extra[0],
                value=values[extra[0]],
            )
    return [(k, v) for k, v in values.items() if k in keys]


def check_storable(saver: Any, writes: list[tuple[str, Any]], step: int) -> None:
    """Serialize the input's writes (of the input checkpoint at ``step``) before the run stores anything.

    The input checkpoint and its writes are separate saver calls, stored one after the other by
    savers without transactions across calls: a write that cannot be stored must fail before the
    checkpoint is stored, or the thread would be left with an input checkpoint whose input is missing
    (which ``invoke(None)`` would then run). Only for savers whose writes are their ``serde``'s ``dumps``
    (``writes_by_serde``, plait's own). It serializes the input once more: a few microseconds for a message.

    Raises:
        SerializationError: a write cannot be stored (it names the key, and the graph input as its writer).
    """
    if not getattr(saver, "writes_by_serde", False):
        return
    for key, value in writes:
        try:
            saver.serde.dumps(value)
        except SerializationError as exc:
            err = SerializationError(f"Cannot store write to {key!r}: {exc}", key=key)
            raise blame(err, (), step) from exc
