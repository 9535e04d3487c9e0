"""Overwrite semantics: a key without a reducer keeps the last value written."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from typing_extensions import Self

from plait._schema import MISSING
from plait.channels.base import BaseChannel, Value
from plait.channels.binop import as_overwrite
from plait.errors import EmptyChannelError, ErrorCode, InvalidUpdateError, create_error_message
from plait.types import Overwrite

__all__ = ["LastValue", "LastValueAfterFinish"]


class LastValue(BaseChannel[Value, Value]):
    """Stores the value written in a step; two writes in one step are an error.

    Args:
        typ: The value type (LangGraph's first argument); a ``str`` is taken as the key.
        key: The state key.
    """

    __slots__ = ()

    def __init__(self, typ: object = None, key: str = "") -> None:
        if isinstance(typ, str) and not key:  # plait's own LastValue(key)
            key = typ
            typ = None
        super().__init__(key, typ)

    def merge(self, current: Value, values: Sequence[Value], nodes: Sequence[str]) -> Value:
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
        value = as_overwrite(values[0])
        if isinstance(value, Overwrite):
            written: Value = value.value  # the caller's value, taken as it is
            return written
        return value


class LastValueAfterFinish(BaseChannel[Value, Value]):
    """Stores the last value written, readable only once the run finishes; reading consumes it.

    The runtime uses this for deferred nodes; it cannot serve a state key.
    """

    __slots__ = ("finished",)
    state_field = False

    def __init__(self, typ: object = None, key: str = "") -> None:
        super().__init__(key, typ)
        self.finished = False

    def merge(self, current: Value, values: Sequence[Value], nodes: Sequence[str]) -> Value:
        """The last written value (unchanged when nothing was written)."""
        return values[-1] if values else current

    def update(self, values: Sequence[Value]) -> bool:
        """Keep the last of ``values``; it is not readable until :meth:`finish`."""
        if not values:
            return False
        self.finished = False
        self.value = values[-1]
        return True

    def get(self) -> Value:
        """The value, once finished.

        Raises:
            EmptyChannelError: nothing was written, or the run has not finished.
        """
        if not self.finished:
            raise EmptyChannelError(f"Channel {self.key!r} is not readable before the run finishes")
        return super().get()

    def is_available(self) -> bool:
        """Whether a value was written and the run has finished."""
        return self.finished and self.value is not MISSING

    def checkpoint(self) -> object:
        """``(value, finished)``, or ``MISSING`` when empty."""
        return MISSING if self.value is MISSING else (self.value, self.finished)

    def from_checkpoint(self, checkpoint: Any) -> Self:
        """A new channel holding ``checkpoint`` (``(value, finished)``)."""
        clone = self.bind(self.key)
        clone.finished = False
        if checkpoint is not MISSING:
            clone.value, clone.finished = checkpoint
        return clone

    def consume(self) -> bool:
        """Clear the value once it was read after finishing."""
        if self.finished:
            self.finished, self.value = False, MISSING
            return True
        return False

    def finish(self) -> bool:
        """Make the value readable."""
        if not self.finished and self.value is not MISSING:
            self.finished = True
            return True
        return False
