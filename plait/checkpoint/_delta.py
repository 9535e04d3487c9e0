"""Delta encoding of list values, and the value cache the SQL savers share.

A conversation's message list grows by one or two items per turn, yet the
runtime hands the saver the whole list every step. Writing it whole makes the
bytes written per turn grow with the conversation. Instead, a changed list is
stored as a *delta* against the value it replaced: segments that either keep a
slice of the previous list or add new items::

    [(KEEP, 0, 40), (ADD, [msg41, msg42])]        # append
    [(KEEP, 3, 40), (ADD, [summary])]             # trim the front, add one
    [(KEEP, 0, 7), (ADD, [edited]), (KEEP, 8, 40)]  # replace one item by id

Segments are found by object *identity*: the reducers build the new list from
the very objects of the old one, so an unchanged message is recognised without
comparing or encoding it. A stored delta names the value it applies to (its
``prev``); a value is rebuilt by following ``prev`` back to a full value and
replaying the deltas forward.

Items are compared by identity only, so mutating a stored object in place
(without putting a new object in the list) is not seen as a change. An
append is recognised by one pass of identity checks over the old items
(pointer comparisons, no encoding).
"""

from __future__ import annotations

import gc
import operator
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Generic, NamedTuple, Protocol, TypeVar, cast

from plait.errors import SerializationError

__all__ = [
    "EMPTY_FIELDS",
    "ADD",
    "DELTA",
    "FULL",
    "KEEP",
    "LEVEL",
    "TOP",
    "Blob",
    "Entry",
    "Row",
    "ValueCache",
    "diff",
    "encode_value",
    "materialize",
    "rebuild",
]

KEEP = 0
ADD = 1
LEVEL = 2
"""A ``[LEVEL, n]`` segment closes a consolidated row (see ``plait.checkpoint._keyframe``); it adds nothing."""
FULL = "full"
DELTA = "delta"

Segment = list[Any]
"""``[KEEP, start, stop]`` or ``[ADD, items]``."""

SNAPSHOT_SLACK = 32
"""Write a full value once the chain holds this many dropped items (plus twice the live count)."""


def diff(old: Sequence[object], new: Sequence[object]) -> list[Segment]:
    """Segments that turn ``old`` into ``new``, matching items by identity.

    Args:
        old: The previous list (must stay alive and unchanged while diffing).
        new: The new list.

    Returns:
        Segments for :func:`materialize`; ``[KEEP, i, j]`` reuses ``old[i:j]``.
    """
    size = len(old)
    if size and len(new) >= size and all(map(operator.is_, old, new)):
        return [[KEEP, 0, size], [ADD, list(new[size:])]] if len(new) > size else [[KEEP, 0, size]]
    index = {id(item): i for i, item in enumerate(old)}
    segments: list[Segment] = []
    start = stop = -1
    added: list[object] = []
    for item in new:
        if start >= 0 and stop < size and old[stop] is item:
            stop += 1
            continue
        found = index.get(id(item))
        if found is not None and old[found] is not item:
            found = None
        if start >= 0:
            segments.append([KEEP, start, stop])
            start = -1
        if found is None:
            added.append(item)
            continue
        if added:
            segments.append([ADD, added])
            added = []
        start, stop = found, found + 1
    if start >= 0:
        segments.append([KEEP, start, stop])
    if added:
        segments.append([ADD, added])
    return segments


def materialize(base: Sequence[Any], segments: Sequence[Segment]) -> list[Any]:
    """Apply :func:`diff` segments to ``base``; returns a new list."""
    out: list[Any] = []
    for seg in segments:
        if seg[0] == KEEP:
            out.extend(base[seg[1] : seg[2]])
        elif seg[0] == ADD:
            out.extend(seg[1])
    return out


def kept(segments: Sequence[Segment]) -> int:
    """How many items the segments take from the base."""
    return sum(s[2] - s[1] for s in segments if s[0] == KEEP)


class Entry(NamedTuple):
    """A materialized value held in the cache.

    Attributes:
        items: The items, when the value is a list: a private copy, never handed out, so
            the cached value cannot change whatever happens to lists handed out.
        data: The encoded value, when it is not a list.
        chain: Items stored along its delta chain (back to the full value).
        shared: The list the value was stored from, handed back as is while it
            still holds exactly ``items`` (checked item by item: identity first,
            at C speed), so a live conversation keeps its list and whatever index
            the reducer attached to it.
    """

    items: list[Any] | None
    data: bytes | None
    chain: int
    shared: list[Any] | None = None
    trail: tuple[tuple[Any, int, int], ...] | None = None
    """``(row id, length, level)`` of the rows its value is built from since its last
    non-append row (level ``TOP``), ending with its own row; ``None`` when unknown."""

    def value(self, loads: Callable[[bytes], Any]) -> Any:
        """The value: the shared list while it is unchanged, else a new list or a newly decoded object."""
        items, shared = self.items, self.shared
        if items is None:
            assert self.data is not None  # noqa: S101 - one of the two is always set
            return loads(self.data)
        # list equality compares by identity first: an item changed in place is noticed, one
        # replaced by an equal object is the same stored value
        if shared is not None and len(shared) == len(items) and shared == items:
            return shared
        return items[:]


class Blob(NamedTuple):
    """One stored row of a value: a full value or a delta against ``prev``."""

    kind: str
    prev: str | None
    data: bytes


_K = TypeVar("_K", bound=Hashable)
_K_co = TypeVar("_K_co", bound=Hashable, covariant=True)
_V = TypeVar("_V")


class Row(Protocol[_K_co]):
    """What :func:`rebuild` reads of a stored row: :class:`Blob` (rows keyed by checkpoint id), or
    the ``InMemorySaver`` rows keyed by record number."""

    @property
    def kind(self) -> str: ...

    @property
    def prev(self) -> _K_co | None: ...

    @property
    def data(self) -> bytes: ...


def encode_value(
    value: Any,
    base: Entry | None,
    base_id: Any,  # noqa: PLR0913
    dumps: Callable[[object], bytes],
    *,
    share: bool = False,
) -> tuple[Blob, Entry]:
    """Decide how to store ``value``: a delta against ``base`` when that is smaller.

    Args:
        value: The new value.
        base: The cached previous value of the same key, if known.
        base_id: Where ``base`` is stored (the id its row is keyed by).
        dumps: The serializer.
        share: Let the returned entry hand ``value`` itself back while it is unchanged.

    Returns:
        The row to write and the cache entry for the new value.
    """
    if not isinstance(value, list):
        data = dumps(value)
        return Blob(FULL, None, data), Entry(None, data, 0)
    listed = cast("list[object]", value)  # isinstance leaves the item type unknown
    items = listed[:]  # a plain list, even of a list subclass (memcpy speed)
    shared = listed if share else None
    if base is not None and base.items is not None and base_id is not None:
        old, size = base.items, len(base.items)
        if size and len(items) >= size and items[:size] == old:  # an append: one C-speed comparison
            segments: list[Segment] = (
                [[KEEP, 0, size], [ADD, list(items[size:])]] if len(items) > size else [[KEEP, 0, size]]
            )
        else:
            segments = diff(old, items)
        reused = kept(segments)
        chain = base.chain + len(items) - reused
        if reused and chain <= 2 * len(items) + SNAPSHOT_SLACK:
            return Blob(DELTA, base_id, dumps(segments)), Entry(items, None, chain, shared)
    return Blob(FULL, None, dumps(list(items))), Entry(items, None, len(items), shared)


def _check_segments(segments: Any, base_size: int, rid: object) -> None:
    """Refuse a delta row whose segments are not ``[KEEP, start, stop]`` within the base or ``[ADD, list]``.

    Raises:
        SerializationError: the row is malformed (damaged or planted), naming the row.
    """
    if type(segments) is list:
        for raw in cast("list[object]", segments):  # a list, checked just above
            if type(raw) is not list or not raw:
                break
            seg = cast("Sequence[Any]", raw)  # a list, checked just above
            if (
                seg[0] == KEEP
                and len(seg) == 3
                and all(type(x) is int for x in seg[1:])
                and 0 <= seg[1] <= seg[2] <= base_size
            ):
                continue
            if seg[0] == ADD and len(seg) == 2 and type(seg[1]) is list:
                continue
            if seg[0] == LEVEL and len(seg) == 2 and type(seg[1]) is int:
                continue
            break
        else:
            return
    raise SerializationError(
        f"Stored delta row {rid} is malformed (expected [KEEP, start, stop] within "
        f"{base_size} items, [ADD, items] or [LEVEL, n] segments, found {segments!r:.80})"
    )


def rebuild(
    target: _K,
    rows: Mapping[_K, Row[_K]],
    known: Mapping[_K, Entry],
    loads: Callable[[bytes], Any],
    *,
    keep_all: bool = False,
) -> dict[_K, Entry]:
    """Rebuild the value stored at ``target`` by replaying its chain (see :func:`_rebuild`).

    The cyclic garbage collector is paused meanwhile: a long message list is thousands of
    acyclic objects, which it would otherwise traverse again and again (a third of a cold
    read's time) to free nothing.
    """
    if not gc.isenabled():  # paused by the caller (or another thread's rebuild): leave it so
        return _rebuild(target, rows, known, loads, keep_all=keep_all)
    gc.disable()
    try:
        return _rebuild(target, rows, known, loads, keep_all=keep_all)
    finally:
        gc.enable()


def _rebuild(
    target: _K,
    rows: Mapping[_K, Row[_K]],
    known: Mapping[_K, Entry],
    loads: Callable[[bytes], Any],
    *,
    keep_all: bool = False,
) -> dict[_K, Entry]:
    """Rebuild the value stored at ``target`` by replaying its chain.

    Args:
        target: Id of the row to rebuild.
        rows: Stored rows by id (at least the chain from ``target`` back to a
            full row or to an id in ``known``).
        known: Already materialized values by id (the cache).
        loads: The deserializer.
        keep_all: Also return every intermediate value of the chain.

    Returns:
        Entries by id: ``target`` (and the intermediates when ``keep_all``).

    Raises:
        KeyError: A row of the chain is missing, or a delta has no list base.
    """
    chain: list[_K] = []
    cursor: _K | None = target
    while cursor is not None and cursor not in known:
        chain.append(cursor)
        row = rows[cursor]
        cursor = row.prev if row.kind == DELTA else None
    if not chain:
        return {target: known[target]}
    base = known[cursor] if cursor is not None else None
    items: list[Any] | None = None if base is None or base.items is None else base.items[:]
    count = 0 if base is None else base.chain
    trail = _start_trail(base, cursor)
    data: bytes | None = None
    out: dict[_K, Entry] = {}
    for rid in reversed(chain):
        row = rows[rid]
        decoded = loads(row.data)
        if row.kind == FULL:
            items, data = (
                (list(cast("Sequence[Any]", decoded)), None)
                if isinstance(decoded, list)
                else (None, row.data)
            )
            count = len(items) if items is not None else 0
            trail = ((rid, count, TOP),)
        else:
            if items is None:
                raise KeyError(f"delta row {rid} has no list base")
            size = len(items)
            _check_segments(decoded, size, rid)
            count += sum(len(s[1]) for s in decoded if s[0] == ADD)
            level = _append_level(decoded, size)
            if level is not None:
                items.extend(decoded[1][1])
            else:
                items = materialize(items, decoded)
            trail = _next_trail(trail, rid, len(items), level)
        if keep_all or rid == target:
            out[rid] = Entry(None if items is None else items[:], data, count, None, trail)
    return out


TOP = 1 << 30
"""The level of the row a trail starts from (a full value, or a row that did more than append)."""


def _append_level(segments: Sequence[Segment], size: int) -> int | None:
    """The level of a pure append (``[KEEP, 0, size], [ADD, items]`` and maybe ``[LEVEL, n]``), else ``None``."""
    if len(segments) not in (2, 3) or segments[0] != [KEEP, 0, size] or segments[1][0] != ADD:
        return None
    if len(segments) == 2:
        return 0
    return segments[2][1] if segments[2][0] == LEVEL else None


def _start_trail(base: Entry | None, cursor: object) -> tuple[tuple[object, int, int], ...] | None:
    if base is None or base.items is None:
        return None
    if base.trail is not None:
        return base.trail
    return ((cursor, len(base.items), TOP),)


def _next_trail(
    trail: tuple[tuple[Any, int, int], ...] | None, rid: Any, size: int, level: int | None
) -> tuple[tuple[object, int, int], ...]:
    """The trail after row ``rid`` (``level`` ``None``: it did more than append, so it starts a new trail)."""
    if level is None or trail is None:
        return ((rid, size, TOP),)
    keep = len(trail)
    while keep > 1 and trail[keep - 1][2] < level:  # rows below its level were consolidated into it
        keep -= 1
    return (*trail[:keep], (rid, size, level))


# -- checkpoint fields (their packing: _memory_fields.py) ------------------------------

EMPTY_FIELDS: dict[str, Any] = {  # the default of every checkpoint field: stored only when different
    "v": 1,
    "channel_versions": {},
    "updated_channels": [],
    "next": [],
    "sends": [],
    "barriers": {},
    "interrupts": [],
}


class ValueCache(Generic[_V]):
    """A bounded, thread-safe LRU of materialized values.

    Keys are tuples whose first item is the thread id, such as
    ``(thread_id, checkpoint_ns, channel, row_id)``. Stored rows never
    change content (pruning rewrites a delta as the same value in full), so an
    entry never goes stale; entries of deleted threads are dropped explicitly.

    Args:
        maxsize: Number of values kept.
    """

    def __init__(self, maxsize: int = 128) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[tuple[Hashable, ...], _V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[Hashable, ...]) -> _V | None:
        """The entry for ``key`` (marked recently used), or ``None``."""
        with self._lock:
            found = self._data.get(key)
            if found is not None:
                self._data.move_to_end(key)
            return found

    def put(self, key: tuple[Hashable, ...], entry: _V) -> None:
        """Remember ``entry``, evicting the least recently used beyond ``maxsize``."""
        if self.maxsize <= 0:
            return
        data = self._data
        with self._lock:
            size = len(data)
            data[key] = entry
            if len(data) == size:  # it was there: now the most recently used
                data.move_to_end(key)
            while len(data) > self.maxsize:
                data.popitem(last=False)

    def drop_thread(self, thread_id: str) -> None:
        """Forget every value of ``thread_id``."""
        with self._lock:
            for key in [k for k in self._data if k[0] == thread_id]:
                del self._data[key]

    def __len__(self) -> int:
        return len(self._data)
