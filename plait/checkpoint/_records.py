"""The storage of one ``InMemorySaver`` thread: ids, records and pending writes in a few flat buffers.

A W9-style server holds many short threads, so what a thread costs beyond
its payload matters. A :class:`ThreadLog` is one object holding three flat
containers, whatever the number of its checkpoints:

* ``ids``: the checkpoint ids. Canonical UUID text (what the runtime
  generates) is kept as 16 raw bytes per checkpoint in one ``bytearray``;
  raw bytes sort like the lowercase hex text, so ordering and bisection work
  on them directly. The first other id turns ``ids`` into a list of strings.
* ``buf``: an append-only ``bytearray`` holding every record and every
  pending-writes blob. No ``bytes`` object is kept per record, and the
  serializer's temporary output is freed at once (no heap fragmentation).
* ``idx``: an ``array`` of four offsets per checkpoint: record start and
  length, pending-writes start and length (length 0: none).

Replacing a record or a pending-writes blob appends the new bytes and leaves
the old ones dead; the buffer is compacted once more than half of it is dead.
"""

from __future__ import annotations

import itertools
from array import array
from bisect import bisect_left

from plait.checkpoint import _make

__all__ = ["ThreadLog"]

_uids = itertools.count()
_COMPACT_MIN = 4096  # dead bytes tolerated whatever the buffer size
_memo: tuple[str, bytes] = ("", b"")  # the last id converted: a put converts its parent's id again
_memo2: tuple[str, bytes] = ("", b"")  # the one before (a read converts the parent's id between two writes)


def _remember(cid: str, raw: bytes) -> None:
    global _memo, _memo2  # noqa: PLW0603 - tuples, replaced atomically
    _memo2, _memo = _memo, (cid, raw)


def pack_id(cid: str) -> bytes | None:
    """16 raw bytes for a canonical (lowercase, dashed) UUID text; ``None`` for any other id."""
    memo = _memo
    if cid == memo[0]:
        return memo[1]
    memo = _memo2
    if cid == memo[0]:
        return memo[1]
    memo = _make.made_raw
    if cid == memo[0]:  # the id made last (a new checkpoint's)
        _remember(cid, memo[1])
        return memo[1]
    if (
        len(cid) != 36
        or cid[8] != "-"
        or cid[13] != "-"
        or cid[18] != "-"
        or cid[23] != "-"
        or cid != cid.lower()
    ):
        return None
    try:
        raw = bytes.fromhex(cid.replace("-", ""))  # (a dash elsewhere leaves an odd or short hex text)
    except ValueError:
        return None
    if len(raw) != 16:  # whitespace (skipped by fromhex) leaves fewer bytes
        return None
    _remember(cid, raw)
    return raw


def unpack_id(raw: bytes | bytearray) -> str:
    """The UUID text of 16 raw bytes."""
    memo = _memo
    if raw == memo[1]:
        return memo[0]
    memo = _memo2
    if raw == memo[1]:
        return memo[0]
    h = raw.hex()
    cid = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    _remember(cid, bytes(raw))
    return cid


class ThreadLog:
    """The checkpoints of one (thread, namespace), by write order (``seq``).

    Attributes:
        ids: Checkpoint ids: 16 raw bytes each (``bytearray``) or a list of strings.
        buf: Records and pending-writes blobs, appended.
        idx: Per seq: record offset, record length, writes offset, writes length.
        last: Seq of the newest (greatest) id, or -1 when empty.
        ordered: Ids grow with seq, so bisection finds them.
        dead: Bytes of ``buf`` no longer referenced.
        uid: Tells cache keys of a rebuilt (pruned) thread apart.
    """

    __slots__ = ("buf", "dead", "ids", "idx", "last", "ordered", "uid")

    def __init__(self) -> None:
        self.ids: bytearray | list[str] = bytearray()
        self.buf = bytearray()
        self.idx = array("I")
        self.last = -1
        self.ordered = True
        self.dead = 0
        self.uid = next(_uids)

    def __len__(self) -> int:
        return len(self.idx) >> 2

    def cid(self, seq: int) -> str:
        """The id of checkpoint ``seq``."""
        ids = self.ids
        if isinstance(ids, list):
            return ids[seq]
        return unpack_id(ids[seq << 4 : (seq + 1) << 4])

    @property
    def head(self) -> str | None:
        """The newest (greatest) checkpoint id, or ``None``."""
        return None if self.last < 0 else self.cid(self.last)

    def _key(self, seq: int) -> bytes | bytearray | str:
        ids = self.ids
        return ids[seq] if isinstance(ids, list) else ids[seq << 4 : (seq + 1) << 4]

    def find(self, cid: str) -> int | None:
        """The seq of checkpoint ``cid``, or ``None``."""
        ids, last = self.ids, self.last
        if last < 0:
            return None
        if isinstance(ids, list):
            if cid == ids[last]:
                return last
            return None if cid > ids[last] else self._search(cid)
        key = pack_id(cid)
        if key is None:
            return None
        top = ids[last << 4 : (last + 1) << 4]
        if key == top:  # pyright: ignore[reportUnnecessaryComparison]  # bytes == bytearray compares contents
            return last
        return None if key > top else self._search(key)

    def _search(self, key: bytes | bytearray | str) -> int | None:
        ids, n = self.ids, len(self)
        if self.ordered:
            i = bisect_left(range(n), key, key=self._key)
            return i if i < n and self._key(i) == key else None
        if isinstance(ids, list):
            return ids.index(key) if isinstance(key, str) and key in ids else None
        if isinstance(key, str):
            return None
        i = ids.find(key)
        while i >= 0 and i & 15:
            i = ids.find(key, i + 1)
        return None if i < 0 else i >> 4

    def add(self, cid: str, record: bytes | bytearray, writes: bytes | bytearray | None = None) -> int:
        """Append a checkpoint record (and its pending writes); return its seq."""
        seq = len(self.idx) >> 2
        ids = self.ids
        last = self.last
        if not isinstance(ids, list):
            raw = pack_id(cid)
            if raw is None:  # not a canonical UUID: keep every id as text from now on
                ids = self.ids = [self.cid(i) for i in range(seq)]
            else:
                if last < 0 or raw > ids[last << 4 : (last + 1) << 4]:
                    self.last = seq
                else:
                    self.ordered = False
                ids += raw
                self._add_offsets(record, writes)
                return seq
        if last < 0 or cid > ids[last]:
            self.last = seq
        else:
            self.ordered = False
        ids.append(cid)
        self._add_offsets(record, writes)
        return seq

    def _add_offsets(self, record: bytes | bytearray, writes: bytes | bytearray | None) -> None:
        buf = self.buf
        start = len(buf)
        buf += record
        end = len(buf)
        if writes:
            buf += writes
        offsets = (start if record else 0, end - start, end if writes else 0, len(buf) - end)
        try:
            self.idx.extend(offsets)
        except OverflowError:  # a thread beyond 4 GiB
            self.idx = array("Q", self.idx)
            self.idx.extend(offsets)

    def _append(self, data: bytes | bytearray | None) -> tuple[int, int]:
        if not data:
            return 0, 0
        start = len(self.buf)
        self.buf += data
        return start, len(data)

    def _slice(self, pos: int) -> bytes | None:
        idx = self.idx
        start, size = idx[pos], idx[pos + 1]
        return bytes(self.buf[start : start + size]) if size else None

    def record(self, seq: int) -> bytes:
        """The record bytes of checkpoint ``seq``."""
        return self._slice(seq << 2) or b""

    def writes(self, seq: int) -> bytes | None:
        """The pending-writes bytes of checkpoint ``seq``, or ``None``."""
        return self._slice((seq << 2) + 2)

    def set_record(self, seq: int, data: bytes) -> None:
        """Replace the record of checkpoint ``seq``."""
        self._replace(seq << 2, data)

    def set_writes(self, seq: int, data: bytes) -> None:
        """Replace the pending writes of checkpoint ``seq``."""
        self._replace((seq << 2) + 2, data)

    def _replace(self, pos: int, data: bytes) -> None:
        self.dead += self.idx[pos + 1]
        start, size = self._append(data)
        try:
            self.idx[pos], self.idx[pos + 1] = start, size
        except OverflowError:
            self.idx = array("Q", self.idx)
            self.idx[pos], self.idx[pos + 1] = start, size
        if self.dead > _COMPACT_MIN and self.dead * 2 > len(self.buf):
            self._compact()

    def _compact(self) -> None:
        """Copy the live bytes into a new buffer."""
        old, idx, buf = self.buf, self.idx, bytearray()
        for pos in range(0, len(idx), 2):
            start, size = idx[pos], idx[pos + 1]
            if size:
                idx[pos] = len(buf)
                buf += old[start : start + size]
        self.buf, self.dead = buf, 0

    def newest_first(self) -> list[int]:
        """Seqs ordered by checkpoint id, newest first."""
        n = len(self)
        if self.ordered:
            return list(range(n - 1, -1, -1))
        return sorted(range(n), key=self._key, reverse=True)
