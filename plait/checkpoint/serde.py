"""A safe serializer for checkpoint values, built on ormsgpack (no pickle).

Plain data (``None``, bool, int, float, str, bytes, list, dict) is stored as MessagePack; tuples, sets,
frozensets, ``Decimal``, ``UUID``, datetimes, timedeltas, big ints, dicts with non-string keys and
instances of enums, dataclasses, named tuples and pydantic models (every langchain-core message, and
plait's ``Send``, ``Overwrite``, ``Interrupt``, ``Command``) as MessagePack *extension* records.

**Classes are rebuilt by exact name only.** A record names its class by ``(module, qualname)``. Reading
takes the class from the registry of classes you registered (``allow(MyModel)``), or imports the module
named in the record and looks the class up in that module's own namespace (``Outer.Inner`` only through
classes of that module), never by ``getattr`` through what the module imports. It is rebuilt only if its
``__module__`` and ``__qualname__`` are exactly the recorded ones (so ``subprocess.Popen`` reached through
an import, or any re-export, is refused), it is allowed, and it is a data class of the kind the record
says (an ``Enum``, a dataclass, a pydantic model, a named tuple). (The lookup: ``plait.checkpoint._allow``.)

Always allowed are only data classes: those defined in ``langchain_core.messages`` (every message and
chunk), ``langchain_core.documents.base``, ``langchain_core.outputs`` and ``langchain_core.agents``, and
exactly ``plait.types.Send``, ``Overwrite``, ``Interrupt`` and ``Command``; nothing else from
langchain-core (runnables, tools, prompts, callbacks, loaders) or plait. Add more with :func:`allow`
(process-wide) or ``Serializer(allowed=...)`` / :meth:`Serializer.allow`: a class (found by its exact
name, even one defined in a function), a dotted class path (``"myapp.models.Order"``) or a module
(``"myapp.models"``: the data classes *defined* in it or its submodules). Writing applies the rule too:
storing an instance that could not be rebuilt raises :class:`plait.errors.SerializationError` at once.

**Decoding is strict and bounded.** Bytes after the value, records of the wrong shape, unknown class
numbers, and classes that are not allowed, cannot be imported or reject the stored fields all raise
``SerializationError``, never another exception or ``None``. Payloads of 96 bytes or more are deflated
when that saves space: ``b"\\xc1\\xff"``, the uncompressed length (4 bytes, big-endian), raw deflate
data. They inflate only up to that length, at most ``max_value_bytes`` (256 MiB by default). Payloads of
earlier versions (``b"\\xc1"`` + raw deflate data) still read; inflating them stops at ``max_value_bytes``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import os
import threading
import uuid
import zlib
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

import ormsgpack

from plait.checkpoint import _allow
from plait.checkpoint._allow import (
    DEFAULT_ALLOWED_CLASSES,
    DEFAULT_ALLOWED_MODULES,
    HOW,
    AllowList,
    NotAllowed,
    allow,
)
from plait.errors import SerializationError

__all__ = ["DEFAULT_ALLOWED_CLASSES", "DEFAULT_ALLOWED_MODULES", "DEFAULT_MAX_VALUE_BYTES", "Serializer", "allow"]

DEFAULT_MAX_VALUE_BYTES = 256 * 1024 * 1024
"""Default largest encoded value (before compression) that is written or inflated."""

_OPTS = (
    ormsgpack.OPT_PASSTHROUGH_TUPLE | ormsgpack.OPT_PASSTHROUGH_UUID | ormsgpack.OPT_PASSTHROUGH_DATETIME
    | ormsgpack.OPT_PASSTHROUGH_BIG_INT | ormsgpack.OPT_PASSTHROUGH_SUBCLASS | ormsgpack.OPT_PASSTHROUGH_ENUM
    | ormsgpack.OPT_PASSTHROUGH_DATACLASS
)

# extension type codes
_TUPLE, _SET, _FROZENSET, _DECIMAL, _UUID, _DATETIME, _DATE, _TIME = 1, 2, 3, 4, 5, 6, 7, 8
_TIMEDELTA, _BIGINT, _PAIRS, _ENUM, _DATACLASS, _PYDANTIC, _NAMEDTUPLE = 9, 10, 11, 12, 13, 14, 15
_KNOWN_PYDANTIC, _KNOWN_DATACLASS = 16, 17
_CLASS_CODES = frozenset((_ENUM, _DATACLASS, _PYDANTIC, _NAMEDTUPLE))
_KIND_NAMES = {_ENUM: "an enum", _DATACLASS: "a dataclass", _PYDANTIC: "a pydantic model",
               _NAMEDTUPLE: "a named tuple", _KNOWN_PYDANTIC: "a pydantic model", _KNOWN_DATACLASS: "a dataclass"}

_KNOWN: tuple[tuple[str, str], ...] = tuple((f"langchain_core.messages.{m}", c) for m, c in (
    ("human", "HumanMessage"), ("ai", "AIMessage"), ("system", "SystemMessage"), ("tool", "ToolMessage"),
    ("modifier", "RemoveMessage"), ("chat", "ChatMessage"), ("function", "FunctionMessage"),
    ("ai", "AIMessageChunk"), ("human", "HumanMessageChunk"), ("system", "SystemMessageChunk"),
    ("tool", "ToolMessageChunk"), ("chat", "ChatMessageChunk"), ("function", "FunctionMessageChunk"),
)) + (("plait.types", "Send"), ("plait.types", "Overwrite"), ("plait.types", "Interrupt"), ("plait.types", "Command"))
"""Frequent classes stored as a small number instead of their import path.
Append only: the position is part of the stored format."""
_KNOWN_INDEX = {path: i for i, path in enumerate(_KNOWN)}

_DEFLATED = b"\xc1"  # a byte MessagePack never uses: marks a deflated payload
_SIZED = b"\xff"  # after _DEFLATED: a 4-byte length follows (0xff cannot start raw deflate data: block type 3)
_DEFLATED_SIZED = _DEFLATED + _SIZED
_SHRINK_FROM = 96  # smaller payloads do not compress enough to pay for it
_LIMIT = 2**32 - 1  # the length field has 4 bytes

# Strict decoding: ormsgpack ignores bytes after a value, so the stored value is decoded as the first item
# of a 2-array whose second item is an 8-byte bin holding a random per-process nonce. That second item is
# the nonce only when the value ends exactly where the stored bytes end.
_NONCE = os.urandom(8)
_OPEN, _CLOSE = b"\x92", b"\xc4\x08" + _NONCE


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


class Serializer:
    """Encode and decode checkpoint values with MessagePack, safely.

    Args:
        allowed: Extra classes, dotted class paths or module names whose
            instances may be stored and rebuilt (see the module docstring).
        compress: Deflate payloads of 96 bytes or more when that saves space
            (database savers; the in-memory saver trades the space for speed).
            Decoding reads both forms either way.
        max_value_bytes: The largest encoded value (before compression) that is
            written, or inflated when read; larger ones raise ``SerializationError``.
    """

    def __init__(self, allowed: Iterable[type | str] = (), *, compress: bool = True,
                 max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES) -> None:
        if type(max_value_bytes) is not int or not 0 < max_value_bytes <= _LIMIT:
            raise ValueError(f"max_value_bytes must be an int from 1 to {_LIMIT}, got {max_value_bytes!r}")
        self._allowed = AllowList(allowed)
        self._compress = compress
        self._max = max_value_bytes
        self._failure = threading.local()
        self._forget()

    def allow(self, *items: type | str) -> Serializer:
        """Allow more classes or modules for this serializer; returns ``self``."""
        self._allowed.add(*items)
        self._forget()
        return self

    def is_allowed(self, module: str, qualname: str) -> bool:
        """Whether the *name* is allowed; rebuilding also needs it to name a data class exactly (module docstring)."""
        return self._allowed.is_allowed(module, qualname)

    def _forget(self) -> None:
        self._classes: dict[tuple[int, str, str], type] = {}
        self._known: dict[tuple[int, int], type] = {}
        self._writable: set[type] = set()
        self._version = _allow.VERSION[0]

    # -- encoding -------------------------------------------------------------

    def dumps(self, obj: Any) -> bytes:
        """Encode ``obj``.

        Raises:
            SerializationError: ``obj`` holds a value of a type that cannot be stored or of a
                class that is not allowed, or encodes to more than ``max_value_bytes``.
        """
        self._failure.error = None
        try:
            try:
                data = ormsgpack.packb(obj, default=self._default, option=_OPTS)
            except TypeError as exc:
                if "key" not in str(exc).lower() or self._failure.error is not None:
                    raise
                data = ormsgpack.packb(_wrap_odd_dicts(obj), default=self._default, option=_OPTS)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a SerializationError
            stashed, self._failure.error = self._failure.error, None
            if stashed is not None:
                raise stashed from None
            raise SerializationError(f"Cannot serialize value: {exc}") from exc
        size = len(data)
        if size > self._max:
            raise SerializationError(f"Cannot serialize value: it encodes to {size} bytes, more than "
                                     f"max_value_bytes={self._max} (Serializer(max_value_bytes=...) raises it)")
        if size < _SHRINK_FROM or not self._compress:
            return data
        packed = zlib.compressobj(1, zlib.DEFLATED, -15)
        small = packed.compress(data) + packed.flush()
        return b"".join((_DEFLATED_SIZED, size.to_bytes(4, "big"), small)) if len(small) + 12 < size else data

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
            if kind not in self._writable:
                self._check(_ENUM, kind)
            return self._pack(_ENUM, [kind.__module__, kind.__qualname__, obj.value])
        if kind is tuple:
            return self._pack(_TUPLE, list(obj))
        if isinstance(obj, tuple) and hasattr(kind, "_fields"):
            if kind not in self._writable:
                self._check(_NAMEDTUPLE, kind)
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
            if kind not in self._writable:
                self._check(_DATACLASS, kind)
            fields = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}
            known = _KNOWN_INDEX.get((kind.__module__, kind.__qualname__))
            if known is not None:
                return self._pack(_KNOWN_DATACLASS, [known, fields])
            return self._pack(_DATACLASS, [kind.__module__, kind.__qualname__, fields])
        if hasattr(kind, "model_fields") and hasattr(obj, "model_dump"):
            if kind not in self._writable:
                self._check(_PYDANTIC, kind)
            known = _KNOWN_INDEX.get((kind.__module__, kind.__qualname__))
            if known is not None:
                return self._pack(_KNOWN_PYDANTIC, [known, _pydantic_fields(obj)])
            return self._pack(_PYDANTIC, [kind.__module__, kind.__qualname__, _pydantic_fields(obj)])
        if isinstance(obj, list):  # list subclasses (e.g. the list add_messages returns) store as lists
            return list(obj)
        if isinstance(obj, dict):
            return dict(obj)
        if isinstance(obj, str):  # str subclasses (e.g. langchain-core's TextAccessor) store as str
            return str(obj)
        raise SerializationError(
            f"Cannot serialize a value of type {_path(kind)}: plait stores plain data, tuples, sets, "
            "bytes, Decimal, UUID, datetimes, enums, dataclasses, named tuples and pydantic models "
            "(including langchain-core messages). Convert the value to one of these before storing it.")

    def _check(self, code: int, kind: type) -> None:
        """Refuse to store an instance of ``kind`` unless reading its record rebuilds ``kind`` itself.

        Called for classes not in ``_writable`` yet; allowing more never makes a checked class unreadable.
        """
        if self._version != _allow.VERSION[0]:
            self._forget()
        name = _path(kind)
        try:
            found = self._find(code, kind.__module__, kind.__qualname__)
        except NotAllowed:
            raise SerializationError(
                f"Class {name} is not allowed in checkpoints: only langchain-core messages, documents, outputs "
                "and agent steps, plait's Send/Overwrite/Interrupt/Command and registered classes are stored "
                "and rebuilt; " + HOW.format(name=name)) from None
        except SerializationError as exc:
            if not _is_kind(code, kind):
                raise SerializationError(f"Class {name} cannot be stored: {exc}") from None
            found = None
            why = f"it would not be found again when reading ({exc})"
        else:
            why = f"reading its record would rebuild another class of that name ({found!r})"
        if found is not kind:
            raise SerializationError(
                f"Class {name} cannot be stored: {why}. Register the class object itself: "
                f"plait.checkpoint.serde.allow({kind.__qualname__.rsplit('.', 1)[-1]}) or Serializer(allowed=[...]).")
        self._writable.add(kind)

    # -- decoding -------------------------------------------------------------

    def loads(self, data: bytes) -> Any:
        """Decode bytes produced by :meth:`dumps` (or by earlier versions of plait).

        Raises:
            SerializationError: The bytes are corrupt (bytes after the value included), inflate
                to more than ``max_value_bytes``, or name a class that is not allowed, is not a data
                class of the recorded kind, cannot be imported or rejects the stored fields.
        """
        if type(data) is not bytes:
            if not isinstance(data, (bytes, bytearray, memoryview)):
                raise SerializationError(f"Cannot decode stored value: expected bytes, got {type(data).__name__}")
            data = bytes(data)
        self._failure.error = None
        try:
            if data[:1] == _DEFLATED:
                data = self._inflate(data)
            pair = ormsgpack.unpackb(_OPEN + data + _CLOSE, ext_hook=self._ext)
            end = pair[1]
            if type(end) is bytes and end == _NONCE:
                return pair[0]
            raise SerializationError(f"Cannot decode stored value ({len(data)} bytes): unexpected bytes after "
                                     "the value (the row is corrupt or was overwritten)")
        except Exception as exc:  # noqa: BLE001 - corrupt data surfaces as SerializationError
            stashed, self._failure.error = getattr(self._failure, "error", None), None
            if stashed is not None:
                raise stashed from None
            if isinstance(exc, SerializationError):
                raise
            raise SerializationError(f"Cannot decode stored value ({len(data)} bytes): {exc}") from exc

    def _inflate(self, data: bytes) -> bytes:
        where = f"Cannot decode stored value ({len(data)} bytes)"
        inflate = zlib.decompressobj(-15)
        if data[1:2] == _SIZED:
            size = int.from_bytes(data[2:6], "big")
            if len(data) < 6 or size > self._max:
                raise SerializationError(f"{where}: truncated, or declares {size} bytes uncompressed, more than "
                                         f"max_value_bytes={self._max} (Serializer(max_value_bytes=...) raises it)")
            out = inflate.decompress(memoryview(data)[6:], size + 1)
            if len(out) != size or not inflate.eof or inflate.unused_data:
                raise SerializationError(f"{where}: the compressed data does not match its declared length "
                                         f"{size} (the row is corrupt)")
            return out
        out = inflate.decompress(memoryview(data)[1:], self._max + 1)  # written before the length header
        if len(out) > self._max:
            raise SerializationError(f"{where}: it inflates to more than max_value_bytes={self._max} "
                                     "(Serializer(max_value_bytes=...) raises the limit)")
        if not inflate.eof or inflate.unused_data:
            raise SerializationError(f"{where}: the compressed data is truncated or followed by other bytes")
        return out

    def _ext(self, code: int, data: bytes) -> Any:
        try:
            return self._decode_ext(code, data)
        except Exception as exc:  # noqa: BLE001 - stashed: ormsgpack replaces it with a generic error
            if getattr(self._failure, "error", None) is None:
                self._failure.error = exc if isinstance(exc, SerializationError) else SerializationError(
                    f"Cannot decode stored value (extension type {code}): {exc}")
            raise

    def _decode_ext(self, code: int, data: bytes) -> Any:
        # Only the outermost value is checked for bytes after it (see loads): records are written by
        # this class, and checking each one would cost ~0.5 us per record.
        payload = ormsgpack.unpackb(data, ext_hook=self._ext)
        if code == _KNOWN_PYDANTIC or code == _KNOWN_DATACLASS:
            if type(payload) is not list or len(payload) != 2:
                raise _shape(code, "[class number, fields]", payload)
            number = payload[0]
            # the fast path (most of a message list); ``type`` first: True and 1.0 would match the key 1
            cls = self._known.get((code, number)) if type(number) is int and self._version == _allow.VERSION[0] \
                else None
            if cls is None:
                if type(number) is not int or not 0 <= number < len(_KNOWN):
                    raise SerializationError(f"Cannot decode stored value: unknown class number {number!r}")
                cls = self._known[(code, number)] = self._resolve(code, *_KNOWN[number])
            return self._build(code, cls, payload[1])
        decoder = _DECODERS.get(code)
        if decoder is not None:
            if type(payload) is not decoder[0]:
                raise _shape(code, decoder[0].__name__, payload)
            return decoder[1](payload)
        if code in _CLASS_CODES:
            if type(payload) is not list or len(payload) != 3 or type(payload[0]) is not str \
                    or type(payload[1]) is not str:
                raise _shape(code, "[module, qualname, value]", payload)
            return self._build(code, self._resolve(code, payload[0], payload[1]), payload[2])
        raise SerializationError(f"Cannot decode stored value: unknown extension type {code}")

    def _resolve(self, code: int, module: str, qualname: str) -> type:
        if self._version != _allow.VERSION[0]:
            self._forget()
        found = self._classes.get((code, module, qualname))
        if found is None:
            try:
                found = self._classes[(code, module, qualname)] = self._find(code, module, qualname)
            except NotAllowed as exc:
                raise SerializationError(str(exc)) from None
        return found

    def _find(self, code: int, module: str, qualname: str) -> type:
        """The class recorded as ``module``/``qualname`` (exact name only), if it is data of the recorded kind."""
        found = self._allowed.find(module, qualname)
        if not _is_kind(code, found):
            raise SerializationError(f"Stored value names {module}.{qualname}, which is not {_KIND_NAMES[code]} as "
                                     "the record says; only data classes (enums, dataclasses, pydantic models, "
                                     "named tuples) are rebuilt")
        return found

    @staticmethod
    def _build(code: int, cls: type, body: Any) -> Any:
        if type(body) is not (list if code == _NAMEDTUPLE else dict) and code != _ENUM:
            raise _shape(code, "a list of fields" if code == _NAMEDTUPLE else "a map of fields", body)
        try:
            if code == _ENUM:
                return cls(body)
            return cls(*body) if code == _NAMEDTUPLE else cls(**body)
        except Exception as exc:  # noqa: BLE001 - any constructor failure is a decode failure
            fields = sorted(body) if isinstance(body, dict) else body
            raise SerializationError(f"Cannot rebuild stored {_path(cls)} from its fields {fields!r}: {exc}") from exc


def _is_kind(code: int, cls: type) -> bool:
    if code == _ENUM:
        return issubclass(cls, enum.Enum)
    if code in (_DATACLASS, _KNOWN_DATACLASS):
        return dataclasses.is_dataclass(cls)
    if code == _NAMEDTUPLE:
        return issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple)
    from pydantic import BaseModel  # a langchain-core dependency; imported only when a model is rebuilt

    return issubclass(cls, BaseModel)


def _shape(code: int, expected: str, payload: Any) -> SerializationError:
    return SerializationError(f"Cannot decode stored value: extension type {code} holds "
                              f"{type(payload).__name__}, expected {expected} (the row is corrupt)")


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


def _timedelta(p: list[Any]) -> dt.timedelta:
    if len(p) != 3 or any(type(x) is not int for x in p):
        raise SerializationError(f"Cannot decode stored value: a timedelta is [days, seconds, microseconds], not {p!r}")
    return dt.timedelta(days=p[0], seconds=p[1], microseconds=p[2])


def _pairs(p: list[Any]) -> dict[Any, Any]:
    if any(type(pair) is not list or len(pair) != 2 for pair in p):
        raise SerializationError("Cannot decode stored value: a map with non-string keys is [key, value] pairs")
    return {_hashable(k): v for k, v in p}


_SIMPLE: dict[type, tuple[int, Callable[[Any], Any]]] = {
    Decimal: (_DECIMAL, str),
    uuid.UUID: (_UUID, lambda u: u.bytes),
    dt.datetime: (_DATETIME, lambda d: d.isoformat()),
    dt.date: (_DATE, lambda d: d.isoformat()),
    dt.time: (_TIME, lambda t: t.isoformat()),
    dt.timedelta: (_TIMEDELTA, lambda t: [t.days, t.seconds, t.microseconds]),
}

_DECODERS: dict[int, tuple[type, Callable[[Any], Any]]] = {  # code: (payload type, decoder)
    _TUPLE: (list, tuple),
    _SET: (list, lambda p: set(map(_hashable, p))),
    _FROZENSET: (list, lambda p: frozenset(map(_hashable, p))),
    _DECIMAL: (str, Decimal),
    _UUID: (bytes, lambda b: uuid.UUID(bytes=b)),  # ValueError unless 16 bytes
    _DATETIME: (str, dt.datetime.fromisoformat),
    _DATE: (str, dt.date.fromisoformat),
    _TIME: (str, dt.time.fromisoformat),
    _TIMEDELTA: (list, _timedelta),
    _BIGINT: (str, int),
    _PAIRS: (list, _pairs),
}
