"""``DeltaChannel``: a reducer that folds a whole step's writes in one call.

LangGraph stores such a channel as deltas (the writes) instead of whole values. plait's
savers already store every key that way (only what changed is written, see
``docs/storage.md``), so here it is a reducer channel: ``snapshot_frequency`` is checked
and kept for compatibility but changes nothing about storage.
"""

from __future__ import annotations

import copy as _copy
from collections.abc import Callable, Mapping, MutableMapping, MutableSequence, MutableSet, Sequence, Set
from typing import Any, TypeGuard, get_origin

from plait._schema import MISSING
from plait.channels.base import BaseChannel, Update, Value
from plait.channels.binop import as_overwrite
from plait.errors import ErrorCode, InvalidUpdateError, create_error_message
from plait.types import Overwrite

__all__ = ["DeltaChannel"]

_ABSTRACT: dict[object, type] = {
    Sequence: list,
    MutableSequence: list,
    Set: set,
    MutableSet: set,
    Mapping: dict,
    MutableMapping: dict,
}


def _is_delta(value: object) -> TypeGuard[DeltaChannel[object, object]]:
    return isinstance(value, DeltaChannel)


class DeltaChannel(BaseChannel[Value, Update]):
    """Folds the writes of a step into the value with ``reducer(value, [write, ...])``.

    The value starts as ``typ()`` (an empty list by default). ``Overwrite(x)`` sets the value to ``x`` (``None``: ``typ()``) and the step's
    other writes are ignored.

    Args:
        reducer: ``(value, writes) -> value``; it should give the same result whether writes
            come in one batch or in several (``r(r(v, xs), ys) == r(v, xs + ys)``).
        typ: The value type (``list`` when not given).
        snapshot_frequency: Kept for LangGraph compatibility; a positive number.

    Raises:
        ValueError: ``snapshot_frequency`` is not positive.
    """

    __slots__ = ("reducer", "snapshot_frequency")

    def __init__(
        self,
        reducer: Callable[[Value, Sequence[Update]], Value],
        typ: object = None,
        *,
        snapshot_frequency: int = 100,
    ) -> None:
        if snapshot_frequency <= 0:
            raise ValueError(f"snapshot_frequency must be a positive int, got {snapshot_frequency!r}")
        super().__init__("", typ)
        self.reducer = reducer
        self.snapshot_frequency = snapshot_frequency

    def __eq__(self, other: object) -> bool:
        return (
            _is_delta(other)
            and other.reducer == self.reducer
            and other.snapshot_frequency == self.snapshot_frequency
        )

    __hash__ = BaseChannel.__hash__

    def _empty(self) -> Value:
        typ = get_origin(self.typ) or self.typ
        typ = _ABSTRACT.get(typ, typ)
        cls: type[Any] = typ if isinstance(typ, type) else list
        empty: Value = cls()  # an empty instance of the declared type
        return empty

    def initial(self) -> Value:
        """An empty value of ``typ``."""
        return self._empty()

    def merge(self, current: Value, values: Sequence[Update], nodes: Sequence[str]) -> Value:
        """``reducer(current, values)`` (``current`` empty: ``typ()``); an ``Overwrite`` wins.

        Raises:
            InvalidUpdateError: two ``Overwrite`` values in one step.
        """
        if not values:
            return current
        found = [v for v in map(as_overwrite, values) if isinstance(v, Overwrite)]
        if len(found) > 1:
            message = create_error_message(
                message="Can receive only one Overwrite value per super-step.",
                error_code=ErrorCode.INVALID_CONCURRENT_GRAPH_UPDATE,
            )
            raise InvalidUpdateError(message, key=self.key, value=found[1], nodes=tuple(nodes))
        if found:
            value: Value | None = found[0].value  # the caller's value, taken as it is
            return self._empty() if value is None else _copy.copy(value)
        return self.reducer(self._empty() if current is MISSING else current, list(values))
