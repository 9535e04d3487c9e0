"""Decoding LangGraph's stored values safely, for ``plait migrate --from-langgraph``.

LangGraph stores a value as ``(type, bytes)``: ``"msgpack"`` with its own extension
records ``[module, name, payload, (method)]``, ``"json"`` (older rows, LangChain's
``{"lc": 1, "type": "constructor", ...}`` objects), ``"null"``, ``"bytes"``,
``"bytearray"``, ``"empty"`` (PostgreSQL: no value) and ``"pickle"``.

Nothing here unpickles, imports a module a row names, or calls a method a row
names. Standard-library values (datetimes, ``UUID``, ``Decimal``, sets) are
rebuilt from a fixed table; LangGraph's ``Send``, ``Interrupt``, ``Command`` and
``Overwrite`` become plait's; every other class goes through plait's exact-name
allow-list (:mod:`plait.checkpoint._allow`), as when plait reads its own rows.
Anything else raises :class:`~plait.errors.SerializationError`.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import ormsgpack

from plait._internal._narrow import is_list, is_str_dict
from plait.checkpoint._ext import DATACLASS, ENUM, NAMEDTUPLE, PYDANTIC
from plait.checkpoint.serde import Serializer
from plait.checkpoint.serde._bound import SKIP, check
from plait.errors import SerializationError
from plait.types import Command, Interrupt, Overwrite, Send

__all__ = ["EMPTY", "LangGraphDecoder"]

EMPTY = object()
"""A PostgreSQL blob row of type ``"empty"``: the channel has no value."""

_SINGLE, _POSITIONAL, _KEYWORDS, _METHOD, _PYDANTIC_V1, _PYDANTIC_V2, _NUMPY, _SNAPSHOT = range(8)


def _timezone(args: list[Any]) -> dt.timezone:
    return dt.timezone(*args)


_STDLIB: dict[tuple[int, str, str], Callable[[Any], Any]] = {
    (_SINGLE, "uuid", "UUID"): lambda a: uuid.UUID(hex=a),
    (_SINGLE, "decimal", "Decimal"): Decimal,
    (_SINGLE, "builtins", "set"): set,
    (_SINGLE, "builtins", "frozenset"): frozenset,
    (_POSITIONAL, "datetime", "timedelta"): lambda a: dt.timedelta(*a),
    (_POSITIONAL, "datetime", "date"): lambda a: dt.date(*a),
    (_POSITIONAL, "datetime", "timezone"): _timezone,
    (_KEYWORDS, "datetime", "time"): lambda a: dt.time(**a),
    (_METHOD, "datetime", "datetime"): dt.datetime.fromisoformat,
}
"""Standard-library values LangGraph writes, by ``(record kind, module, name)``."""


def _interrupt(a: Any) -> Interrupt:
    return Interrupt(value=a.get("value"), id=str(a.get("id") or ""))


def _send(a: Any) -> Send:
    if is_str_dict(a):
        return Send(str(a["node"]), a["arg"])
    return Send(str(a[0]), a[1])


def _overwrite(a: Any) -> Overwrite:
    return Overwrite(a["value"] if type(a) is dict else a[0])


_LANGGRAPH: dict[str, Callable[[Any], Any]] = {
    "Send": _send,
    "Interrupt": _interrupt,
    "Overwrite": _overwrite,
    "Command": lambda a: Command(
        graph=a.get("graph"), update=a.get("update"), resume=a.get("resume"), goto=a.get("goto") or ()
    ),
}
"""LangGraph's own types in ``langgraph.types``, rebuilt as plait's classes of the same name."""

_KIND = {_SINGLE: ENUM, _POSITIONAL: NAMEDTUPLE, _KEYWORDS: DATACLASS, _PYDANTIC_V1: PYDANTIC}


class LangGraphDecoder:
    """Decodes LangGraph's ``(type, bytes)`` values; classes only through ``serde``'s allow-list.

    Args:
        serde: The destination saver's serializer (its allow-list decides which classes are rebuilt).
    """

    def __init__(self, serde: Serializer) -> None:
        self.serde = serde
        self._failure: SerializationError | None = None

    def loads_typed(self, kind: str, data: bytes | None) -> Any:
        """The value of one stored row.

        Raises:
            SerializationError: the row is pickled, of an unknown type, corrupt, or names a class
                that is not allowed.
        """
        if kind == "null":
            return None
        if kind == "empty":
            return EMPTY
        raw = bytes(data or b"")
        if kind == "bytes":
            return raw
        if kind == "bytearray":
            return bytearray(raw)
        if kind == "msgpack":
            self._failure = None
            if len(raw) > SKIP:  # large rows: refuse those whose objects would take far more memory
                check(raw, len(raw))
            try:
                return ormsgpack.unpackb(raw, ext_hook=self._hook, option=ormsgpack.OPT_NON_STR_KEYS)
            except Exception as exc:  # noqa: BLE001 - ormsgpack replaces what the hook raised
                failure, self._failure = self._failure, None
                if failure is not None:
                    raise failure from None
                raise SerializationError(f"corrupt msgpack value ({exc})") from exc
        if kind == "json":
            return self.loads_json(raw)
        if kind == "pickle":
            raise SerializationError(
                "the value is pickled (LangGraph's pickle_fallback); plait never unpickles stored data. "
                "Store the value as plain data in LangGraph (or delete the thread) and migrate again"
            )
        raise SerializationError(f"unknown LangGraph value type {kind!r}")

    def loads_json(self, raw: bytes) -> object:
        """A ``"json"`` row: plain JSON, with LangChain's serialized messages rebuilt."""
        try:
            return json.loads(raw, object_hook=self._revive)
        except (ValueError, RecursionError) as exc:
            raise SerializationError(f"corrupt json value ({exc})") from None

    def _revive(self, value: dict[str, object]) -> object:
        if value.get("lc") != 1 or value.get("type") != "constructor":
            return value
        found = value.get("id")
        path = found if is_list(found) else ()
        if not path or not all(type(p) is str for p in path):
            raise SerializationError(f"a LangChain object without a valid id: {value!r}")
        name = str(path[-1])
        # LangChain's ids are legacy namespaces ("langchain.schema.messages"); messages live in one package
        module = _message_module(name)
        cls = self.serde.rebuildable(PYDANTIC, module, name) if module else None
        if cls is None:
            raise SerializationError(
                f"a LangChain object {'.'.join(map(str, path))} that plait does not rebuild (only messages are)"
            )
        return _build(cls, value.get("kwargs") or {}, f"{module}.{name}")

    def _hook(self, code: int, data: bytes) -> object:
        try:
            return self._ext(code, data)
        except Exception as exc:  # noqa: BLE001 - kept: ormsgpack replaces it with a generic error
            if self._failure is None:
                self._failure = (
                    exc
                    if isinstance(exc, SerializationError)
                    else SerializationError(f"a malformed value ({exc})")
                )
            raise

    def _ext(self, code: int, data: bytes) -> object:
        payload: object = ormsgpack.unpackb(data, ext_hook=self._hook, option=ormsgpack.OPT_NON_STR_KEYS)
        if code == _SNAPSHOT:
            return payload  # a full value LangGraph wrote for a delta channel
        if code == _NUMPY:
            raise SerializationError("a numpy array (plait stores no numpy values)")
        record = payload if is_list(payload) else ()
        if len(record) < 3 or type(record[0]) is not str or type(record[1]) is not str:
            raise SerializationError(f"a malformed extension record (type {code})")
        module, name, args = record[0], record[1], record[2]
        if code == _METHOD and (len(record) != 4 or record[3] != "fromisoformat"):
            raise SerializationError(
                f"a record that calls {module}.{name}.{record[3:]!r}; plait calls no named methods"
            )  # noqa: E501
        builtin = _STDLIB.get((code, module, name))
        if builtin is not None:
            try:
                return builtin(args)
            except Exception as exc:  # noqa: BLE001 - a malformed value
                raise SerializationError(f"a malformed {module}.{name} value {args!r} ({exc})") from exc
        if module == "langgraph.types" and name in _LANGGRAPH:
            try:
                return _LANGGRAPH[name](args)
            except Exception as exc:  # noqa: BLE001 - a malformed value
                raise SerializationError(f"a malformed langgraph.types.{name} value ({exc})") from exc
        return self._class(code, module, name, args)

    def _class(self, code: int, module: str, name: str, args: object) -> object:
        path = f"{module}.{name}"
        if code == _PYDANTIC_V2:
            cls = self.serde.rebuildable(PYDANTIC, module, name)
        elif code == _KEYWORDS:
            cls = self.serde.rebuildable(DATACLASS, module, name) or self.serde.rebuildable(
                NAMEDTUPLE, module, name
            )
        elif code in _KIND:
            cls = self.serde.rebuildable(_KIND[code], module, name)
        else:
            raise SerializationError(f"an unknown LangGraph extension record (type {code}) naming {path}")
        if cls is None:
            raise SerializationError(
                f"an instance of {path}, which plait does not rebuild: only langchain-core messages and "
                f"documents, LangGraph's Send/Interrupt/Command/Overwrite, dates, UUIDs, decimals, sets and "
                f"classes allowed by name are. If {path} is your data class, allow it: "
                f"plait.checkpoint.serde.allow({path!r}) (plait migrate: --allow {path}), then migrate again"
            )
        if code == _SINGLE:
            return _call(cls, (args,), path)
        if code == _POSITIONAL:
            listed = args if is_list(args) else [args]
            return _call(cls, tuple(listed), path)
        return _build(cls, args, path)


def _call(cls: type, args: tuple[object, ...], path: str) -> object:
    try:
        return cls(*args)
    except Exception as exc:  # noqa: BLE001 - a constructor failure is a decode failure
        raise SerializationError(f"cannot rebuild {path} from {args!r} ({exc})") from exc


def _build(cls: type, fields: object, path: str) -> object:
    if not is_str_dict(fields):
        raise SerializationError(f"a {path} record without a map of fields")
    try:
        return cls(**fields)
    except Exception as exc:  # noqa: BLE001 - a constructor failure is a decode failure
        raise SerializationError(f"cannot rebuild {path} from its fields ({exc})") from exc


_MESSAGE_MODULES = {
    "HumanMessage": "human",
    "HumanMessageChunk": "human",
    "AIMessage": "ai",
    "AIMessageChunk": "ai",
    "SystemMessage": "system",
    "SystemMessageChunk": "system",
    "ToolMessage": "tool",
    "ToolMessageChunk": "tool",
    "ChatMessage": "chat",
    "ChatMessageChunk": "chat",
    "FunctionMessage": "function",
    "FunctionMessageChunk": "function",
    "RemoveMessage": "modifier",
}


def _message_module(name: str) -> str | None:
    part = _MESSAGE_MODULES.get(name)
    return f"langchain_core.messages.{part}" if part else None
