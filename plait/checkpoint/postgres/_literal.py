"""SQL literals for the value types plait's own statements bind, to send several statements as one query.

psycopg's ``ClientCursor.mogrify`` adapts any type through its dumper registry, and quotes array
elements with a regular expression per element: a tenth of a ``plait serve`` worker's CPU on
PostgreSQL went there. The statements of a save bind only ``None``, ``bool``, ``int``, ``float``,
``str``, ``bytes`` and lists of ``str``, of ``bytes``, of ``int`` or of ``bool``; :func:`render` writes those directly and
answers ``None`` for anything else (the caller then lets psycopg do it). It needs
``standard_conforming_strings`` on and a UTF-8 connection (:func:`usable`), PostgreSQL's defaults.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, cast

__all__ = ["render", "usable"]


_NONE = type(None)


class _Unsupported(Exception):
    """A value this module does not write (psycopg adapts it instead)."""


def usable(status: str | None, encoding: str) -> bool:
    """Whether literals written here mean on this connection what they say.

    Args:
        status: The server's ``standard_conforming_strings`` (``conn.info.parameter_status``).
        encoding: The connection's Python encoding name (``conn.info.encoding``).
    """
    return status == "on" and encoding == "utf-8"


def _text(value: str) -> str:
    if "\x00" in value:
        raise _Unsupported  # PostgreSQL text cannot hold NUL: psycopg raises its own error
    return "'" + value.replace("'", "''") + "'"


def _quoted(value: str) -> str:
    """One non-NULL text element of an array literal, double-quoted."""
    if "\x00" in value:
        raise _Unsupported
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _array(items: Sequence[object]) -> str:
    kinds: set[type] = set(map(type, items))
    kinds.discard(_NONE)
    if not kinds or kinds == {str}:
        texts = cast("Sequence[str | None]", items)
        return _text("{" + ",".join("NULL" if item is None else _quoted(item) for item in texts) + "}")
    if kinds == {bytes}:  # hex digits, NULL and quotes: nothing to double
        blobs = cast("Sequence[bytes | None]", items)
        return (
            "'{" + ",".join("NULL" if b is None else '"\\\\x' + b.hex() + '"' for b in blobs) + "}'::bytea[]"
        )
    if kinds == {int}:
        return "'{" + ",".join("NULL" if item is None else str(item) for item in items) + "}'"
    if kinds == {bool}:
        return "'{" + ",".join("NULL" if item is None else "t" if item else "f" for item in items) + "}'"
    raise _Unsupported  # mixed or other element types


def _signed(text: str) -> str:
    return "(" + text + ")" if text[0] == "-" else text  # never "--" (a comment), nor "-(x::int8)"


def literal(value: object) -> str:
    """``value`` as a SQL literal (exact types only: a subclass may mean something else to psycopg).

    Raises:
        _Unsupported: a type (or a value: NUL in text, a float that is not finite) not written here.
    """
    if value is None:
        return "NULL"
    kind = type(value)
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return _signed(str(value))
    if kind is float:
        if not math.isfinite(cast("float", value)):
            raise _Unsupported
        return _signed(repr(value))
    if kind is str:
        return _text(cast("str", value))
    if kind is bytes:
        return "'\\x" + cast("bytes", value).hex() + "'::bytea"
    if kind is list:  # (psycopg writes a tuple as a record, not an array)
        return _array(cast("Sequence[object]", value))
    raise _Unsupported


def render(sql: str, params: Sequence[Any] | Mapping[str, Any]) -> str | None:
    """``sql`` (``%s`` / ``%(name)s`` placeholders, ``%%`` for ``%``) with ``params`` written in, or
    ``None`` when a value is not one this module writes."""
    try:
        if isinstance(params, Mapping):
            return sql % {k: literal(v) for k, v in params.items()}
        return sql % tuple(literal(v) for v in params)
    except _Unsupported:
        return None
