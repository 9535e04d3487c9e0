"""Values as JSON: the one check every store runs before it writes anything."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, cast

from plait.store.base import InvalidValueError

__all__ = ["check_value", "decode_value", "encode_value"]

_SCALARS = (str, int, bool, type(None))
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
"""Compact JSON text (one encoder: ``json.dumps`` with options builds a new one per call)."""


def _problem(value: Any, path: str) -> str | None:
    """Describe the first part of ``value`` that JSON cannot hold, or ``None``."""
    if isinstance(value, _SCALARS):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path} is {value!r}, which JSON cannot hold"
    if isinstance(value, Mapping):
        for name, sub in cast("Mapping[object, object]", value).items():
            if not isinstance(name, str):
                return f"{path} has the key {name!r} ({type(name).__name__}); JSON object keys are strings"
            if (found := _problem(sub, f"{path}[{name!r}]")) is not None:
                return found
        return None
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        for i, sub in enumerate(cast("Sequence[object]", value)):
            if (found := _problem(sub, f"{path}[{i}]")) is not None:
                return found
        return None
    return f"{path} is a {type(value).__name__}, which is not JSON (use str, int, float, bool, None, list or dict)"


def _plain_json(value: object) -> bool:
    """Whether ``value`` is made of plain dicts, lists and JSON scalars only (the common case, no message built).

    ``False`` does not mean invalid: :func:`_problem` then walks the value (other
    mappings and sequences, subclasses) and says what is wrong, if anything.
    """
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    if kind is float:
        return math.isfinite(cast("float", value))
    if kind is dict:
        for name, sub in cast("dict[object, object]", value).items():
            if type(name) is not str or not _plain_json(sub):
                return False
        return True
    if kind is list:
        for sub in cast("list[object]", value):
            if not _plain_json(sub):
                return False
        return True
    return False


def check_value(namespace: tuple[str, ...], key: str, value: object) -> None:
    """Refuse a value that is not a mapping of JSON values with string keys (what :func:`encode_value`
    stores), without encoding it: for stores that keep the Python value.

    Raises:
        InvalidValueError: it is not.
    """
    if _plain_json(value) and type(value) is dict:
        return
    if not isinstance(value, Mapping):
        raise InvalidValueError(
            f"Store values must be mappings (dicts), got {type(value).__name__}; wrap it, e.g. {{'value': ...}}",
            namespace=namespace,
            key=key,
        )
    found = _problem(value, "value")
    if found is not None:
        raise InvalidValueError(f"{found}; convert it before storing", namespace=namespace, key=key)


def encode_value(namespace: tuple[str, ...], key: str, value: object) -> str:
    """Serialize an item's value to JSON text, or say exactly what is wrong.

    Args:
        namespace: The item's namespace (for the error message).
        key: The item's key (for the error message).
        value: The value to store.

    Returns:
        Compact JSON text.

    Raises:
        InvalidValueError: If the value is not a mapping of JSON values with string keys.
    """
    check_value(namespace, key, value)
    return _ENCODE(value)


def decode_value(text: str | bytes | dict[str, object]) -> dict[str, object]:
    """Read a stored value back (drivers may already have decoded it).

    Args:
        text: JSON text, or an already decoded dict.

    Returns:
        The value.
    """
    if isinstance(text, dict):
        return text
    return cast("dict[str, object]", json.loads(text))
