"""What travels on the wire: JSON encoding of state values, ids, timestamps, HTTP errors."""

from __future__ import annotations

import dataclasses
import os
import time
import uuid
import weakref
from collections import OrderedDict
from datetime import datetime, timezone
from typing import Any, cast

import orjson
from langchain_core.messages import BaseMessage, BaseMessageChunk

from plait.types import Command, Send

__all__ = [
    "ApiError",
    "as_dict",
    "as_float",
    "as_int",
    "as_list",
    "as_str",
    "check_uuid",
    "command_of",
    "dumps",
    "loads",
    "now_iso",
    "uuid7",
]


class ApiError(Exception):
    """An error answered as JSON ``{"detail": message}`` with ``status``.

    Args:
        status: The HTTP status (404 unknown id, 409 conflict, 422 bad body …).
        detail: What went wrong and how to fix it.
    """

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


class _MessageJson:
    """The JSON of messages encoded before, by object: a thread's values repeat its messages each run.

    A hit needs the same object with the same ``content`` object and the same ``id`` (a message
    whose content was set anew, or that got its id when the state took it in, is encoded again;
    a stored message changed in place inside is not seen, as the checkpoint saver's own cache
    does not see it). Entries of collected messages never match (their weak reference is dead);
    the oldest entries go beyond ``size`` messages or ``budget`` bytes of JSON. Chunks (a
    streamed message's pieces, each seen once) are not kept.
    """

    def __init__(self, size: int = 8192, budget: int = 32 << 20) -> None:
        self.size, self.budget, self.held = size, budget, 0
        self.entries: OrderedDict[
            int, tuple[weakref.ref[BaseMessage], object, str | None, orjson.Fragment, int]
        ] = OrderedDict()

    def get(self, msg: BaseMessage) -> orjson.Fragment:
        hit = self.entries.get(id(msg))
        if hit is not None and hit[0]() is msg and hit[1] is msg.content and hit[2] == msg.id:
            return hit[3]
        raw = orjson.dumps(msg.model_dump(), default=_default, option=orjson.OPT_NON_STR_KEYS)
        data = orjson.Fragment(raw)
        if isinstance(msg, BaseMessageChunk):
            return data
        if hit is not None:
            self.held -= hit[4]
        self.entries[id(msg)] = (weakref.ref(msg), msg.content, msg.id, data, len(raw))
        self.held += len(raw)
        while self.entries and (len(self.entries) > self.size or self.held > self.budget):
            self.held -= self.entries.popitem(last=False)[1][4]
        return data


_messages = _MessageJson()


def _default(obj: Any) -> Any:
    if isinstance(obj, BaseMessage):
        return _messages.get(obj)
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        return dump()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        if type(obj).__name__ == "Interrupt":
            return {"value": getattr(obj, "value", None), "id": getattr(obj, "id", None)}
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    if isinstance(obj, (set, frozenset)):
        return list(cast("set[Any]", obj))
    if isinstance(obj, bytes):
        return obj.decode("utf-8", "replace")
    if isinstance(obj, BaseException):
        return f"{type(obj).__name__}: {obj}"
    as_dict = getattr(obj, "_asdict", None)
    if callable(as_dict):
        return as_dict()
    return repr(obj)


def command_of(raw: dict[str, object]) -> Command[Any]:
    """The :class:`~plait.types.Command` of a request's ``command`` object (``update``, ``resume``, ``goto``).

    Raises:
        ApiError: 422, a ``goto`` Send without its node's name.
    """
    goto = raw.get("goto")
    if goto is not None:
        items = as_list(goto) if isinstance(goto, list) else [goto]
        for g in items:
            if isinstance(g, dict) and not isinstance(as_dict(g).get("node"), str):
                raise ApiError(422, f"command.goto: a Send is {{'node': name, 'input': ...}}, got {g!r:.80}")
        goto = [
            Send(as_str(as_dict(g)["node"]), as_dict(g).get("input")) if isinstance(g, dict) else g
            for g in items
        ]
    update = raw.get("update")
    if isinstance(update, list):
        update = [tuple(as_list(pair)) for pair in as_list(update)]
    return Command(update=update, resume=raw.get("resume"), goto=goto or ())


def dumps(value: Any) -> bytes:
    """JSON bytes for ``value``; messages and pydantic models as their ``model_dump()``."""
    return orjson.dumps(value, default=_default, option=orjson.OPT_NON_STR_KEYS)


def loads(data: bytes | str) -> Any:
    """Parse JSON."""
    return orjson.loads(data)


def now_iso() -> str:
    """The current UTC time, ISO 8601 with microseconds (sorts as text)."""
    return datetime.now(timezone.utc).isoformat()


_last = [0]


def uuid7() -> str:
    """A time-ordered UUID (version 7), so ids sort in creation order."""
    ms = time.time_ns() // 1_000_000
    ms = max(ms, _last[0])
    _last[0] = ms
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms << 80) | (0x7 << 76) | ((rand >> 66) & 0xFFF) << 64 | (0b10 << 62) | (rand & ((1 << 62) - 1))
    return str(uuid.UUID(int=value))


def check_uuid(value: str, what: str) -> str:
    """``value`` if it is a UUID; otherwise a 422 naming ``what``."""
    try:
        uuid.UUID(value)
    except (ValueError, TypeError, AttributeError):
        raise ApiError(422, f"Invalid {what}: must be a UUID, got {value!r}") from None
    return value


def as_dict(value: Any) -> dict[str, object]:
    """``value`` when it is a dict (of a JSON document), else ``{}``."""
    return cast("dict[str, object]", value) if isinstance(value, dict) else {}


def as_list(value: Any) -> list[object]:
    """``value`` when it is a list, else ``[]``."""
    return cast("list[object]", value) if isinstance(value, list) else []


def as_str(value: object) -> str:
    """``value``, a string (an id or a timestamp of a stored document); a ``TypeError`` if it is not."""
    if isinstance(value, str):
        return value
    raise TypeError(f"expected a string, got {type(value).__name__}")


def as_int(value: object) -> int:
    """``int(value)`` of a number or a numeric string (of JSON); a ``TypeError`` for anything else."""
    if isinstance(value, (int, float, str)):
        return int(value)
    raise TypeError(f"expected a number, got {type(value).__name__}")


def as_float(value: object) -> float:
    """``float(value)`` of a number or a numeric string (of JSON); a ``TypeError`` for anything else."""
    if isinstance(value, (int, float, str)):
        return float(value)
    raise TypeError(f"expected a number, got {type(value).__name__}")
