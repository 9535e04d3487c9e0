"""A safe serializer for checkpoint values, built on ormsgpack (no pickle).

Plain data (``None``, bool, int, float, str, bytes, list, dict) is stored as MessagePack; sets,
frozensets, ``Decimal``, ``UUID``, datetimes, timedeltas, big ints, dicts with non-string keys and
instances of enums, dataclasses, named tuples and pydantic models (every langchain-core message, and
plait's ``Send``, ``Overwrite``, ``Interrupt``, ``Command``) as MessagePack *extension* records. A tuple
reads back as a list, as with LangGraph, except as a dict key or a set member (a tuple record).

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
A large row whose objects would take more memory than its stored size allows is refused before it is
decoded (:mod:`plait.checkpoint.serde._bound`).
"""

from __future__ import annotations

import dataclasses
import enum
import os
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

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
from plait.checkpoint._deflate import DEFLATED, LIMIT, deflate, inflate
from plait.checkpoint._ext import (
    BIGINT,
    CLASS_CODES,
    DATACLASS,
    DECODERS,
    ENUM,
    FROZENSET,
    KIND_NAMES,
    KNOWN,
    KNOWN_DATACLASS,
    KNOWN_INDEX,
    KNOWN_PYDANTIC,
    NAMEDTUPLE,
    PAIRS,
    PYDANTIC,
    SET,
    SIMPLE,
    TUPLE,
    is_kind,
    shape,
)
from plait.checkpoint.serde._bound import SKIP, check, fit
from plait.checkpoint.serde._construct import construct
from plait.checkpoint.serde._pairs import Key, Pairs, hashable, wrap_odd_dicts
from plait.errors import SerializationError

__all__ = [
    "DEFAULT_ALLOWED_CLASSES",
    "DEFAULT_ALLOWED_MODULES",
    "DEFAULT_MAX_VALUE_BYTES",
    "Serializer",
    "allow",
]

DEFAULT_MAX_VALUE_BYTES = 256 * 1024 * 1024
"""Default largest encoded value (before compression) that is written or inflated."""

_OPTS = (
    ormsgpack.OPT_PASSTHROUGH_TUPLE
    | ormsgpack.OPT_PASSTHROUGH_UUID
    | ormsgpack.OPT_PASSTHROUGH_DATETIME
    | ormsgpack.OPT_PASSTHROUGH_BIG_INT
    | ormsgpack.OPT_PASSTHROUGH_SUBCLASS
    | ormsgpack.OPT_PASSTHROUGH_ENUM
    | ormsgpack.OPT_PASSTHROUGH_DATACLASS
)

# Strict decoding: ormsgpack ignores bytes after a value, so the stored value is decoded as the first item
# of a 2-array whose second item is an 8-byte bin holding a random per-process nonce. That second item is
# the nonce only when the value ends exactly where the stored bytes end.
_NONCE = os.urandom(8)
_OPEN, _CLOSE = b"\x92", b"\xc4\x08" + _NONCE


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

    def __init__(
        self,
        allowed: Iterable[type | str] = (),
        *,
        compress: bool = True,
        max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
    ) -> None:
        if type(max_value_bytes) is not int or not 0 < max_value_bytes <= LIMIT:
            raise ValueError(f"max_value_bytes must be an int from 1 to {LIMIT}, got {max_value_bytes!r}")
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

    def rebuildable(self, code: int, module: str, qualname: str) -> type | None:
        """The class a record of kind ``code`` naming ``module``/``qualname`` rebuilds, or ``None`` if none is.

        For importers of other stored formats: the same exact-name allow-list and kind check as :meth:`loads`.
        """
        try:
            return self._resolve(code, module, qualname)
        except SerializationError:
            return None

    def is_allowed(self, module: str, qualname: str) -> bool:
        """Whether the *name* is allowed; rebuilding also needs it to name a data class exactly (module docstring)."""
        return self._allowed.is_allowed(module, qualname)

    def tuples_listed(self) -> int:
        """How many tuples this thread's :meth:`dumps` calls stored as lists (they read back as lists)."""
        return int(getattr(self._failure, "tuples", 0))

    def _forget(self) -> None:
        self._classes: dict[tuple[int, str, str], type] = {}
        self._known: dict[tuple[int, int], type] = {}
        self._writable: set[type] = set()
        # pydantic classes checked already: the record's kind and the names before its fields
        self._models: dict[type, tuple[int, list[object]]] = {}
        # dataclasses checked already: the record's kind, the names before its fields, its init fields
        self._dataclasses: dict[type, tuple[int, list[object], tuple[str, ...]]] = {}
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
                data = ormsgpack.packb(wrap_odd_dicts(obj), default=self._default, option=_OPTS)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a SerializationError
            stashed, self._failure.error = self._failure.error, None
            if stashed is not None:
                raise stashed from None
            raise SerializationError(f"Cannot serialize value: {exc}") from exc
        size = len(data)
        if size > self._max:
            raise SerializationError(
                f"Cannot serialize value: it encodes to {size} bytes, more than "
                f"max_value_bytes={self._max} (Serializer(max_value_bytes=...) raises it)"
            )
        out = deflate(data) if self._compress else data
        return fit(data, out) if size > SKIP else out  # (what is stored must read back under the bound)

    def _pack(self, code: int, payload: Any) -> ormsgpack.Ext:
        try:
            data = ormsgpack.packb(payload, default=self._default, option=_OPTS)
        except TypeError as exc:
            if "key" not in str(exc).lower():
                raise
            data = ormsgpack.packb(wrap_odd_dicts(payload), default=self._default, option=_OPTS)
        return ormsgpack.Ext(code, data)

    def _pack_model(self, model: tuple[int, list[object]], obj: Any, kind: type[Any]) -> ormsgpack.Ext:
        """A pydantic model's record: its kind, the names of its class, its set fields."""
        return self._pack(model[0], [*model[1], _pydantic_fields(obj, kind)])

    def _default(self, obj: object) -> Any:
        try:
            return self._encode(obj)
        except Exception as exc:  # noqa: BLE001 - re-raised with the type named
            if getattr(self._failure, "error", None) is None:
                self._failure.error = (
                    exc
                    if isinstance(exc, SerializationError)
                    else SerializationError(f"Cannot serialize a value of type {_path(type(obj))}: {exc}")
                )
            raise

    def _encode(self, obj: Any) -> Any:  # noqa: C901, PLR0911 - one dispatch table
        kind = cast("type[object]", type(obj))  # pyright takes type() of an Any for type[Unknown]
        model = self._models.get(kind)
        if model is not None:  # a message, most often
            return self._pack_model(model, obj, kind)
        checked = self._dataclasses.get(kind)
        if checked is not None:  # a dataclass checked already (plait's Interrupt, most often)
            return self._pack(checked[0], [*checked[1], {name: getattr(obj, name) for name in checked[2]}])
        if kind is Pairs:
            return self._pack(PAIRS, obj.items)
        if kind is tuple:  # a list when read, as with LangGraph (MessagePack has no tuple)
            self._failure.tuples = getattr(self._failure, "tuples", 0) + 1
            return list(obj)
        if kind is Key:  # a dict key or a set member: a tuple when read
            return self._pack(TUPLE, obj.items)
        if isinstance(obj, enum.Enum):
            if kind not in self._writable:
                self._check(ENUM, kind)
            return self._pack(ENUM, [kind.__module__, kind.__qualname__, obj.value])
        if _is_named_tuple(obj, kind):
            if kind not in self._writable:
                self._check(NAMEDTUPLE, kind)
            return self._pack(NAMEDTUPLE, [kind.__module__, kind.__qualname__, list(obj)])
        if kind is set or kind is frozenset:
            return self._pack(SET if kind is set else FROZENSET, [hashable(v) for v in obj])
        simple = SIMPLE.get(kind)
        if simple is not None:
            return self._pack(simple[0], simple[1](obj))
        if kind is int:
            return self._pack(BIGINT, str(obj))
        if kind in (OrderedDict, defaultdict):
            return dict(obj)
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            if kind not in self._writable:
                self._check(DATACLASS, kind)
            init = tuple(f.name for f in dataclasses.fields(obj) if f.init)
            known = KNOWN_INDEX.get((kind.__module__, kind.__qualname__))
            head: list[object] = [known] if known is not None else [kind.__module__, kind.__qualname__]
            code = KNOWN_DATACLASS if known is not None else DATACLASS
            self._dataclasses[kind] = (code, head, init)
            return self._pack(code, [*head, {name: getattr(obj, name) for name in init}])
        if hasattr(kind, "__pydantic_fields__") and hasattr(obj, "model_dump"):
            if kind not in self._writable:
                self._check(PYDANTIC, kind)
            known = KNOWN_INDEX.get((kind.__module__, kind.__qualname__))
            names: list[object] = [known] if known is not None else [kind.__module__, kind.__qualname__]
            model = self._models[kind] = (KNOWN_PYDANTIC if known is not None else PYDANTIC, names)
            return self._pack_model(model, obj, kind)
        if isinstance(obj, list):  # list subclasses (e.g. the list add_messages returns) store as lists
            return list(cast("Iterable[Any]", obj))  # isinstance leaves the item type unknown
        if isinstance(obj, dict):
            return dict(cast("Mapping[Any, Any]", obj))  # isinstance leaves the key and value types unknown
        if isinstance(obj, str):  # str subclasses (e.g. langchain-core's TextAccessor) store as str
            return str(obj)
        raise SerializationError(
            f"Cannot serialize a value of type {_path(kind)}: plait stores plain data, tuples, sets, "
            "bytes, Decimal, UUID, datetimes, enums, dataclasses, named tuples and pydantic models "
            "(including langchain-core messages). Convert the value to one of these before storing it."
        )

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
                "and rebuilt; " + HOW.format(name=name)
            ) from None
        except SerializationError as exc:
            if not is_kind(code, kind):
                raise SerializationError(f"Class {name} cannot be stored: {exc}") from None
            found = None
            why = f"it would not be found again when reading ({exc})"
        else:
            why = f"reading its record would rebuild another class of that name ({found!r})"
        if found is not kind:
            raise SerializationError(
                f"Class {name} cannot be stored: {why}. Register the class object itself: "
                f"plait.checkpoint.serde.allow({kind.__qualname__.rsplit('.', 1)[-1]}) or Serializer(allowed=[...])."
            )
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
            if not isinstance(data, (bytes, bytearray, memoryview)):  # pyright: ignore[reportUnnecessaryIsInstance]  # runtime guard: callers may pass anything
                raise SerializationError(
                    f"Cannot decode stored value: expected bytes, got {type(data).__name__}"
                )
            data = bytes(data)
        self._failure.error = None
        try:
            stored = len(data)
            if data[:1] == DEFLATED:
                data = inflate(data, self._max)
            if len(data) > SKIP:  # large rows: refuse those whose objects would take far more memory
                check(data, stored)
            pair = ormsgpack.unpackb(_OPEN + data + _CLOSE, ext_hook=self._ext)
            end = pair[1]
            if type(end) is bytes and end == _NONCE:
                return pair[0]
            raise SerializationError(
                f"Cannot decode stored value ({len(data)} bytes): unexpected bytes after "
                "the value (the row is corrupt or was overwritten)"
            )
        except Exception as exc:  # noqa: BLE001 - corrupt data surfaces as SerializationError
            stashed, self._failure.error = getattr(self._failure, "error", None), None
            if stashed is not None:
                raise stashed from None
            if isinstance(exc, SerializationError):
                raise
            raise SerializationError(f"Cannot decode stored value ({len(data)} bytes): {exc}") from exc

    def _ext(self, code: int, data: bytes) -> Any:
        try:
            # Only the outermost value is checked for bytes after it (see loads): records are written by
            # this class, and checking each one would cost ~0.5 us per record.
            payload: Any = ormsgpack.unpackb(data, ext_hook=self._ext)
            if code == KNOWN_PYDANTIC and type(payload) is list and len(payload) == 2:  # pyright: ignore[reportUnknownArgumentType]
                number: Any = payload[0]  # pyright: ignore[reportUnknownVariableType]  # a message: checked as _decode does
                known = self._known.get((code, number)) if type(number) is int else None  # pyright: ignore[reportUnknownArgumentType]
                if known is not None and number < _MESSAGES and self._version == _allow.VERSION[0]:
                    return self._message(known, payload[1])
            return self._decode(code, payload)
        except Exception as exc:  # noqa: BLE001 - stashed: ormsgpack replaces it with a generic error
            if getattr(self._failure, "error", None) is None:
                self._failure.error = (
                    exc
                    if isinstance(exc, SerializationError)
                    else SerializationError(f"Cannot decode stored value (extension type {code}): {exc}")
                )
            raise

    def _decode(self, code: int, payload: Any) -> Any:
        if code == KNOWN_PYDANTIC or code == KNOWN_DATACLASS:
            pair = (
                cast("Sequence[Any]", payload) if type(payload) is list else None
            )  # items unknown until checked
            if pair is None or len(pair) != 2:
                raise shape(code, "[class number, fields]", payload)
            number = pair[0]
            # the fast path (most of a message list); ``type`` first: True and 1.0 would match the key 1
            cls = (
                self._known.get((code, number))
                if type(number) is int and self._version == _allow.VERSION[0]
                else None
            )
            if cls is None:
                if type(number) is not int or not 0 <= number < len(KNOWN):
                    raise SerializationError(f"Cannot decode stored value: unknown class number {number!r}")
                cls = self._known[(code, number)] = self._resolve(code, *KNOWN[number])
            if code == KNOWN_PYDANTIC and number < _MESSAGES:
                return self._message(cls, pair[1])
            return self._build(code, cls, pair[1])
        decoder = DECODERS.get(code)
        if decoder is not None:
            if type(payload) is not decoder[0]:
                raise shape(code, decoder[0].__name__, payload)
            return decoder[1](payload)
        if code in CLASS_CODES:
            record = (
                cast("Sequence[Any]", payload) if type(payload) is list else None
            )  # items unknown until checked
            if record is None or len(record) != 3 or type(record[0]) is not str or type(record[1]) is not str:
                raise shape(code, "[module, qualname, value]", payload)
            return self._build(code, self._resolve(code, record[0], record[1]), record[2])
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
        if not is_kind(code, found):
            raise SerializationError(
                f"Stored value names {module}.{qualname}, which is not {KIND_NAMES[code]} as "
                "the record says; only data classes (enums, dataclasses, pydantic models, "
                "named tuples) are rebuilt"
            )
        return found

    def _message(self, cls: Any, fields: Any) -> Any:
        """A langchain-core message from the fields plait stored, without validating them again.

        The fields were read from a validated message when it was stored, so validating
        them again (most of the cost of reading a conversation) adds nothing. Only a map
        of ``str`` keys with a ``str`` or list ``content`` naming the class's own fields
        is assembled so; anything else is built the validating way, and fails or succeeds
        as a fresh message would.
        """
        # its keys are str (ormsgpack refuses any other map key); no cast(): a call per message
        if type(fields) is dict and type(fields.get("content")) in (str, list):  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
            built = construct(cls, fields)  # pyright: ignore[reportUnknownArgumentType]
            if built is not None:
                return built
        return self._build(KNOWN_PYDANTIC, cls, fields)

    @staticmethod
    def _build(code: int, cls: type[Any], body: Any) -> Any:
        if type(body) is not (list if code == NAMEDTUPLE else dict) and code != ENUM:
            raise shape(code, "a list of fields" if code == NAMEDTUPLE else "a map of fields", body)
        try:
            if code == ENUM:
                return cls(body)
            # body is the list or the map checked above
            return cls(*body) if code == NAMEDTUPLE else cls(**cast("dict[str, Any]", body))
        except Exception as exc:  # noqa: BLE001 - any constructor failure is a decode failure
            # a map shows its field names; the casts only undo the unknown item types of the check above
            fields = sorted(cast("Iterable[Any]", body)) if isinstance(body, dict) else cast(object, body)
            raise SerializationError(
                f"Cannot rebuild stored {_path(cls)} from its fields {fields!r}: {exc}"
            ) from exc


_MESSAGES = sum(1 for module, _ in KNOWN if module.startswith("langchain_core.messages."))
"""Class numbers below this are langchain-core messages (``KNOWN`` lists them first)."""


def _path(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def _is_named_tuple(obj: object, kind: type) -> bool:
    """``obj`` (of type ``kind``) is a named tuple (a plain bool: no narrowing of ``obj`` leaks to the caller)."""
    return isinstance(obj, tuple) and hasattr(kind, "_fields")


def _pydantic_fields(obj: Any, kind: type[Any]) -> dict[str, Any]:
    """The explicitly set fields of ``obj``, of model class ``kind`` (defaults are filled in again when rebuilding)."""
    fields: dict[str, Any] = (
        kind.__pydantic_fields__
    )  # the class's own dict (``model_fields`` is a slow property)
    given = obj.model_fields_set  # a set: its order differs from process to process, the class's does not
    values = {name: getattr(obj, name) for name in fields if name in given}
    extra = getattr(obj, "__pydantic_extra__", None)
    if extra:
        values.update(extra)
    return values
