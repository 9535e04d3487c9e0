"""Reading the values of an ``InMemorySaver`` thread: rows on demand, known values, a listing's memo.

A value is rebuilt by replaying its delta chain (:func:`~plait.checkpoint._delta.rebuild`)
back to the nearest value already materialized. A listing (``get_state_history``)
shares one :class:`Memo` across the checkpoints it builds, so each chain is
replayed once for the whole history.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import Any, NamedTuple

from plait.checkpoint._delta import DELTA, FULL, Entry, ValueCache, rebuild
from plait.checkpoint._records import ThreadLog

__all__ = ["Known", "Memo", "Rows", "SeqBlob", "replay"]


class SeqBlob(NamedTuple):
    """One value row of a record: a full value, or a delta against the row stored in record ``prev``."""

    kind: str
    prev: int | None
    data: bytes


class Rows(Mapping[int, SeqBlob]):
    """The value rows of one key, read from a thread's records on demand (for :func:`rebuild`).

    Each record is decoded once: ``records`` (seq -> decoded record) keeps them,
    and a listing passes the same dict to every rebuild of the thread.
    """

    __slots__ = ("channel", "loads", "records", "th")

    def __init__(
        self,
        loads: Callable[[bytes], Any],
        th: ThreadLog,
        channel: str,
        records: dict[int, list[Any]] | None = None,
    ) -> None:
        self.loads, self.th, self.channel = loads, th, channel
        self.records = {} if records is None else records

    def __getitem__(self, seq: int) -> SeqBlob:
        record = self.records.get(seq)
        if record is None:
            record = self.records[seq] = self.loads(self.th.record(seq))
        row = record[5][self.channel]
        return SeqBlob(FULL, None, row) if isinstance(row, bytes) else SeqBlob(DELTA, row[0], row[1])

    def __iter__(self) -> Iterator[int]:  # noqa: D105
        return iter(range(len(self)))

    def __len__(self) -> int:  # noqa: D105
        return len(self.th)


class Known(Mapping[int, Entry]):
    """Values :func:`rebuild` may start from: the listing's memo, else entries of the value cache.

    A chain is replayed only back to the nearest value already materialized,
    not to its full row.
    """

    __slots__ = ("_hit", "cache", "memo", "prefix")

    def __init__(
        self, memo: Mapping[int, Entry], cache: ValueCache[Entry], prefix: tuple[Hashable, ...]
    ) -> None:
        self.memo, self.cache, self.prefix = memo, cache, prefix
        self._hit: tuple[int, Entry] | None = None  # the last lookup: ``in`` then ``[]`` read the cache once

    def __getitem__(self, seq: int) -> Entry:
        hit = self._hit
        if hit is not None and hit[0] == seq:
            return hit[1]
        found = self.memo.get(seq)
        if found is None:
            found = self.cache.get((*self.prefix, seq))
            if found is None:
                raise KeyError(seq)
        self._hit = (seq, found)
        return found

    def __iter__(self) -> Iterator[int]:  # noqa: D105
        return iter(self.memo)

    def __len__(self) -> int:  # noqa: D105
        return len(self.memo)


_WINDOW_ITEMS = 8_000_000
"""Budget of a listing's memo in list items (about 64 MB of references): a chain of ``n`` rows, taken
to hold a list of about ``n`` items, is replayed ``_WINDOW_ITEMS // n`` rows (at least ``_MIN_WINDOW``) at a time."""
_MIN_WINDOW = 256


class Memo:
    """What one listing shares across the checkpoints it builds, per thread log (``uid``).

    A value's delta chain is replayed once for the whole listing: every value
    along it is kept (:func:`rebuild` with ``keep_all``), so the older
    checkpoints cost no replay. A long chain is replayed a window at a time
    (see :func:`replay`), so the memo holds a bounded number of values.

    Attributes:
        records: Decoded records by seq (each decoded once; dropped once its checkpoint is built).
        values: Materialized values by ``(uid, channel)`` then seq.
        floor: Per uid, the seq of the checkpoint being built: in a thread whose
            ids grow with seq, values stored above it are needed no more.
    """

    __slots__ = ("floor", "records", "values")

    def __init__(self) -> None:
        self.records: dict[int, dict[int, list[Any]]] = {}
        self.values: dict[tuple[int, str], dict[int, Entry]] = {}
        self.floor: dict[int, int] = {}


def replay(  # noqa: PLR0913 - one listing's state
    th: ThreadLog,
    channel: str,
    seq: int,
    memo: Memo,
    values: dict[int, Entry],
    known: Known,
    loads: Callable[[bytes], Any],
) -> Entry:
    """Rebuild the value at ``seq`` for a listing, keeping the values along its chain in ``values``.

    A chain of at most ``window`` rows is replayed once, keeping every value.
    A longer one is replayed from its full row once, keeping only every
    ``window``-th value (each replay starting from the previous one), then
    the newest ``window`` values are kept from the last of them; the next
    window is rebuilt the same way when the listing gets there. Values
    stored above the checkpoint being built are dropped first.
    """
    floor = memo.floor.get(th.uid)
    if floor is not None and len(values) > 1:
        for dead in [s for s in values if s > floor]:
            del values[dead]
    rows = Rows(loads, th, channel, memo.records.setdefault(th.uid, {}))
    chain: list[int] = []  # as rebuild walks it: from seq back to a full row or a known value
    cursor: int | None = seq
    while cursor is not None and cursor not in known:
        chain.append(cursor)
        row = rows[cursor]
        cursor = row.prev if row.kind == DELTA else None
    window = max(_MIN_WINDOW, _WINDOW_ITEMS // max(1, len(chain)))
    for i in range((len(chain) - 1) // window * window, 0, -window):
        values[chain[i]] = rebuild(chain[i], rows, known, loads)[chain[i]]
    values.update(rebuild(seq, rows, known, loads, keep_all=True))
    return values[seq]
