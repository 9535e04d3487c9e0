"""object one of the values written in a step (for writers known to agree)."""

from __future__ import annotations

from collections.abc import Sequence

from plait._schema import MISSING
from plait.channels.base import BaseChannel, Value

__all__ = ["AnyValue"]


class AnyValue(BaseChannel[Value, Value]):
    """Holds the last value written in the last step; a step that writes none clears it.

    Unlike ``LastValue``, several writes in one step are allowed: they are assumed equal.

    Args:
        typ: The value type.
        key: The state key.
    """

    __slots__ = ()

    def __init__(self, typ: object = None, key: str = "") -> None:
        super().__init__(key, typ)

    @property
    def volatile(self) -> bool:
        """Cleared by a step that does not write it."""
        return True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AnyValue)

    __hash__ = BaseChannel.__hash__

    def merge(self, current: Value, values: Sequence[Value], nodes: Sequence[str]) -> Value:
        """The last of ``values``; ``MISSING`` when there are none."""
        return values[-1] if values else MISSING
