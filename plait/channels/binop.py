"""Reducer semantics: ``Annotated[T, f]`` folds each write into the value with ``f(old, new)``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar, cast

from plait._schema import MISSING, zero_factory
from plait.channels.base import BaseChannel, Value
from plait.errors import ErrorCode, InvalidUpdateError, create_error_message
from plait.types import Overwrite

__all__ = ["BinaryOperatorAggregate"]


class _Zero:
    __slots__ = ()


_W = TypeVar("_W")

ZERO = _Zero()
"""Default ``factory``: the zero value of ``typ`` (``list()``, ``int()``…), if it has one."""


def as_overwrite(value: _W) -> _W | Overwrite:
    """``value``, or the ``Overwrite`` its JSON form ``{"__overwrite__": x}`` stands for (from an API client)."""
    checked: object = value
    if type(checked) is dict:
        pairs = cast("dict[str, object]", checked)
        if len(pairs) == 1 and Overwrite.type in pairs:
            return Overwrite(pairs[Overwrite.type])
    return value


class BinaryOperatorAggregate(BaseChannel[Value, Value]):
    """Folds writes into the value with a reducer, starting from a zero value.

    ``BinaryOperatorAggregate(int, operator.add)`` (LangGraph's form) starts from
    ``int()``; plait's compiler passes ``(key, reducer, factory)``.

    When the annotation has no zero value (``Optional[int]``, ``Literal``) the
    first write is stored as is. ``Overwrite(x)`` sets the value to ``x``
    without calling the reducer. Exceptions raised by the reducer propagate
    unchanged.

    Attributes:
        reducer: The ``f(old, new)`` function.
        factory: Builds the starting value, or ``None``.
    """

    __slots__ = ("factory", "reducer")

    def __init__(
        self,
        typ: object,
        reducer: Callable[[Value, Value], Value],
        factory: Callable[[], Value] | None | _Zero = ZERO,
    ) -> None:
        key = ""
        if isinstance(typ, str):  # plait's own form: (key, reducer, factory)
            key = typ
            typ = None
        super().__init__(key, typ)
        self.reducer = reducer
        self.factory = zero_factory(typ) if isinstance(factory, _Zero) else factory
        self.value = self.initial()

    def initial(self) -> Value:
        """A fresh zero value (or declared default), or ``MISSING``."""
        return MISSING if self.factory is None else self.factory()

    def merge(self, current: Value, values: Sequence[Value], nodes: Sequence[str]) -> Value:
        """Fold ``values`` into ``current``.

        An ``Overwrite`` among the values wins the step: the other writes are ignored.

        Raises:
            InvalidUpdateError: two ``Overwrite`` values in one step.
        """
        reducer = self.reducer
        overwrite: Overwrite | None = None
        for written in values:
            value = as_overwrite(written)  # the JSON form becomes an Overwrite
            if isinstance(value, Overwrite):
                if overwrite is not None:
                    message = create_error_message(
                        message="Can receive only one Overwrite value per super-step.",
                        error_code=ErrorCode.INVALID_CONCURRENT_GRAPH_UPDATE,
                    )
                    raise InvalidUpdateError(message, key=self.key, value=value, nodes=tuple(nodes))
                overwrite = value
        if overwrite is not None:  # an Overwrite wins the whole step
            new: Value = overwrite.value  # the caller's value, taken as it is
            return new
        for value in values:
            current = value if current is MISSING else reducer(current, value)
        return current
