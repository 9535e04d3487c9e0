"""Barriers: wait until every named writer has written (the runtime's join edges)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from typing_extensions import Self

from plait._schema import MISSING
from plait.channels.base import BaseChannel
from plait.errors import EmptyChannelError, InvalidUpdateError

__all__ = ["NamedBarrierValue", "NamedBarrierValueAfterFinish"]


class NamedBarrierValue(BaseChannel[Any, object]):  # holds the names seen; get() answers None
    """Available once each of ``names`` has been written; reading it (``consume``) resets it.

    Writes are names; the value is ``None``. It cannot serve a state key.

    Args:
        typ: The type of a name.
        names: The names to wait for.
    """

    __slots__ = ("names",)
    state_field = False

    def __init__(self, typ: object, names: set[object]) -> None:
        super().__init__("", typ)
        self.names = set(names)
        self.value = set[object]()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NamedBarrierValue) and other.names == self.names

    __hash__ = BaseChannel.__hash__

    def initial(self) -> set[object]:
        """No name seen yet."""
        return set[object]()

    def merge(self, current: set[object], values: Sequence[object], nodes: Sequence[str]) -> set[object]:
        """The names seen so far, ``values`` included.

        Raises:
            InvalidUpdateError: a value is not one of ``names``.
        """
        seen = set[object]() if current is MISSING else set(current)
        for value in values:
            if value not in self.names:
                raise InvalidUpdateError(
                    f"At key '{self.key}': Value {value} not in {self.names}", key=self.key
                )
            seen.add(value)
        return seen

    def update(self, values: Sequence[object]) -> bool:
        """Record the names written; return whether a new one was seen."""
        before = len(self.value)
        self.value = self.merge(self.value, values, ())
        return len(self.value) != before

    def get(self) -> None:
        """``None`` once every name was seen.

        Raises:
            EmptyChannelError: some names are still missing.
        """
        if not self.is_available():
            raise EmptyChannelError(
                f"Channel {self.key!r} still waits for {sorted(map(str, self.names - self.value))}"
            )
        return None

    def is_available(self) -> bool:
        """Whether every name was seen."""
        return bool(self.value == self.names)

    def checkpoint(self) -> object:
        """The names seen."""
        return self.value

    def from_checkpoint(self, checkpoint: Any) -> Self:
        """A new barrier that has seen the stored names."""
        clone = self.bind(self.key)
        clone.value = set[object]() if checkpoint is MISSING else set(checkpoint)
        return clone

    def consume(self) -> bool:
        """Reset once the waiting task ran."""
        if self.is_available():
            self.value = set[object]()
            return True
        return False


class NamedBarrierValueAfterFinish(NamedBarrierValue):
    """A :class:`NamedBarrierValue` that opens only when the run is about to finish (deferred nodes)."""

    __slots__ = ("finished",)

    def __init__(self, typ: object, names: set[object]) -> None:
        super().__init__(typ, names)
        self.finished = False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NamedBarrierValueAfterFinish) and other.names == self.names

    __hash__ = BaseChannel.__hash__

    def is_available(self) -> bool:
        """Whether every name was seen and the run is finishing."""
        return self.finished and super().is_available()

    def checkpoint(self) -> object:
        """``(names seen, finished)``."""
        return (self.value, self.finished)

    def from_checkpoint(self, checkpoint: Any) -> Self:
        """A new barrier in the stored state."""
        clone = self.bind(self.key)
        clone.value, clone.finished = (
            (set[object](), False) if checkpoint is MISSING else (set(checkpoint[0]), checkpoint[1])
        )
        return clone

    def consume(self) -> bool:
        """Reset once the deferred task ran."""
        if self.is_available():
            self.value, self.finished = set[object](), False
            return True
        return False

    def finish(self) -> bool:
        """Open the barrier when every name was seen."""
        if not self.finished and super().is_available():
            self.finished = True
            return True
        return False
