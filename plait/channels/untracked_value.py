"""A value that is never saved: it lives only as long as the run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from typing_extensions import Self

from plait._schema import MISSING
from plait.channels.base import BaseChannel, Value
from plait.errors import InvalidUpdateError

__all__ = ["UntrackedValue"]


class UntrackedValue(BaseChannel[Value, Value]):
    """Holds the last value written, and is left out of every checkpoint.

    For run-scoped resources (a connection, a lock) that cannot or should not be
    stored: ``Annotated[Session, UntrackedValue]``. A run that resumes from a
    checkpoint starts without it.

    Args:
        typ: The value type.
        guard: Reject more than one write per step (else the last one wins).
    """

    __slots__ = ("guard",)

    def __init__(self, typ: object = None, guard: bool = True) -> None:
        super().__init__("", typ)
        self.guard = guard

    @property
    def tracked(self) -> bool:
        """Never saved."""
        return False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UntrackedValue) and other.guard == self.guard

    __hash__ = BaseChannel.__hash__

    def merge(self, current: Value, values: Sequence[Value], nodes: Sequence[str]) -> Value:
        """The last value written.

        Raises:
            InvalidUpdateError: several writes in one step with ``guard=True``.
        """
        if len(values) != 1 and self.guard:
            raise InvalidUpdateError(
                f"At key '{self.key}': UntrackedValue(guard=True) can receive only one value per step. "
                "Use guard=False if you want to store any one of multiple values.",
                key=self.key,
                value=list(values),
                nodes=tuple(nodes),
            )
        return values[-1] if values else current

    def checkpoint(self) -> object:
        """Always ``MISSING``: the value is never saved."""
        return MISSING

    def from_checkpoint(self, checkpoint: Any) -> Self:
        """A new, empty channel (whatever ``checkpoint`` holds)."""
        return self.bind(self.key)
