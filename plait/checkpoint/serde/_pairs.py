"""Values the serializer rewrites before encoding: dicts with non-string keys, and tuples that stay tuples.

MessagePack has no tuple: a tuple is stored as a list and reads back as a list (as LangGraph's
serializer does), except where a list cannot stand: a dict key or a set member (hashable), which
is stored as a tuple record and reads back as a tuple.
"""

from __future__ import annotations

from typing import Any, cast

__all__ = ["Key", "Pairs", "hashable", "wrap_odd_dicts"]


class Pairs:
    """A dict with non-string keys, stored as a list of ``[key, value]`` pairs."""

    __slots__ = ("items",)

    def __init__(self, items: list[list[Any]]) -> None:
        self.items = items


class Key:
    """A tuple that must read back as a tuple (a dict key, a set member): its items, keys themselves."""

    __slots__ = ("items",)

    def __init__(self, items: list[Any]) -> None:
        self.items = items


def hashable(obj: Any) -> Any:
    """``obj``, with tuples (nested ones too) marked to read back as tuples."""
    if type(obj) is tuple:
        return Key([hashable(v) for v in cast("tuple[object, ...]", obj)])
    return obj


def wrap_odd_dicts(obj: Any) -> Any:
    """Replace dicts with non-string keys by :class:`Pairs` (only on the slow path)."""
    kind = cast("type[object]", type(obj))  # pyright takes type() of an Any for type[Unknown]
    if kind is dict:
        if any(type(k) is not str for k in obj):
            return Pairs([[hashable(k), wrap_odd_dicts(v)] for k, v in obj.items()])
        return {k: wrap_odd_dicts(v) for k, v in obj.items()}
    if kind is list or kind is tuple:
        return [wrap_odd_dicts(v) for v in obj]
    return obj
