"""``JsonPlusSerializer``: LangGraph's serializer name over plait's safe codec.

Values are stored with plait's MessagePack codec (tag ``"msgpack"``); ``None`` and raw bytes keep
LangGraph's ``"null"`` / ``"bytes"`` tags, and plain JSON (tag ``"json"``) reads back as data. Classes are
rebuilt by exact name only, as everywhere in plait: ``allowed_msgpack_modules`` adds
``(module, class name)`` pairs to the allow-list; options that would load arbitrary classes
(``pickle_fallback=True``, ``allowed_msgpack_modules=True``, ``allowed_json_modules``) raise
``NotImplementedError`` instead of being ignored.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from plait.checkpoint.serde._codec import Serializer
from plait.errors import SerializationError

__all__ = ["JsonPlusSerializer"]


def _allowed(modules: Iterable[tuple[str, ...] | str] | bool | None) -> list[str]:
    if modules is None or modules is False:
        return []
    if modules is True:
        raise NotImplementedError(
            "JsonPlusSerializer(allowed_msgpack_modules=True) is not supported: plait never rebuilds "
            "arbitrary classes from stored rows; list the classes as (module, name) pairs instead"
        )
    out: list[str] = []
    for item in modules:
        out.append(item if isinstance(item, str) else ".".join(item))
    return out


class JsonPlusSerializer(Serializer):
    """plait's codec with LangGraph's ``SerializerProtocol`` methods.

    Args:
        pickle_fallback: Must be false: plait never pickles.
        allowed_json_modules: Not supported (JSON constructor records are never rebuilt).
        allowed_msgpack_modules: Extra classes, as ``(module, name)`` pairs or dotted paths.
        compress: Deflate large payloads (see :class:`~plait.checkpoint.serde.Serializer`).
    """

    def __init__(
        self,
        *,
        pickle_fallback: bool = False,
        allowed_json_modules: Iterable[tuple[str, ...]] | bool | None = None,
        allowed_msgpack_modules: Iterable[tuple[str, ...] | str] | bool | None = None,
        compress: bool = False,
    ) -> None:
        if pickle_fallback:
            raise NotImplementedError("JsonPlusSerializer(pickle_fallback=True): plait never pickles")
        if allowed_json_modules not in (None, False):
            raise NotImplementedError(
                "JsonPlusSerializer(allowed_json_modules=...): plait does not rebuild classes from JSON "
                "constructor records; use allowed_msgpack_modules"
            )
        super().__init__(_allowed(allowed_msgpack_modules), compress=compress)

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        """Encode ``obj`` as ``(tag, bytes)``."""
        if obj is None:
            return "null", b""
        if isinstance(obj, bytes):
            return "bytes", obj
        if isinstance(obj, bytearray):
            return "bytearray", bytes(obj)
        return "msgpack", self.dumps(obj)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        """Decode a pair made by :meth:`dumps_typed` (or plain JSON tagged ``"json"``).

        Raises:
            SerializationError: An unknown tag or corrupt bytes.
        """
        tag, payload = data
        if tag == "null":
            return None
        if tag == "bytes":
            return payload
        if tag == "bytearray":
            return bytearray(payload)
        if tag == "msgpack":
            return self.loads(payload)
        if tag == "json":
            try:
                return json.loads(payload)
            except ValueError as exc:
                raise SerializationError(f"Cannot decode stored JSON value: {exc}") from exc
        raise SerializationError(f"Cannot decode stored value of unknown type tag {tag!r}")
