"""Overwrite semantics: a key without a reducer keeps the last value written."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from plait.channels.base import BaseChannel
from plait.errors import ErrorCode, InvalidUpdateError, create_error_message
from plait.types import Overwrite

__all__ = ["LastValue"]


class LastValue(BaseChannel):
    """Stores the value written in a step; two writes in one step are an error."""

    __slots__ = ()

    def merge(self, current: Any, values: Sequence[Any], nodes: Sequence[str]) -> Any:
        """Return the single written value.

        Raises:
            InvalidUpdateError: more than one node wrote this key in the same step.
        """
        if len(values) != 1:
            message = create_error_message(
                message=f"At key '{self.key}': Can receive only one value per step. "
                "Use an Annotated key to handle multiple values.",
                error_code=ErrorCode.INVALID_CONCURRENT_GRAPH_UPDATE,
            )
            raise InvalidUpdateError(message, key=self.key, value=list(values), nodes=tuple(nodes))
        value = values[0]
        return value.value if isinstance(value, Overwrite) else value
