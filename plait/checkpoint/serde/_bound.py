"""Refusing stored rows whose decoding would take far more memory than the row takes on disk.

Inflating is bounded (:mod:`plait.checkpoint._deflate`), but each MessagePack object costs
more once decoded than its bytes: an empty map is one byte and a 64-byte dict, a small
extension record a langchain-core message of about 900 bytes. :func:`check` walks the
MessagePack bytes once, without recursion and without building anything, adds up an upper
estimate of what decoding them would take, and refuses a row whose estimate is over
``max(64 MiB, 64 times its stored size)``. Rows so small that even their worst case fits
are not walked at all (most rows: a normal read costs one comparison).
"""

from __future__ import annotations

from plait.errors import SerializationError

__all__ = ["FLOOR", "RATIO", "SKIP", "budget", "check", "fit"]

FLOOR = 64 * 1024 * 1024
"""Decoding any row may take this much."""
RATIO = 64
"""... or this many times the row's stored size, whichever is more."""

# upper estimates of what one object takes decoded, with its slot in the container holding it
_SCALAR, _NUMBER, _TEXT, _ARRAY, _MAP, _MAP_ITEM = 10, 48, 80, 72, 136, 56
"""(CPython 3.11: a dict of 1-5 items takes 184 bytes, of 11-20 464; a str 49 + its length, and a
non-ASCII one its UTF-8 form too once decoded; a list 56.)"""
_EXT, _EXT_BYTE, _EXT_MAX = 256, 64, 1024
"""An extension record: 256 bytes and 64 per payload byte, at most 1024 (a message: about 900)."""
_WORST = max(_MAP, (_EXT + _EXT_BYTE + _ARRAY) // 3 + 1)
"""The most the estimate charges per byte (an empty map; a 3-byte extension record holding an empty array)."""
SKIP = FLOOR // _WORST
"""Rows that decode from fewer bytes than this are never walked: even their worst case fits."""

# lead byte -> (kind, size of the length field or of the value); kinds below
_KFIX, _KNUM, _KSTR, _KARR, _KMAPK, _KEXT, _KFIXEXT, _KBAD = range(8)


def _lead_table() -> list[tuple[int, int]]:
    table = [(_KBAD, 0)] * 256
    for b in range(0x00, 0x80):
        table[b] = (_KFIX, 0)
    for b in range(0xE0, 0x100):
        table[b] = (_KFIX, 0)
    for b in range(0x80, 0x90):
        table[b] = (_KMAPK, -(b & 0x0F) - 1)  # negative: a count held in the lead byte
    for b in range(0x90, 0xA0):
        table[b] = (_KARR, -(b & 0x0F) - 1)
    for b in range(0xA0, 0xC0):
        table[b] = (_KSTR, -(b & 0x1F) - 1)
    for b in (0xC0, 0xC2, 0xC3):
        table[b] = (_KFIX, 0)
    for b, size in ((0xC4, 1), (0xC5, 2), (0xC6, 4), (0xD9, 1), (0xDA, 2), (0xDB, 4)):
        table[b] = (_KSTR, size)
    for b, size in ((0xC7, 1), (0xC8, 2), (0xC9, 4)):
        table[b] = (_KEXT, size)
    for b, size in ((0xCA, 4), (0xCB, 8), (0xCC, 1), (0xCD, 2), (0xCE, 4), (0xCF, 8)):
        table[b] = (_KNUM, size)
    for b, size in ((0xD0, 1), (0xD1, 2), (0xD2, 4), (0xD3, 8)):
        table[b] = (_KNUM, size)
    for b, size in ((0xD4, 1), (0xD5, 2), (0xD6, 4), (0xD7, 8), (0xD8, 16)):
        table[b] = (_KFIXEXT, size)
    table[0xDC], table[0xDD], table[0xDE], table[0xDF] = (_KARR, 2), (_KARR, 4), (_KMAPK, 2), (_KMAPK, 4)
    return table


_LEAD = _lead_table()


def budget(stored: int) -> int:
    """The most memory decoding a row of ``stored`` bytes may take."""
    return max(FLOOR, RATIO * stored)


def _fits(data: bytes, stored: int) -> bool:
    limit = budget(stored)
    return len(data) * _WORST <= limit or _estimate(data, limit) <= limit


def fit(data: bytes, stored: bytes) -> bytes:
    """What to store for ``data`` (MessagePack) so that :func:`check` passes it when it is read back:
    ``stored`` (its deflated form), else ``data`` itself (deflated, many tiny objects compress too
    well for their stored size). A writer never stores what its reader would refuse.

    Raises:
        SerializationError: even undeflated, the value's objects would take more than :data:`RATIO`
            times its size (millions of empty maps…).
    """
    if _fits(data, len(stored)):
        return stored
    if stored is not data and _fits(data, len(data)):
        return data
    raise SerializationError(
        f"Cannot serialize value: its {len(data)} bytes hold so many tiny objects that reading it back "
        f"would take more than {RATIO} times its size in memory, which plait refuses as a decompression "
        "bomb; store fewer, larger values (e.g. lists of numbers instead of one dict per number)"
    )


def check(data: bytes, stored: int) -> None:
    """Refuse ``data`` (MessagePack, ``stored`` bytes on disk) if decoding it may take over :func:`budget`.

    Raises:
        SerializationError: the estimate is over the budget, or the bytes are not MessagePack.
    """
    limit = budget(stored)
    if len(data) * _WORST <= limit:
        return
    cost = _estimate(data, limit)
    if cost > limit:
        raise SerializationError(
            f"Cannot decode stored value ({stored} bytes stored, {len(data)} decoded): its objects would "
            f"take more than {limit} bytes of memory, over {RATIO} times its stored size (a row of "
            "many tiny objects that plait refuses to write: damaged or planted)"
        )


def _estimate(data: bytes, limit: int) -> int:  # noqa: C901, PLR0912 - one dispatch loop
    """An upper estimate of the memory decoding ``data`` takes (stops once over ``limit``)."""
    pos, end, todo, cost = 0, len(data), 1, 0
    outer: list[tuple[int, int]] = []  # the extension records being read: (items left outside, end)
    lead = _LEAD
    while True:
        while todo == 0:
            if not outer:
                return cost
            if pos > end:
                raise _corrupt(len(data))
            todo, resume = outer.pop()
            pos, end = end, resume
        if pos >= end or cost > limit:
            if cost > limit:
                return cost
            raise _corrupt(len(data))
        todo -= 1
        byte = data[pos]
        kind, size = lead[byte]
        pos += 1
        if kind == _KFIX:
            cost += _SCALAR
        elif kind == _KNUM:
            cost += _NUMBER
            pos += size
        elif kind == _KBAD:
            raise _corrupt(len(data))
        else:
            if size < 0:
                count = -size - 1
            elif kind == _KFIXEXT:
                count = size
            else:
                count = int.from_bytes(data[pos : pos + size], "big")
                pos += size
            if kind == _KSTR:
                cost += _TEXT + 4 * count
                pos += count
            elif kind == _KARR:
                cost += _ARRAY
                todo += count
            elif kind == _KMAPK:
                cost += _MAP + _MAP_ITEM * count
                todo += 2 * count
            else:
                cost += min(_EXT_MAX, _EXT + _EXT_BYTE * count)
                pos += 1  # the type byte; the payload is one MessagePack value of ``count`` bytes
                # walked as the reader reads it: its one value, then on at the record's end
                if pos + count > end:
                    raise _corrupt(len(data))
                outer.append((todo, end))
                todo, end = 1, pos + count


def _corrupt(size: int) -> SerializationError:
    return SerializationError(f"Cannot decode stored value ({size} bytes): it is not valid MessagePack")
