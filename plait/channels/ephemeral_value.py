"""A value that lives for one step: written in a step, read by the next, then cleared."""

from __future__ import annotations

from collections.abc import Sequence

from plait._schema import MISSING
from plait.channels.base import BaseChannel, Value
from plait.errors import InvalidUpdateError

__all__ = ["EphemeralValue"]


class EphemeralValue(BaseChannel[Value, Value]):
    """Holds the value written in the previous step; a step that does not write it clears it.

    As a state field: ``Annotated[str, EphemeralValue(str)]`` (or ``Annotated[str, EphemeralValue]``).

    Args:
        typ: The value type.
        guard: Reject more than one write per step (else the last one wins).
    """

    __slots__ = ("guard",)

    def __init__(self, typ: object = None, guard: bool = True) -> None:
        super().__init__("", typ)
        self.guard = guard

    @property
    def volatile(self) -> bool:
        """Cleared by a step that does not write it."""
        return True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EphemeralValue) and other.guard == self.guard

    __hash__ = BaseChannel.__hash__

    def merge(self, current: Value, values: Sequence[Value], nodes: Sequence[str]) -> Value:
        """The value written this step; ``MISSING`` when none was.

        Raises:
            InvalidUpdateError: several writes in one step with ``guard=True``.
        """
        if not values:
            empty: Value = MISSING
            return empty
        if len(values) != 1 and self.guard:
            raise InvalidUpdateError(
                f"At key '{self.key}': EphemeralValue(guard=True) can receive only one value per step. "
                "Use guard=False if you want to store any one of multiple values.",
                key=self.key,
                value=list(values),
                nodes=tuple(nodes),
            )
        return values[-1]
