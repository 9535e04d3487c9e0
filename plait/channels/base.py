"""The channel interface: merge one step's writes into a key's value."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from plait._schema import MISSING

__all__ = ["BaseChannel"]


class BaseChannel(ABC):
    """Merges the writes a key receives in one superstep.

    Channels are stateless and shared by every run of a compiled graph: the
    current value lives in the run's state dict and is passed in. ``MISSING``
    stands for "never written".

    Attributes:
        key: The state key this channel serves.
    """

    __slots__ = ("key",)

    def __init__(self, key: str) -> None:
        self.key = key

    def initial(self) -> Any:
        """The value the key holds before any write (``MISSING`` if none)."""
        return MISSING

    @abstractmethod
    def merge(self, current: Any, values: Sequence[Any], nodes: Sequence[str]) -> Any:
        """Return the new value after ``values`` were written by ``nodes``, in that order.

        Args:
            current: The value before this step, or ``MISSING``.
            values: The written values, ordered by writer node name.
            nodes: The writer of each value (for error messages).
        """
