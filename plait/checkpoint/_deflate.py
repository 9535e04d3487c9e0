"""Deflating stored payloads, and inflating them within a declared, bounded size.

A payload worth compressing is stored as ``b"\\xc1\\xff"`` + its uncompressed length
(4 bytes, big-endian) + raw deflate data. ``0xc1`` is a byte MessagePack never
uses, and ``0xff`` cannot start raw deflate data, so older readers fail loudly on
these rows instead of misreading them. Inflating stops at the declared length;
rows written before the length header (``b"\\xc1"`` + raw deflate data) inflate
up to the caller's bound only.

Both forms are also bounded by their stored length: a payload never inflates to more
than :data:`MAX_RATIO` times its stored size. plait never writes a deflated payload
that compresses better than that (it stores such data uncompressed), so only a planted
or damaged row can exceed it. This bounds the *bytes* a row decodes from; the objects
they decode to are bounded by :mod:`plait.checkpoint.serde._bound` (an empty map is one byte
of MessagePack and a 64-byte dict).
"""

from __future__ import annotations

import sys
import zlib

from plait.errors import SerializationError

__all__ = ["DEFLATED", "LIMIT", "MAX_RATIO", "deflate", "inflate"]

DEFLATED = b"\xc1"  # a byte MessagePack never uses: marks a deflated payload
_SIZED = b"\xff"  # after DEFLATED: a 4-byte length follows (0xff cannot start raw deflate data: block type 3)
_DEFLATED_SIZED = DEFLATED + _SIZED
_SHRINK_FROM = 96  # smaller payloads do not compress enough to pay for it
LIMIT = 2**32 - 1  # the length field has 4 bytes
MAX_RATIO = 32
"""The most a stored payload may inflate, as a multiple of its stored size (text compresses 2-5 times)."""
_OLD_RATIO = 256
"""The same bound for rows written before the length header: their writer (deflate level 1) cannot
compress more than about 230 times, so no row it wrote is refused."""


if sys.version_info >= (3, 11):

    def _compress(data: bytes, bits: int) -> bytes:
        return zlib.compress(data, 1, -bits)  # one call: the compressor's set-up dominates small payloads

else:

    def _compress(data: bytes, bits: int) -> bytes:
        packed = zlib.compressobj(1, zlib.DEFLATED, -bits)
        return packed.compress(data) + packed.flush()


def deflate(data: bytes) -> bytes:
    """``data`` deflated with its length declared, when that saves space; else ``data``."""
    size = len(data)
    if size < _SHRINK_FROM:
        return data
    # a window just large enough for the payload (zlib reaches back the window less 262 bytes), so
    # the output is the same as with the full window: the compressor's set-up dominates small
    # payloads (a 250-byte one: 99 -> 35 us); any window inflates with the reader's 32 KiB one
    bits = max(9, min(15, (size + 261).bit_length()))
    small = _compress(data, bits)
    if len(small) + 12 >= size or size > (len(small) + 6) * MAX_RATIO:  # no gain, or readers would refuse it
        return data
    return b"".join((_DEFLATED_SIZED, size.to_bytes(4, "big"), small))


def inflate(data: bytes, max_bytes: int) -> bytes:
    """The payload ``data`` (starting with :data:`DEFLATED`) inflated, at most ``max_bytes`` long.

    Raises:
        SerializationError: the data is truncated, longer or shorter than declared, or too large.
    """
    where = f"Cannot decode stored value ({len(data)} bytes)"
    stream = zlib.decompressobj(-15)
    if data[1:2] == _SIZED:
        size = int.from_bytes(data[2:6], "big")
        if len(data) < 6 or size > max_bytes or size > len(data) * MAX_RATIO:
            raise SerializationError(
                f"{where}: truncated, or declares {size} bytes uncompressed, more than "
                f"{MAX_RATIO} times its stored size or max_value_bytes={max_bytes} (the row was not "
                "written by plait: damaged or planted)"
            )
        out = stream.decompress(memoryview(data)[6:], size + 1)
        if len(out) != size or not stream.eof or stream.unused_data:
            raise SerializationError(
                f"{where}: the compressed data does not match its declared length {size} (the row is corrupt)"
            )
        return out
    bound = min(max_bytes, len(data) * _OLD_RATIO)  # a row written before the length header
    out = stream.decompress(memoryview(data)[1:], bound + 1)
    if len(out) > bound:
        raise SerializationError(
            f"{where}: it inflates to more than {min(max_bytes, len(data) * _OLD_RATIO)} bytes "
            f"({_OLD_RATIO} times its stored size, at most max_value_bytes={max_bytes}); plait never "
            "wrote such a row (damaged or planted)"
        )
    if not stream.eof or stream.unused_data:
        raise SerializationError(f"{where}: the compressed data is truncated or followed by other bytes")
    return out
