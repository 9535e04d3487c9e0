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
from collections.abc import Callable, Mapping, Sequence
from typing import Any

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


def _quoted(value: str | None) -> str:
    """One text element of an array literal: double-quoted, or ``NULL``."""
    if value is None:
        return "NULL"
    if "\x00" in value:
        raise _Unsupported
    if "\\" in value or '"' in value:
        value = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + value + '"'


def _hex(value: bytes | None) -> str:
    """One bytea element of an array literal: its hex digits, or ``NULL`` (nothing to double)."""
    return "NULL" if value is None else '"\\\\x' + value.hex() + '"'


def _number(value: int | None) -> str:
    return "NULL" if value is None else str(value)


def _flag(value: bool | None) -> str:
    return "NULL" if value is None else "t" if value else "f"


_ELEMENTS: dict[type, tuple[Callable[[Any], str], str]] = {
    str: (_quoted, ""),
    bytes: (_hex, "::bytea[]"),
    int: (_number, ""),
    bool: (_flag, ""),
}
"""Each element type an array may hold: how an element is written, and the cast after the array."""


def _array(items: Sequence[object]) -> str:
    if not items:
        return "'{}'"
    kinds: set[type] = set(map(type, items))
    kinds.discard(_NONE)
    found = _ELEMENTS.get(kinds.pop() if kinds else str) if len(kinds) < 2 else None  # NULLs only: text
    if found is None:
        raise _Unsupported  # mixed or other element types
    element, cast_to = found
    body = "{" + ",".join(map(element, items)) + "}"
    if element is _quoted:  # the array literal is itself a text literal: its quotes doubled
        return _text(body)
    return "'" + body + "'" + cast_to


def _signed(text: str) -> str:
    return "(" + text + ")" if text[0] == "-" else text  # never "--" (a comment), nor "-(x::int8)"


def _int(value: int) -> str:
    return _signed(str(value))


def _float(value: float) -> str:
    if not math.isfinite(value):
        raise _Unsupported
    return _signed(repr(value))


def _bytes(value: bytes) -> str:
    return "'\\x" + value.hex() + "'::bytea"


_WRITERS: dict[type, Callable[[Any], str]] = {
    type(None): lambda _: "NULL",
    bool: lambda value: "true" if value else "false",
    int: _int,
    float: _float,
    str: _text,
    bytes: _bytes,
    list: _array,  # (psycopg writes a tuple as a record, not an array)
}
"""Each exact type written here (a subclass may mean something else to psycopg)."""


def literal(value: object) -> str:
    """``value`` as a SQL literal (exact types only: a subclass may mean something else to psycopg).

    Raises:
        _Unsupported: a type (or a value: NUL in text, a float that is not finite) not written here.
    """
    writer = _WRITERS.get(type(value))
    if writer is None:
        raise _Unsupported
    return writer(value)


def render(sql: str, params: Sequence[object] | Mapping[str, object]) -> str | None:
    """``sql`` (``%s`` / ``%(name)s`` placeholders, ``%%`` for ``%``) with ``params`` written in, or
    ``None`` when a value is not one this module writes."""
    try:
        if isinstance(params, Mapping):
            return sql % {k: literal(v) for k, v in params.items()}
        return sql % tuple(map(literal, params))
    except _Unsupported:
        return None
