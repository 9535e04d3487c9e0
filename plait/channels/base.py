"""The channel interface: how the writes one state key receives in a step become its value.

A channel has two faces:

* the runtime's: :meth:`BaseChannel.merge` takes the current value and the step's
  writes and returns the new value. Channels used by a compiled graph hold no
  value; the run's state dict does, so one plan serves any number of runs;
* LangGraph's: :meth:`~BaseChannel.update`, :meth:`~BaseChannel.get`,
  :meth:`~BaseChannel.checkpoint`, :meth:`~BaseChannel.from_checkpoint` … keep a
  value in the channel object itself, built on ``merge``.
"""

from __future__ import annotations

import copy as _copy
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, Generic

from typing_extensions import Self, TypeVar

from plait._schema import MISSING
from plait.errors import EmptyChannelError

__all__ = ["BaseChannel"]

Value = TypeVar("Value", default=object)
"""The value a channel holds."""
Update = TypeVar("Update", default=Value)
"""One write to a channel."""


class BaseChannel(ABC, Generic[Value, Update]):
    """Merges the writes a key receives in one superstep.

    ``MISSING`` stands for "never written" (or "cleared").

    Attributes:
        key: The state key this channel serves.
        typ: The value type, where known.
        value: The value held through LangGraph's stateful API (``update``/``get``).
    """

    __slots__ = ("key", "typ", "value")

    state_field: ClassVar[bool] = True
    """The channel can serve a state key (barriers and after-finish channels cannot)."""

    def __init__(self, key: str = "", typ: object = None) -> None:
        self.key = key
        self.typ = typ
        self.value: Value = MISSING

    @property
    def volatile(self) -> bool:
        """A step that does not write the key still changes it (``merge`` runs with no values)."""
        return False

    @property
    def tracked(self) -> bool:
        """The value is saved in checkpoints."""
        return True

    def initial(self) -> Value:
        """The value the key holds before any write (``MISSING`` if none)."""
        empty: Value = MISSING  # the sentinel stands in for a value of any type
        return empty

    @abstractmethod
    def merge(self, current: Value, values: Sequence[Update], nodes: Sequence[str]) -> Value:
        """Return the new value after ``values`` were written by ``nodes``, in that order.

        Args:
            current: The value before this step, or ``MISSING``.
            values: The written values, ordered by writer node name (empty for a
                step that did not write a ``volatile`` channel).
            nodes: The writer of each value (for error messages).
        """

    def bind(self, key: str, typ: object = None) -> Self:
        """A fresh, empty copy of this channel serving ``key`` (a schema's prototype stays untouched)."""
        clone = _copy.copy(self)
        clone.key = key
        if clone.typ is None:
            clone.typ = typ
        clone.value = clone.initial()
        return clone

    # -- LangGraph's stateful API ------------------------------------------------

    @property
    def ValueType(self) -> object:  # noqa: N802 - LangGraph's name
        """The type of the value the channel holds."""
        return self.typ

    @property
    def UpdateType(self) -> object:  # noqa: N802 - LangGraph's name
        """The type of one write."""
        return self.typ

    def update(self, values: Sequence[Update]) -> bool:
        """Merge one step's writes (``[]``: a step that wrote nothing) into the held value.

        Returns:
            Whether the value changed.

        Raises:
            InvalidUpdateError: the writes are invalid for this channel.
        """
        if not values and not self.volatile:
            return False
        before = self.value
        self.value = self.merge(before, values, ())
        return bool(values) or self.value is not before

    def get(self) -> Value:
        """The held value.

        Raises:
            EmptyChannelError: nothing was written yet (or the value was cleared).
        """
        if self.value is MISSING:
            raise EmptyChannelError(f"Channel {self.key!r} is empty")
        return self.value

    def is_available(self) -> bool:
        """Whether :meth:`get` would return a value."""
        return self.value is not MISSING

    def checkpoint(self) -> object:
        """What a checkpoint stores for this channel (``MISSING`` when empty)."""
        return self.value

    def from_checkpoint(self, checkpoint: Any) -> Self:  # stored data, read back as the channel's value
        """A new channel like this one, holding ``checkpoint`` (``MISSING``: empty)."""
        clone = self.bind(self.key)
        if checkpoint is not MISSING:
            clone.value = checkpoint
        return clone

    def copy(self) -> Self:
        """A copy holding the same value."""
        clone = _copy.copy(self)
        value = self.value
        if isinstance(value, (list, set, dict)):
            clone.value = _copy.copy(self.value)
        return clone

    def consume(self) -> bool:
        """A task subscribed to this channel ran; return whether the value changed (default: no)."""
        return False

    def finish(self) -> bool:
        """The run is about to finish; return whether the value changed (default: no)."""
        return False
