"""Type guards for values that arrive as ``object``: ``isinstance`` alone leaves their items unknown.

Each guard is the ``isinstance`` check it names; the item types it states are what the
code reads the value as (the values are user data: items are ``object``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeGuard

__all__ = ["is_dict", "is_list", "is_mapping", "is_sequence", "is_str_dict", "is_str_mapping"]


def is_list(value: object) -> TypeGuard[list[object]]:
    """``isinstance(value, list)``."""
    return isinstance(value, list)


def is_sequence(value: object) -> TypeGuard[list[object] | tuple[object, ...]]:
    """``isinstance(value, (list, tuple))``."""
    return isinstance(value, (list, tuple))


def is_str_dict(value: object) -> TypeGuard[dict[str, object]]:
    """``isinstance(value, dict)``, for a dict keyed by names (a state, a config, an object's ``__dict__``)."""
    return isinstance(value, dict)


def is_str_mapping(value: object) -> TypeGuard[Mapping[str, object]]:
    """``isinstance(value, Mapping)``, for a mapping keyed by names (an event's data, metadata)."""
    return isinstance(value, Mapping)


def is_mapping(value: object) -> TypeGuard[Mapping[object, object]]:
    """``isinstance(value, Mapping)``, keys and values unknown."""
    return isinstance(value, Mapping)


def is_dict(value: object) -> TypeGuard[dict[object, object]]:
    """``isinstance(value, dict)``, keys and values unknown."""
    return isinstance(value, dict)
