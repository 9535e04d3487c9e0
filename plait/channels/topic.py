"""A topic: every write is appended to a list (a write that is a list adds each item)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from typing_extensions import Self

from plait._schema import MISSING
from plait.channels.base import BaseChannel

__all__ = ["Topic"]


def _flatten(values: Sequence[object]) -> Iterator[object]:
    for value in values:
        if isinstance(value, list):
            yield from value  # pyright: ignore[reportUnknownArgumentType]  # the items are user values
        else:
            yield value


class Topic(BaseChannel[list[object], object]):
    """Collects the values written to a key as a list.

    As a state field: ``Annotated[list[str], Topic(str, accumulate=True)]``.

    Args:
        typ: The type of one item.
        accumulate: Keep the items of earlier steps. Without it the key holds only the
            items written in the last step, and a step that writes none clears it.
    """

    __slots__ = ("accumulate",)

    def __init__(self, typ: object = None, accumulate: bool = False) -> None:
        super().__init__("", typ)
        self.accumulate = accumulate

    @property
    def volatile(self) -> bool:
        """A non-accumulating topic is cleared by a step that does not write it."""
        return not self.accumulate

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Topic) and other.accumulate == self.accumulate

    __hash__ = BaseChannel.__hash__

    @property
    def ValueType(self) -> object:  # noqa: N802 - LangGraph's name
        """``Sequence[typ]``."""
        return Sequence[self.typ]  # type: ignore[name-defined]  # a runtime type expression

    @property
    def UpdateType(self) -> object:  # noqa: N802 - LangGraph's name
        """``typ | list[typ]``."""
        return self.typ | list[self.typ]  # type: ignore[name-defined]  # a runtime type expression

    def merge(self, current: list[object], values: Sequence[object], nodes: Sequence[str]) -> list[object]:
        """The items of ``values`` appended to ``current`` (or alone, without ``accumulate``)."""
        new = list(_flatten(values))
        if self.accumulate and current is not MISSING:
            return [*current, *new] if new else current
        return new if new else MISSING

    def get(self) -> list[object]:
        """A copy of the items.

        Raises:
            EmptyChannelError: the topic holds no items.
        """
        return list(super().get())

    def checkpoint(self) -> object:
        """The items (an empty list when there are none)."""
        return [] if self.value is MISSING else self.value

    def from_checkpoint(self, checkpoint: Any) -> Self:
        """A new topic holding the stored items."""
        clone = self.bind(self.key)
        if checkpoint is not MISSING and checkpoint:
            clone.value = list(checkpoint)
        return clone
