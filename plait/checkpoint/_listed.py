"""Cache entries for values whose tuples read back as lists.

The savers keep the value they stored (its list of items) to hand it back without decoding.
A tuple in it is stored as a list (MessagePack has none; LangGraph reads it back as a list
too), so such a value is cached as its encoded bytes instead and decoded when read: a read
gives the same value from the cache as from the row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from plait.checkpoint._delta import Entry

__all__ = ["as_read", "tuple_counter", "tuples_listed"]


def _none() -> int:
    return 0


def tuple_counter(dumps: Callable[[object], bytes]) -> Callable[[], int]:
    """What counts the tuples ``dumps`` (a :class:`~plait.checkpoint.serde.Serializer`'s) stored as
    lists so far: its serializer's ``tuples_listed``, or a function answering 0 for another ``dumps``."""
    count = cast("Callable[[], int] | None", getattr(getattr(dumps, "__self__", None), "tuples_listed", None))
    return count if callable(count) else _none


def tuples_listed(dumps: Callable[[object], bytes]) -> int:
    """How many tuples ``dumps`` (a :class:`~plait.checkpoint.serde.Serializer`'s) stored as lists so far."""
    return tuple_counter(dumps)()


def as_read(entry: Entry, dumps: Callable[[object], bytes], mark: int) -> Entry:
    """``entry``, or an entry decoding the value again when encoding it stored a tuple (``mark``: the count before)."""
    if entry.items is None or tuples_listed(dumps) == mark:
        return entry
    return Entry(None, dumps(entry.items), 0)
