"""The MessagePack extension types of plait's stored format: their codes and built-in value codecs.

Values MessagePack has no type for are stored as extension records
``Ext(code, packb(payload))``. The codes, the classes stored by number, and the
payload shapes are part of the stored format: append, never renumber.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any, cast

from plait.errors import SerializationError

__all__ = [
    "BIGINT",
    "CLASS_CODES",
    "DATACLASS",
    "DATE",
    "DATETIME",
    "DECIMAL",
    "DECODERS",
    "ENUM",
    "FROZENSET",
    "KIND_NAMES",
    "KNOWN",
    "KNOWN_DATACLASS",
    "KNOWN_INDEX",
    "KNOWN_PYDANTIC",
    "NAMEDTUPLE",
    "PAIRS",
    "PYDANTIC",
    "SET",
    "SIMPLE",
    "TIME",
    "TIMEDELTA",
    "TUPLE",
    "UUID",
    "hashable",
    "is_kind",
    "pairs",
    "shape",
    "timedelta",
]

# extension type codes
TUPLE, SET, FROZENSET, DECIMAL, UUID, DATETIME, DATE, TIME = 1, 2, 3, 4, 5, 6, 7, 8
TIMEDELTA, BIGINT, PAIRS, ENUM, DATACLASS, PYDANTIC, NAMEDTUPLE = 9, 10, 11, 12, 13, 14, 15
KNOWN_PYDANTIC, KNOWN_DATACLASS = 16, 17
CLASS_CODES = frozenset((ENUM, DATACLASS, PYDANTIC, NAMEDTUPLE))
KIND_NAMES = {
    ENUM: "an enum",
    DATACLASS: "a dataclass",
    PYDANTIC: "a pydantic model",
    NAMEDTUPLE: "a named tuple",
    KNOWN_PYDANTIC: "a pydantic model",
    KNOWN_DATACLASS: "a dataclass",
}

KNOWN: tuple[tuple[str, str], ...] = tuple(
    (f"langchain_core.messages.{m}", c)
    for m, c in (
        ("human", "HumanMessage"),
        ("ai", "AIMessage"),
        ("system", "SystemMessage"),
        ("tool", "ToolMessage"),
        ("modifier", "RemoveMessage"),
        ("chat", "ChatMessage"),
        ("function", "FunctionMessage"),
        ("ai", "AIMessageChunk"),
        ("human", "HumanMessageChunk"),
        ("system", "SystemMessageChunk"),
        ("tool", "ToolMessageChunk"),
        ("chat", "ChatMessageChunk"),
        ("function", "FunctionMessageChunk"),
    )
) + (
    ("plait.types", "Send"),
    ("plait.types", "Overwrite"),
    ("plait.types", "Interrupt"),
    ("plait.types", "Command"),
)
"""Frequent classes stored as a small number instead of their import path.
Append only: the position is part of the stored format."""
KNOWN_INDEX = {path: i for i, path in enumerate(KNOWN)}


def is_kind(code: int, cls: type) -> bool:
    if code == ENUM:
        return issubclass(cls, enum.Enum)
    if code in (DATACLASS, KNOWN_DATACLASS):
        return dataclasses.is_dataclass(cls)
    if code == NAMEDTUPLE:
        # cast: issubclass narrows cls to type[tuple[Unknown, ...]]
        return issubclass(cls, tuple) and isinstance(
            getattr(cast("type[object]", cls), "_fields", None), tuple
        )
    from pydantic import BaseModel  # a langchain-core dependency; imported only when a model is rebuilt

    return issubclass(cls, BaseModel)


def shape(code: int, expected: str, payload: Any) -> SerializationError:
    return SerializationError(
        f"Cannot decode stored value: extension type {code} holds "
        f"{type(payload).__name__}, expected {expected} (the row is corrupt)"
    )


def hashable(key: Any) -> Any:
    return tuple(hashable(k) for k in cast("list[object]", key)) if isinstance(key, list) else key


def timedelta(p: list[Any]) -> dt.timedelta:
    if len(p) != 3 or any(type(x) is not int for x in p):
        raise SerializationError(
            f"Cannot decode stored value: a timedelta is [days, seconds, microseconds], not {p!r}"
        )
    return dt.timedelta(days=p[0], seconds=p[1], microseconds=p[2])


def pairs(p: list[Any]) -> dict[Any, Any]:
    if any(type(pair) is not list or len(pair) != 2 for pair in p):
        raise SerializationError(
            "Cannot decode stored value: a map with non-string keys is [key, value] pairs"
        )
    return {hashable(k): v for k, v in p}


SIMPLE: dict[type, tuple[int, Callable[[Any], Any]]] = {
    Decimal: (DECIMAL, str),
    uuid.UUID: (UUID, lambda u: u.bytes),
    dt.datetime: (DATETIME, lambda d: d.isoformat()),
    dt.date: (DATE, lambda d: d.isoformat()),
    dt.time: (TIME, lambda t: t.isoformat()),
    dt.timedelta: (TIMEDELTA, lambda t: [t.days, t.seconds, t.microseconds]),
}

DECODERS: dict[int, tuple[type, Callable[[Any], Any]]] = {  # code: (payload type, decoder)
    TUPLE: (list, tuple),
    SET: (list, lambda p: set(map(hashable, p))),
    FROZENSET: (list, lambda p: frozenset(map(hashable, p))),
    DECIMAL: (str, Decimal),
    UUID: (bytes, lambda b: uuid.UUID(bytes=b)),  # ValueError unless 16 bytes
    DATETIME: (str, dt.datetime.fromisoformat),
    DATE: (str, dt.date.fromisoformat),
    TIME: (str, dt.time.fromisoformat),
    TIMEDELTA: (list, timedelta),
    BIGINT: (str, int),
    PAIRS: (list, pairs),
}
