"""Deflating stored payloads, and inflating them within a declared, bounded size.

A payload worth compressing is stored as ``b"\\xc1\\xff"`` + its uncompressed length
(4 bytes, big-endian) + raw deflate data. ``0xc1`` is a byte MessagePack never
uses, and ``0xff`` cannot start raw deflate data, so older readers fail loudly on
these rows instead of misreading them. Inflating stops at the declared length;
rows written before the length header (``b"\\xc1"`` + raw deflate data) inflate
up to the caller's bound only.
"""

from __future__ import annotations

import zlib

from plait.errors import SerializationError

__all__ = ["DEFLATED", "LIMIT", "deflate", "inflate"]

DEFLATED = b"\xc1"  # a byte MessagePack never uses: marks a deflated payload
_SIZED = b"\xff"  # after DEFLATED: a 4-byte length follows (0xff cannot start raw deflate data: block type 3)
_DEFLATED_SIZED = DEFLATED + _SIZED
_SHRINK_FROM = 96  # smaller payloads do not compress enough to pay for it
LIMIT = 2**32 - 1  # the length field has 4 bytes


def deflate(data: bytes) -> bytes:
    """``data`` deflated with its length declared, when that saves space; else ``data``."""
    size = len(data)
    if size < _SHRINK_FROM:
        return data
    packed = zlib.compressobj(1, zlib.DEFLATED, -15)
    small = packed.compress(data) + packed.flush()
    return b"".join((_DEFLATED_SIZED, size.to_bytes(4, "big"), small)) if len(small) + 12 < size else data


def inflate(data: bytes, max_bytes: int) -> bytes:
    """The payload ``data`` (starting with :data:`DEFLATED`) inflated, at most ``max_bytes`` long.

    Raises:
        SerializationError: the data is truncated, longer or shorter than declared, or too large.
    """
    where = f"Cannot decode stored value ({len(data)} bytes)"
    stream = zlib.decompressobj(-15)
    if data[1:2] == _SIZED:
        size = int.from_bytes(data[2:6], "big")
        if len(data) < 6 or size > max_bytes:
            raise SerializationError(
                f"{where}: truncated, or declares {size} bytes uncompressed, more than "
                f"max_value_bytes={max_bytes} (Serializer(max_value_bytes=...) raises it)"
            )
        out = stream.decompress(memoryview(data)[6:], size + 1)
        if len(out) != size or not stream.eof or stream.unused_data:
            raise SerializationError(
                f"{where}: the compressed data does not match its declared length {size} (the row is corrupt)"
            )
        return out
    out = stream.decompress(memoryview(data)[1:], max_bytes + 1)  # written before the length header
    if len(out) > max_bytes:
        raise SerializationError(
            f"{where}: it inflates to more than max_value_bytes={max_bytes} "
            "(Serializer(max_value_bytes=...) raises the limit)"
        )
    if not stream.eof or stream.unused_data:
        raise SerializationError(f"{where}: the compressed data is truncated or followed by other bytes")
    return out
