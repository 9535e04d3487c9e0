"""A safe serializer for checkpoint values, built on ormsgpack (no pickle).

Plain data (``None``, bool, int, float, str, bytes, list, dict) is stored as
MessagePack. Other values are stored as MessagePack *extension* records:

* tuple, set, frozenset, ``Decimal``, ``UUID``, datetime/date/time/timedelta,
  ints beyond 64 bits, and dicts whose keys are not all strings;
* instances of enums, dataclasses, named tuples and pydantic models (this
  includes every langchain-core message, with tool calls, additional kwargs
  and ids, and plait's own ``Send``, ``Overwrite``, ``Interrupt``, ``Command``).

Classes are recorded by import path and rebuilt by importing that path, which
is only done for *allowed* classes: those defined in ``langchain_core.*`` or
``plait.*``, plus whatever you register with :func:`allow` (process-wide) or
``Serializer(allowed=...)`` / :meth:`Serializer.allow` (one serializer).
An entry is a class, a module name (``"myapp.models"`` allows that module and
its submodules) or a dotted class path (``"myapp.models.Order"``).

The rule is applied when **writing** as well as reading: storing an instance
of a class that is not allowed raises :class:`plait.errors.SerializationError`
right away (naming the class and the ``allow(...)`` call that fixes it),
instead of producing a checkpoint that could not be read back. Reading a
record of a class that is not allowed, cannot be imported, or does not accept
the stored fields also raises ``SerializationError``; nothing decodes to
``None`` silently.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import importlib
import threading
import uuid
import zlib
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

import ormsgpack

from plait.errors import SerializationError

__all__ = ["DEFAULT_ALLOWED_MODULES", "Serializer", "allow"]

DEFAULT_ALLOWED_MODULES: tuple[str, ...] = ("langchain_core", "plait")
"""Modules (and their submodules) whose classes are always allowed."""

_GLOBAL_ALLOWED: set[str] = set()
_GLOBAL_LOCK = threading.Lock()

_OPTS = (
    ormsgpack.OPT_PASSTHROUGH_TUPLE | ormsgpack.OPT_PASSTHROUGH_UUID | ormsgpack.OPT_PASSTHROUGH_DATETIME
    | ormsgpack.OPT_PASSTHROUGH_BIG_INT | ormsgpack.OPT_PASSTHROUGH_SUBCLASS | ormsgpack.OPT_PASSTHROUGH_ENUM
    | ormsgpack.OPT_PASSTHROUGH_DATACLASS
)

# extension type codes
_TUPLE, _SET, _FROZENSET, _DECIMAL, _UUID, _DATETIME, _DATE, _TIME = 1, 2, 3, 4, 5, 6, 7, 8
_TIMEDELTA, _BIGINT, _PAIRS, _ENUM, _DATACLASS, _PYDANTIC, _NAMEDTUPLE = 9, 10, 11, 12, 13, 14, 15
_KNOWN_PYDANTIC, _KNOWN_DATACLASS = 16, 17

_KNOWN: tuple[tuple[str, str], ...] = (
    ("langchain_core.messages.human", "HumanMessage"),
    ("langchain_core.messages.ai", "AIMessage"),
    ("langchain_core.messages.system", "SystemMessage"),
    ("langchain_core.messages.tool", "ToolMessage"),
    ("langchain_core.messages.modifier", "RemoveMessage"),
    ("langchain_core.messages.chat", "ChatMessage"),
    ("langchain_core.messages.function", "FunctionMessage"),
    ("langchain_core.messages.ai", "AIMessageChunk"),
    ("langchain_core.messages.human", "HumanMessageChunk"),
    ("langchain_core.messages.system", "SystemMessageChunk"),
    ("langchain_core.messages.tool", "ToolMessageChunk"),
    ("langchain_core.messages.chat", "ChatMessageChunk"),
    ("langchain_core.messages.function", "FunctionMessageChunk"),
    ("plait.types", "Send"),
    ("plait.types", "Overwrite"),
    ("plait.types", "Interrupt"),
    ("plait.types", "Command"),
)
"""Frequent classes stored as a small number instead of their import path.
Append only: the position is part of the stored format."""
_KNOWN_INDEX = {path: i for i, path in enumerate(_KNOWN)}

_HOW = (
    "Allow it with plait.checkpoint.serde.allow({name!r}) (process-wide) or "
    "Serializer(allowed=[{name!r}]) passed to the saver as serde=..."
)


def _entry(item: type | str) -> str:
    if isinstance(item, type):
        return f"{item.__module__}.{item.__qualname__}"
    if not isinstance(item, str) or not item:
        raise TypeError(f"allow() takes classes or dotted names, got {item!r}")
    return item


def allow(*items: type | str) -> None:
    """Allow classes or modules for every serializer in this process.

    Args:
        *items: Classes, module names (submodules included) or dotted class paths.
    """
    with _GLOBAL_LOCK:
        _GLOBAL_ALLOWED.update(_entry(i) for i in items)


class _Pairs:
    """A dict with non-string keys, stored as a list of ``[key, value]`` pairs."""

    __slots__ = ("items",)

    def __init__(self, items: list[list[Any]]) -> None:
        self.items = items


def _wrap_odd_dicts(obj: Any) -> Any:
    """Replace dicts with non-string keys by :class:`_Pairs` (only on the slow path)."""
    kind = type(obj)
    if kind is dict:
        if any(type(k) is not str for k in obj):
            return _Pairs([[_wrap_odd_dicts(k), _wrap_odd_dicts(v)] for k, v in obj.items()])
        return {k: _wrap_odd_dicts(v) for k, v in obj.items()}
    if kind is list:
        return [_wrap_odd_dicts(v) for v in obj]
    if kind is tuple:
        return tuple(_wrap_odd_dicts(v) for v in obj)
    return obj


_DEFLATED = b"\xc1"  # a byte MessagePack never uses: marks a deflated payload
_SHRINK_FROM = 96  # smaller payloads do not compress enough to pay for it


def _shrink(data: bytes) -> bytes:
    """Deflate ``data`` when that saves space (text in messages usually halves)."""
    if len(data) < _SHRINK_FROM:
        return data
    packed = zlib.compressobj(1, zlib.DEFLATED, -15)
    small = packed.compress(data) + packed.flush()
    return _DEFLATED + small if len(small) + 8 < len(data) else data


def _same(data: bytes) -> bytes:
    return data


class Serializer:
    """Encode and decode checkpoint values with MessagePack, safely.

    Args:
        allowed: Extra classes, module names or dotted class paths whose
            instances may be stored and rebuilt (see the module docstring).
        compress: Deflate payloads of 96 bytes or more when that saves space
            (database savers; the in-memory saver trades the space for speed).
            Decoding reads both forms either way.
    """

    def __init__(self, allowed: Iterable[type | str] = (), *, compress: bool = True) -> None:
        self._allowed: set[str] = {_entry(i) for i in allowed}
        self._shrink = _shrink if compress else _same
        self._failure = threading.local()
        self._classes: dict[tuple[str, str], type] = {}

    def allow(self, *items: type | str) -> Serializer:
        """Allow more classes or modules for this serializer; returns ``self``."""
        self._allowed.update(_entry(i) for i in items)
        return self

    def is_allowed(self, module: str, qualname: str) -> bool:
        """Whether instances of ``module.qualname`` may be stored and rebuilt."""
        path = f"{module}.{qualname}"
        with _GLOBAL_LOCK:
            names = self._allowed | _GLOBAL_ALLOWED
        names.update(DEFAULT_ALLOWED_MODULES)
        return any(path == n or module == n or module.startswith(n + ".") for n in names)

    # -- encoding -------------------------------------------------------------

    def dumps(self, obj: Any) -> bytes:
        """Encode ``obj``.

        Raises:
            SerializationError: ``obj`` holds a value of a type that cannot be
                stored, or of a class that is not allowed.
        """
        self._failure.error = None
        try:
            try:
                return self._shrink(ormsgpack.packb(obj, default=self._default, option=_OPTS))
            except TypeError as exc:
                if "key" not in str(exc).lower() or self._failure.error is not None:
                    raise
                return self._shrink(ormsgpack.packb(_wrap_odd_dicts(obj), default=self._default, option=_OPTS))
        except Exception as exc:  # noqa: BLE001 - every failure becomes a SerializationError
            stashed, self._failure.error = self._failure.error, None
            if stashed is not None:
                raise stashed from None
            raise SerializationError(f"Cannot serialize value: {exc}") from exc

    def _pack(self, code: int, payload: Any) -> ormsgpack.Ext:
        try:
            data = ormsgpack.packb(payload, default=self._default, option=_OPTS)
        except TypeError as exc:
            if "key" not in str(exc).lower():
                raise
            data = ormsgpack.packb(_wrap_odd_dicts(payload), default=self._default, option=_OPTS)
        return ormsgpack.Ext(code, data)

    def _default(self, obj: Any) -> Any:
        try:
            return self._encode(obj)
        except Exception as exc:  # noqa: BLE001 - re-raised with the type named
            if getattr(self._failure, "error", None) is None:
                self._failure.error = exc if isinstance(exc, SerializationError) else SerializationError(
                    f"Cannot serialize a value of type {_path(type(obj))}: {exc}")
            raise

    def _encode(self, obj: Any) -> Any:  # noqa: C901, PLR0911 - one dispatch table
        kind = type(obj)
        if kind is _Pairs:
            return self._pack(_PAIRS, obj.items)
        if isinstance(obj, enum.Enum):
            self._check(kind)
            return self._pack(_ENUM, [kind.__module__, kind.__qualname__, obj.value])
        if kind is tuple:
            return self._pack(_TUPLE, list(obj))
        if isinstance(obj, tuple) and hasattr(kind, "_fields"):
            self._check(kind)
            return self._pack(_NAMEDTUPLE, [kind.__module__, kind.__qualname__, list(obj)])
        if kind is set or kind is frozenset:
            return self._pack(_SET if kind is set else _FROZENSET, list(obj))
        simple = _SIMPLE.get(kind)
        if simple is not None:
            return self._pack(simple[0], simple[1](obj))
        if kind is int:
            return self._pack(_BIGINT, str(obj))
        if kind in (OrderedDict, defaultdict):
            return dict(obj)
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            self._check(kind)
            fields = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}
            known = _KNOWN_INDEX.get((kind.__module__, kind.__qualname__))
            if known is not None:
                return self._pack(_KNOWN_DATACLASS, [known, fields])
            return self._pack(_DATACLASS, [kind.__module__, kind.__qualname__, fields])
        if hasattr(kind, "model_fields") and hasattr(obj, "model_dump"):
            known = _KNOWN_INDEX.get((kind.__module__, kind.__qualname__))
            if known is not None:
                return self._pack(_KNOWN_PYDANTIC, [known, _pydantic_fields(obj)])
            self._check(kind)
            return self._pack(_PYDANTIC, [kind.__module__, kind.__qualname__, _pydantic_fields(obj)])
        if isinstance(obj, list):  # list subclasses (e.g. the list add_messages returns) store as lists
            return list(obj)
        if isinstance(obj, dict):
            return dict(obj)
        raise SerializationError(
            f"Cannot serialize a value of type {_path(kind)}: plait stores plain data, tuples, sets, "
            "bytes, Decimal, UUID, datetimes, enums, dataclasses, named tuples and pydantic models "
            "(including langchain-core messages). Convert the value to one of these before storing it.")

    def _check(self, kind: type) -> None:
        if not self.is_allowed(kind.__module__, kind.__qualname__):
            name = _path(kind)
            raise SerializationError(
                f"Class {name} is not allowed in checkpoints: only classes from "
                f"{', '.join(DEFAULT_ALLOWED_MODULES)} and registered ones are stored and rebuilt; "
                + _HOW.format(name=name))

    # -- decoding -------------------------------------------------------------

    def loads(self, data: bytes) -> Any:
        """Decode bytes produced by :meth:`dumps`.

        Raises:
            SerializationError: The bytes are corrupt, or name a class that is
                not allowed, cannot be imported or rejects the stored fields.
        """
        self._failure.error = None
        try:
            if data[:1] == _DEFLATED:
                data = zlib.decompress(data[1:], -15)
            return ormsgpack.unpackb(data, ext_hook=self._ext)
        except Exception as exc:  # noqa: BLE001 - corrupt data surfaces as SerializationError
            stashed, self._failure.error = getattr(self._failure, "error", None), None
            if stashed is not None:
                raise stashed from None
            raise SerializationError(f"Cannot decode stored value ({len(data)} bytes): {exc}") from exc

    def _ext(self, code: int, data: bytes) -> Any:
        try:
            return self._decode_ext(code, data)
        except Exception as exc:  # noqa: BLE001 - stashed: ormsgpack replaces it with a generic error
            if getattr(self._failure, "error", None) is None:
                self._failure.error = exc if isinstance(exc, SerializationError) else SerializationError(
                    f"Cannot decode stored value (extension type {code}): {exc}")
            raise

    def _decode_ext(self, code: int, data: bytes) -> Any:
        payload = ormsgpack.unpackb(data, ext_hook=self._ext)
        decoder = _DECODERS.get(code)
        if decoder is not None:
            return decoder(payload)
        if code == _PAIRS:
            return {_hashable(k): v for k, v in payload}
        if code in (_KNOWN_PYDANTIC, _KNOWN_DATACLASS):
            if not isinstance(payload[0], int) or not 0 <= payload[0] < len(_KNOWN):
                raise SerializationError(f"Cannot decode stored value: unknown class number {payload[0]!r}")
            return self._build(code, self._resolve(*_KNOWN[payload[0]]), payload[1])
        if code in (_ENUM, _DATACLASS, _PYDANTIC, _NAMEDTUPLE):
            module, qualname, body = payload
            return self._build(code, self._resolve(module, qualname), body)
        raise SerializationError(f"Cannot decode stored value: unknown extension type {code}")

    def _resolve(self, module: str, qualname: str) -> type:
        found = self._classes.get((module, qualname))
        if found is None:
            found = self._classes[(module, qualname)] = self._import(module, qualname)
        return found

    def _import(self, module: str, qualname: str) -> type:
        name = f"{module}.{qualname}"
        if not self.is_allowed(module, qualname):
            raise SerializationError(
                f"Stored value is an instance of {name}, which is not allowed to be rebuilt. "
                + _HOW.format(name=name))
        try:
            found: Any = importlib.import_module(module)
            for part in qualname.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError) as exc:
            raise SerializationError(
                f"Stored value is an instance of {name}, which cannot be imported: {exc}. "
                "Make sure the module is installed and the class still exists under that name.") from exc
        if not isinstance(found, type):
            raise SerializationError(f"Stored value names {name}, which is not a class")
        return found

    @staticmethod
    def _build(code: int, cls: type, body: Any) -> Any:
        try:
            if code == _ENUM:
                return cls(body)  # type: ignore[call-arg]
            if code == _NAMEDTUPLE:
                return cls(*body)
            return cls(**body)
        except Exception as exc:  # noqa: BLE001 - any constructor failure is a decode failure
            raise SerializationError(
                f"Cannot rebuild stored {_path(cls)} from its fields {sorted(body) if isinstance(body, dict) else body!r}: "
                f"{exc}") from exc


def _path(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def _hashable(key: Any) -> Any:
    return tuple(_hashable(k) for k in key) if isinstance(key, list) else key


def _pydantic_fields(obj: Any) -> dict[str, Any]:
    """The explicitly set fields (defaults are filled in again when rebuilding)."""
    values = {name: getattr(obj, name) for name in obj.model_fields_set if name in type(obj).model_fields}
    extra = getattr(obj, "__pydantic_extra__", None)
    if extra:
        values.update(extra)
    return values


_SIMPLE: dict[type, tuple[int, Callable[[Any], Any]]] = {
    Decimal: (_DECIMAL, str),
    uuid.UUID: (_UUID, lambda u: u.bytes),
    dt.datetime: (_DATETIME, lambda d: d.isoformat()),
    dt.date: (_DATE, lambda d: d.isoformat()),
    dt.time: (_TIME, lambda t: t.isoformat()),
    dt.timedelta: (_TIMEDELTA, lambda t: [t.days, t.seconds, t.microseconds]),
}

_DECODERS: dict[int, Callable[[Any], Any]] = {
    _TUPLE: tuple,
    _SET: lambda p: set(map(_hashable, p)),
    _FROZENSET: lambda p: frozenset(map(_hashable, p)),
    _DECIMAL: Decimal,
    _UUID: lambda b: uuid.UUID(bytes=b),
    _DATETIME: dt.datetime.fromisoformat,
    _DATE: dt.date.fromisoformat,
    _TIME: dt.time.fromisoformat,
    _TIMEDELTA: lambda p: dt.timedelta(days=p[0], seconds=p[1], microseconds=p[2]),
    _BIGINT: int,
}
