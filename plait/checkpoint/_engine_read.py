"""Reading checkpoints of the SQL savers: one checkpoint, a thread's history, the list of threads.

Written as operation generators (:mod:`plait.checkpoint._engine_ops`), so the
sync and async savers share every line of it.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from typing import Any, cast

from plait.checkpoint._config import checkpoint_config, listed_thread
from plait.checkpoint._delta import EMPTY_FIELDS, TOP, Blob, Entry, ValueCache, rebuild
from plait.checkpoint._engine_ops import Fetch, Item, Ops
from plait.checkpoint._lease import ThreadLeases
from plait.checkpoint._prune import locations
from plait.checkpoint.base import (
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    ThreadInfo,
    get_checkpoint_id,
    thread_key,
)
from plait.checkpoint.serde import Serializer
from plait.errors import SerializationError

__all__ = ["Incomplete", "Memo", "SqlReader", "Thread", "config_of", "thread_of"]

_PAGE = 64
Thread = tuple[str, str]
Memo = dict[tuple[str, str, str], dict[str, Entry]]
"""Values materialized while reading: ``(thread_id, checkpoint_ns, channel)`` -> row id -> value."""


def _keep_bases(memo: Memo, older_than: str) -> None:
    """Forget the values a listing rebuilt that the pages after ``older_than`` (a checkpoint id) will
    not build on: keep consolidated rows, the rows their trails start from, and rows older than it.

    Kept all, a thread's values (each a copy of a list one turn longer than the one before) would
    take memory quadratic in its length. An older checkpoint's value is rebuilt from rows before it
    (a trimmed list: back to a full value), or from a consolidated row (a keyframe, which the rows
    it replaced point to); a value forgotten and needed again is rebuilt from its rows, which the
    chain query returns.
    """
    for known in memo.values():
        keep: set[str] = set()
        for rid, entry in known.items():
            trail = entry.trail
            if rid < older_than:
                keep.add(rid)
            elif trail is not None and 1 <= trail[-1][2] < TOP:
                keep.add(rid)
                keep.add(trail[0][0])
        for rid in [rid for rid in known if rid not in keep]:
            del known[rid]


def thread_of(config: Mapping[str, object]) -> tuple[Thread, str | None]:
    """``((thread_id, checkpoint_ns), checkpoint_id)`` of a config."""
    thread_id, ns, cid = thread_key(config)
    return (thread_id, ns), cid


def config_of(thread: Thread, cid: str) -> dict[str, Any]:
    """The config addressing checkpoint ``cid`` of ``thread``."""
    return checkpoint_config(thread[0], thread[1], cid)


class Incomplete(SerializationError):
    """A value's row chain is missing a row (pruned while it was read, or damaged)."""


class SqlReader:
    """The reading half of the SQL saver engine (mixed into ``SqlSaverBase``)."""

    sql: Any
    serde: Serializer
    _cache: ValueCache[Entry]
    _locs: ValueCache[dict[str, str]]
    _leases: ThreadLeases

    def _ready(self, *, write: bool) -> Ops[bool]:
        """Set the tables up if needed; for a read, ``False`` when there are none (nothing is created)."""
        raise NotImplementedError
        yield  # pragma: no cover - makes this a generator

    def decode(self, data: bytes, what: str, *, record: bool = True) -> Any:
        """A stored record, or ``SerializationError`` naming ``what``."""
        try:
            value = self.serde.loads(bytes(data))
        except (SerializationError, TypeError) as exc:
            raise SerializationError(f"Cannot read {what}: {exc}") from exc
        if record and not isinstance(value, dict):
            raise SerializationError(
                f"Cannot read {what}: expected a record, found {type(value).__name__} (the row is corrupt)"
            )
        return cast(Any, value)  # undo the isinstance narrowing to dict[Unknown, Unknown]

    def _entries(
        self, thread: Thread, wanted: Mapping[str, str], memo: Memo, keep_all: bool = False
    ) -> Ops[dict[str, Entry]]:
        """Materialized values for ``{channel: row id}``, via memo/cache, else one chain query."""
        out: dict[str, Entry] = {}
        missing: builtins.list[tuple[str, str]] = []
        for channel, rid in wanted.items():
            found = memo.get((*thread, channel), {}).get(rid) or self._cache.get((*thread, channel, rid))
            if found is None:
                missing.append((channel, rid))
            else:
                out[channel] = found
        if not missing:
            return out
        rows: dict[str, dict[str, Blob]] = {}
        for channel, rid, prev, kind, value in (yield Fetch(*self.sql.chain_query(thread, missing))):
            rows.setdefault(channel, {})[rid] = Blob(kind, prev, bytes(value))
        for channel, rid in missing:
            known = memo.setdefault((*thread, channel), {})
            try:
                built = rebuild(rid, rows.get(channel, {}), known, self.serde.loads, keep_all=keep_all)
            except KeyError as exc:
                raise Incomplete(
                    f"Stored value of key {channel!r} in thread {thread[0]!r} is "
                    f"incomplete: missing row {exc}",
                    key=channel,
                ) from None
            except SerializationError as exc:
                raise SerializationError(
                    f"Cannot read key {channel!r} of thread {thread[0]!r} (row {rid}): {exc}", key=channel
                ) from exc
            known.update(built)
            out[channel] = built[rid]
            self._cache.put((*thread, channel, rid), built[rid])
        return out

    def _tuple(
        self,
        thread: Thread,
        head: Sequence[Any],
        writes: builtins.list[Any],
        memo: Memo,
        keep_all: bool = False,
        record: dict[str, Any] | None = None,
    ) -> Ops[CheckpointTuple]:
        """The tuple of one checkpoint row; ``record``: its blob, already decoded (a page's prefetch)."""
        cid, parent, step, source, created, blob, meta = head
        if record is None:
            record = cast("dict[str, Any]", self.decode(blob, f"checkpoint {cid} of thread {thread[0]!r}"))
        stored = {**EMPTY_FIELDS, **record, "ts": created}
        loc = locations(stored.pop("loc", {}), cid)
        self._locs.put((*thread, cid), loc)
        entries = yield from self._entries(thread, loc, memo, keep_all=keep_all)
        values = {ch: e.value(self.serde.loads) for ch, e in entries.items()}
        # the rows hold what put() stored, so they have the shapes of a Checkpoint and its metadata
        checkpoint = cast(Checkpoint, {**stored, "id": cid, "channel_values": values})
        metadata = cast(
            CheckpointMetadata,
            {"parents": {}, **self.decode(meta, f"metadata of checkpoint {cid} of thread {thread[0]!r}")},
        )
        if source is not None:
            metadata["source"] = source
        if step is not None:
            metadata["step"] = step
        pending = [
            (
                t,
                ch,
                self.decode(
                    v,
                    f"pending write {ch!r} of task {t} (checkpoint {cid} of thread {thread[0]!r})",
                    record=False,
                ),
            )
            for t, ch, v in writes
        ]
        parent_config = config_of(thread, parent) if parent else None
        return CheckpointTuple(config_of(thread, cid), checkpoint, metadata, parent_config, pending)

    def _get_tuple(self, config: dict[str, Any]) -> Ops[CheckpointTuple | None]:
        """The addressed checkpoint, or the thread's newest (one query plus at most one for values)."""
        thread, cid = thread_of(config)
        if not (yield from self._ready(write=False)):
            return None
        for attempt in (1, 2):
            ahead = self._leases.read_ahead(thread) if attempt == 1 and cid is None else None
            rows = (
                ahead if ahead is not None else (yield Fetch(self.sql.SELECT_HEAD, [*thread, cid, *thread]))
            )
            if not rows:
                return None
            writes = [r[7:] for r in rows if r[7] is not None]
            try:
                return (yield from self._tuple(thread, rows[0][:7], writes, {}))
            except Incomplete:
                if attempt == 2:  # not a checkpoint pruned while it was read: the rows are damaged
                    raise
        return None

    def _threads(self) -> Ops[builtins.list[ThreadInfo]]:
        """Every thread of the root namespace, newest first, in one query."""
        if not (yield from self._ready(write=False)):
            return []
        return [
            ThreadInfo(str(thread_id), int(count), str(head), int(step), str(created))
            for thread_id, count, head, step, created in (yield Fetch(self.sql.THREADS, []))
        ]

    def _list(
        self,
        config: dict[str, Any] | None,
        filter: dict[str, Any] | None,  # noqa: A002
        before: dict[str, Any] | None,
        limit: int | None,
    ) -> Ops[None]:
        """Checkpoints newest first, read a page at a time; each one is yielded as an :class:`Item`."""
        if not (yield from self._ready(write=False)):
            return
        thread = listed_thread(config) if config is not None else None
        if thread is not None and thread[1] is None:
            thread = yield from self._narrow(thread[0])
            if thread is None:
                return
        where: dict[str, Any] = {k: v for k, v in (filter or {}).items() if k in ("step", "source")}
        where["before"] = get_checkpoint_id(before)
        memo: Memo = {}
        after, count = None, 0
        while limit is None or count < limit:
            page = yield Fetch(*self.sql.list_query(thread, after, where, _PAGE))
            if not page:
                return
            previous, after = after, (page[-1][2], page[-1][0], page[-1][1])
            writes = yield from self._page_writes(page)
            records = yield from self._prefetch(page, memo, None if previous is None else previous[0])
            for row in page:
                try:
                    pending = writes.get((row[0], row[1], row[2]), [])
                    record = records.get((row[0], row[1], row[2]))
                    item = yield from self._tuple((row[0], row[1]), row[2:], pending, memo, True, record)
                except Incomplete:
                    if (yield Fetch(self.sql.SELECT_HEAD, [row[0], row[1], row[2], row[0], row[1]])):
                        raise
                    continue  # pruned while the page was read
                if filter and any(item.metadata.get(k) != v for k, v in filter.items()):
                    continue
                yield Item(item)
                count += 1
                if limit is not None and count >= limit:
                    return
            if len(page) < _PAGE:
                return

    def _narrow(self, thread_id: str) -> Ops[tuple[str, str | None] | None]:
        """What listing every namespace of a thread reads: its only namespace when it has one (a page is
        then a range of the primary key; ordering across namespaces sorts all the thread's rows per
        page), ``None`` when it has no checkpoint."""
        spaces = yield Fetch(self.sql.NAMESPACES, [thread_id])
        if not spaces:
            return None
        return (thread_id, str(spaces[0][0]) if len(spaces) == 1 else None)

    def _prefetch(
        self, page: Sequence[Sequence[Any]], memo: Memo, after: str | None
    ) -> Ops[dict[tuple[str, str, str], dict[str, Any]]]:
        """The values of a whole page in one chain query per namespace, instead of one per checkpoint;
        answers the page's checkpoint records, decoded, by ``(thread_id, checkpoint_ns, checkpoint_id)``.

        ``after``: the oldest checkpoint of the page before (what that page rebuilt and this one does
        not build on is forgotten first). Best effort: a row that cannot be read here is read again,
        and reported, by ``_tuple``.
        """
        if after is not None:
            _keep_bases(memo, after)
        wanted: dict[Thread, dict[tuple[str, str], None]] = {}
        records: dict[tuple[str, str, str], dict[str, Any]] = {}
        for row in page:
            thread: Thread = (row[0], row[1])
            try:
                stored = self.decode(row[7], f"checkpoint {row[2]} of thread {row[0]!r}")
            except SerializationError:
                continue
            records[(row[0], row[1], row[2])] = stored
            for channel, rid in locations(stored.get("loc", {}), row[2]).items():
                if (
                    rid not in memo.get((*thread, channel), {})
                    and self._cache.get((*thread, channel, rid)) is None
                ):
                    wanted.setdefault(thread, {})[(channel, rid)] = None
        for thread, targets in wanted.items():
            rows: dict[str, dict[str, Blob]] = {}
            for channel, rid, prev, kind, value in (
                yield Fetch(*self.sql.chain_query(thread, list(targets)))
            ):
                rows.setdefault(channel, {})[rid] = Blob(kind, prev, bytes(value))
            for channel, rid in sorted(targets, key=lambda target: target[1]):  # older rows first
                known = memo.setdefault((*thread, channel), {})
                if rid not in known:
                    try:
                        known.update(
                            rebuild(rid, rows.get(channel, {}), known, self.serde.loads, keep_all=True)
                        )
                    except (KeyError, SerializationError):
                        continue
        return records

    def _page_writes(
        self, page: Sequence[Sequence[Any]]
    ) -> Ops[dict[tuple[str, str, str], builtins.list[Any]]]:
        writes: dict[tuple[str, str, str], builtins.list[Any]] = {}
        for key in {(r[0], r[1]) for r in page}:
            ids = [r[2] for r in page if (r[0], r[1]) == key]
            for cid, task, ch, value in (yield Fetch(*self.sql.writes_query(key, ids))):
                writes.setdefault((*key, cid), []).append((task, ch, value))
        return writes
