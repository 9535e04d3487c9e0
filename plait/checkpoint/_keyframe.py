"""Keyframes for the SQL savers: consolidated rows that keep every value a few rows from its base.

A list that only grows (a conversation) is stored as one delta row per step.
Replayed from its full row, the newest value of a long thread would cost one
row per step. So rows are *consolidated*, level by level, with ``K = 16``:

* a row of level 0 is a delta against its parent (the usual case);
* the ``K``-th row in a row of level ``L`` is written instead at level
  ``L + 1``: a delta against the last row of level ``L + 1`` or higher (its
  *anchor*), holding every item added since, closed by ``[LEVEL, L + 1]``;
* the rows it replaces (every row above its anchor) are rewritten, in the
  same transaction, as ``[[KEEP, 0, length]]`` against it: the same values,
  a few bytes each.

So a value is rebuilt from at most ``K - 1`` rows per level plus its base,
``log_K(steps)`` levels: 46 rows for 4096 steps, 61 for 65 536, and each
item is stored once (plus once per level while it is being consolidated).
A row that does more than append (trimming, replacing) starts a new trail;
the existing rule that writes a full value once the chain holds many dropped
items keeps such values bounded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from plait.checkpoint._delta import ADD, DELTA, FULL, KEEP, LEVEL, SNAPSHOT_SLACK, TOP, Entry, diff, kept
from plait.checkpoint._engine_sql import BlobRow
from plait.checkpoint._listed import as_read, tuples_listed
from plait.errors import SerializationError

__all__ = ["FANOUT", "encode_values"]

FANOUT = 16
"""Rows of one level before the next one is consolidated into a row of the level above."""

Cached = tuple[str, str, Entry]
"""``(channel, row id, entry)`` to put in the value cache after the write."""


def encode_values(  # noqa: PLR0913 - the parts of one put
    cid: str,
    values: Mapping[str, Any],
    parent_loc: Mapping[str, str],
    new_versions: Mapping[str, int],
    bases: Mapping[str, Entry | None],
    dumps: Callable[[object], bytes],
) -> tuple[dict[str, str], list[BlobRow], list[BlobRow], list[Cached]]:
    """Where each value is stored, the rows to insert and to rewrite, and the cache entries.

    Raises:
        SerializationError: a value cannot be stored (naming its key).
    """
    loc: dict[str, str] = {}
    blobs: list[BlobRow] = []
    rewrites: list[BlobRow] = []
    cached: list[Cached] = []
    for channel, value in values.items():
        if channel not in new_versions and channel in parent_loc:
            loc[channel] = parent_loc[channel]
            continue
        try:
            mark = tuples_listed(dumps)
            entry = _encode(
                channel, cid, value, bases.get(channel), parent_loc.get(channel), dumps, blobs, rewrites
            )
            entry = as_read(entry, dumps, mark)
        except SerializationError as exc:
            raise SerializationError(f"Cannot store state key {channel!r}: {exc}", key=channel) from exc
        cached.append((channel, cid, entry))
        loc[channel] = cid
    return loc, blobs, rewrites, cached


def _encode(  # noqa: PLR0913 - one value of a put
    channel: str,
    cid: str,
    value: Any,
    base: Entry | None,
    base_id: str | None,
    dumps: Callable[[object], bytes],
    blobs: list[BlobRow],
    rewrites: list[BlobRow],
) -> Entry:
    if not isinstance(value, list):
        data = dumps(value)
        blobs.append((channel, cid, None, FULL, data))
        return Entry(None, data, 0)
    listed: list[object] = value  # pyright: ignore[reportUnknownVariableType]  # a state value: items of any type
    items = listed[:]
    size = len(items)
    if base is None or base.items is None or base_id is None:
        return _full(channel, cid, items, listed, dumps, blobs)
    old = base.items
    if old and size >= len(old) and items[: len(old)] == old:  # an append: one C-speed comparison
        return _append(channel, cid, items, listed, base, base_id, dumps, blobs, rewrites)
    segments = diff(old, items)
    reused = kept(segments)
    chain = base.chain + size - reused
    if not reused or chain > 2 * size + SNAPSHOT_SLACK:
        return _full(channel, cid, items, listed, dumps, blobs)
    blobs.append((channel, cid, base_id, DELTA, dumps(segments)))
    return Entry(items, None, chain, listed, ((cid, size, TOP),))


def _full(
    channel: str,
    cid: str,
    items: list[Any],
    listed: list[object],
    dumps: Callable[[object], bytes],
    blobs: list[BlobRow],
) -> Entry:
    blobs.append((channel, cid, None, FULL, dumps(items)))
    return Entry(items, None, len(items), listed, ((cid, len(items), TOP),))


def _append(  # noqa: PLR0913 - one value of a put
    channel: str,
    cid: str,
    items: list[Any],
    listed: list[Any],
    base: Entry,
    base_id: str,
    dumps: Callable[[object], bytes],
    blobs: list[BlobRow],
    rewrites: list[BlobRow],
) -> Entry:
    """Store an append: at level 0 against the parent, or consolidated at a higher level."""
    old_size, size = len(base.items or ()), len(items)
    trail = base.trail if base.trail and base.trail[-1][0] == base_id else ((base_id, old_size, TOP),)
    level = 0
    while sum(1 for row in trail if row[2] == level) >= FANOUT - 1:
        level += 1
    chain = base.chain + size - old_size
    if level == 0:
        blobs.append((channel, cid, base_id, DELTA, dumps([[KEEP, 0, old_size], [ADD, items[old_size:]]])))
        return Entry(items, None, chain, listed, (*trail, (cid, size, 0)))
    anchor = len(trail) - 1
    while anchor > 0 and trail[anchor][2] < level:
        anchor -= 1
    anchor_id, anchor_size, _ = trail[anchor]
    segments = [[KEEP, 0, anchor_size], [ADD, items[anchor_size:]], [LEVEL, level]]
    blobs.append((channel, cid, anchor_id, DELTA, dumps(segments)))
    for rid, length, _ in trail[anchor + 1 :]:
        rewrites.append((channel, rid, cid, DELTA, dumps([[KEEP, 0, length]])))
    return Entry(items, None, chain, listed, (*trail[: anchor + 1], (cid, size, level)))
