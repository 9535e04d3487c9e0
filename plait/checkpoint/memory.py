"""``InMemorySaver``: threads kept in this process's memory (tests, demos, short-lived apps).

Checkpoints are kept as bytes, in the layout the SQL savers use (see
``docs/storage.md``), so a thread costs memory for what its steps added:

* each checkpoint is **one bytes record** (MessagePack, via
  :class:`~plait.checkpoint.serde.Serializer`): its parent, timestamp,
  non-default checkpoint fields, metadata, and the value rows of the keys its
  step changed. A key that did not change points at the record holding its
  value (``loc``), and a changed list is stored as a delta against the value
  it replaced (:mod:`plait.checkpoint._delta`);
* a thread is one :class:`~plait.checkpoint._records.ThreadLog`: its records
  and pending writes appended to one ``bytearray``, their offsets in one
  ``array``, and its checkpoint ids as 16 raw bytes each in another
  ``bytearray`` (a handful of objects per thread, whatever its length);
* a bounded LRU of materialized values means a live conversation never
  decodes its history: the list ``add_messages`` returned is handed back as
  is, and if anyone changes it in place the change is noticed and the value
  is decoded again.

Because values are stored as bytes, a value that cannot be serialized raises
:class:`~plait.errors.SerializationError`, and nothing done to a value after
``put`` (say, by a reducer that mutates its input) alters the stored history.
"""

from __future__ import annotations

import builtins
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from contextlib import AbstractContextManager, ExitStack
from datetime import datetime, timezone
from types import EllipsisType, TracebackType
from typing import Any, cast

from plait.checkpoint._config import checkpoint_config, listed_thread, thread_key
from plait.checkpoint._delta import FULL, Entry, ValueCache, encode_value, rebuild
from plait.checkpoint._direct_async import DirectAsync
from plait.checkpoint._listed import tuple_counter
from plait.checkpoint._locks import check_head
from plait.checkpoint._memory_fields import (
    pack_fields,
    pack_meta,
    pack_ts,
    unpack_fields,
    unpack_meta,
    unpack_ts,
)
from plait.checkpoint._memory_read import Known, Memo, Rows, replay
from plait.checkpoint._memory_writes import DECODE, RecentWrites, encode_writes, kept_writes, read_writes
from plait.checkpoint._persistent import PersistentDict
from plait.checkpoint._records import ThreadLog as _Thread
from plait.checkpoint.base import (
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    check_prune,
    check_thread_id,
    get_checkpoint_id,
    now_iso,
    recorded_metadata,
)
from plait.checkpoint.serde import Serializer
from plait.checkpoint.serde.jsonplus import JsonPlusSerializer
from plait.errors import SerializationError

__all__ = ["InMemorySaver", "MemorySaver", "PersistentDict"]

_Key = str | tuple[str, str]  # thread id (str) when the namespace is "", else (thread id, namespace)
_SHARING = (Serializer, JsonPlusSerializer)  # serializers whose round trip gives back what read() shares
_NO_WRITES = RecentWrites(None, -1, [], [])


class InMemorySaver(DirectAsync, BaseCheckpointSaver):
    """Keeps every checkpoint of every thread in this process, compactly; nothing survives the process.

    Args:
        serde: The serializer (default: :class:`~plait.checkpoint.serde.Serializer`).
        cache_size: How many materialized values to keep (least recently used go first).
        factory: Makes the mapping the threads are kept in (default ``dict``), e.g. a
            :class:`PersistentDict` subclass bound to a file; a context-manager mapping is closed
            when the saver's ``with`` block ends (``stack``).
    """

    supports_head_check = True
    writes_by_serde = True

    def __init__(
        self,
        *,
        serde: Serializer | None = None,
        cache_size: int = 128,
        factory: Callable[[], MutableMapping[Any, Any]] | None = None,
    ) -> None:
        self.serde = serde or JsonPlusSerializer(compress=False)
        self._lock = threading.RLock()
        self._threads: MutableMapping[_Key, _Thread] = {} if factory is None else factory()
        self.stack = ExitStack()
        if isinstance(self._threads, AbstractContextManager):
            self.stack.enter_context(cast("AbstractContextManager[Any]", self._threads))
        self._namespaces: dict[str, set[str]] = {}  # thread id -> namespaces other than ""
        self._loose: dict[tuple[_Key, str], bytes] = {}  # writes put before their checkpoint
        self._cache: ValueCache[Entry] = ValueCache(cache_size)
        self._recent: tuple[_Thread | None, int, dict[str, int]] = (None, -1, {})  # the last put's loc
        self._writes = _NO_WRITES  # the pending writes stored last

    def _listed(self, config: Mapping[str, Any]) -> builtins.list[_Key]:
        """The keys ``list(config)`` reads (under the lock)."""
        thread, ns = listed_thread(config)
        if ns is not None:
            return [thread if not ns else (thread, ns)]
        return [thread, *((thread, n) for n in sorted(self._namespaces.get(thread, ())))]

    def _record(self, th: _Thread, seq: int) -> list[Any]:
        """``[parent, ts, fields, metadata, loc, rows]`` of a checkpoint."""
        record: list[Any] = self.serde.loads(th.record(seq))
        return record

    def _loc(self, th: _Thread, seq: int, record: list[Any] | None = None) -> dict[str, int]:
        """Where each key's value of checkpoint ``seq`` is stored (the seq of the record with its row)."""
        if record is None:
            record = self._record(th, seq)
        loc = dict(record[4])
        loc.update(dict.fromkeys(record[5], seq))
        return loc

    def _entry(self, thread: str, th: _Thread, channel: str, seq: int, memo: Memo | None = None) -> Entry:
        """The materialized value of ``channel`` stored at ``seq``: cached, else rebuilt from its chain.

        A chain is replayed back to the nearest value already materialized (in
        the cache, or in ``memo``), not necessarily to its full row. With
        ``memo`` (a listing) the values along the chain are kept in the memo
        for the older checkpoints (see :meth:`_replay`), and the LRU cache,
        whose entries serve the threads' live heads, is left alone.
        """
        key = (thread, th.uid, channel, seq)
        values: dict[int, Entry] = {}
        if memo is not None:
            values = memo.values.setdefault((th.uid, channel), values)
            floor = memo.floor.get(th.uid)
            while values and floor is not None and next(reversed(values)) > floor:  # kept in ascending order
                values.popitem()  # a value stored above the checkpoint being built is needed no more
            found = values.get(seq)
            if found is not None:
                return found
        found = self._cache.get(key)
        if found is not None:
            return found
        known = Known(values, self._cache, key[:3])
        try:
            if memo is None:
                found = rebuild(seq, Rows(self.serde.loads, th, channel), known, self.serde.loads)[seq]
                self._cache.put(key, found)
            else:
                found = replay(th, channel, seq, memo, values, known, self.serde.loads)
        except (KeyError, IndexError) as exc:
            raise SerializationError(
                f"Stored value of key {channel!r} in thread {thread!r} is incomplete: missing row {exc}",
                key=channel,
            ) from None
        return found

    def _tuple(
        self, key: _Key, th: _Thread, seq: int, memo: Memo | None = None, record: list[Any] | None = None
    ) -> CheckpointTuple:
        thread, ns = (key, "") if isinstance(key, str) else key
        if record is None:
            record = self._record(th, seq)
        parent, ts, fields, metadata, loc, rows = record
        loads = self.serde.loads
        values = {ch: self._entry(thread, th, ch, rseq, memo).value(loads) for ch, rseq in loc.items()}
        for ch in rows:
            values[ch] = self._entry(thread, th, ch, seq, memo).value(loads)
        if memo is not None:  # a listing builds each checkpoint once: its record is not needed again
            memo.records.get(th.uid, {}).pop(seq, None)
        cid = th.cid(seq)
        # the record holds what put() stored, so it has the shape of a Checkpoint
        checkpoint = cast(
            Checkpoint, {**unpack_fields(fields), "id": cid, "ts": unpack_ts(ts), "channel_values": values}
        )
        if type(parent) is int:
            parent = th.cid(parent)
        parent_config = None if parent is None else checkpoint_config(thread, ns, parent)
        writes = read_writes(self._writes, th, seq, self.serde.loads)
        meta = cast(CheckpointMetadata, unpack_meta(metadata))  # as put() received it
        return CheckpointTuple(checkpoint_config(thread, ns, cid), checkpoint, meta, parent_config, writes)

    def __enter__(self) -> InMemorySaver:
        self.stack.__enter__()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stack.__exit__(exc_type, exc, tb)

    def get_tuple(self, config: dict[str, Any]) -> CheckpointTuple | None:
        """The addressed checkpoint, or the thread's newest."""
        thread, ns, cid = thread_key(config)
        key: _Key = thread if not ns else (thread, ns)
        with self._lock:
            th = self._threads.get(key)
            if th is None or th.last < 0:
                return None
            seq = th.last if cid is None else th.find(cid)
            return None if seq is None else self._tuple(key, th, seq)

    def list(
        self,
        config: dict[str, Any] | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002
        before: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first, built one at a time as the caller iterates; a config
        without a ``checkpoint_ns`` lists every namespace of its thread.

        The listing shares decoded records and materialized values across its
        checkpoints, so a thread's history costs one replay of each value's chain.
        """
        with self._lock:
            keys = list(self._threads) if config is None else self._listed(config)
            logs = [(key, th, th.newest_first()) for key in keys if (th := self._threads.get(key))]
        items: Iterable[tuple[str | None, _Key, _Thread, int]]
        if len(logs) == 1:  # already newest first: ids are read only when ``before`` needs them
            items = ((None, key, th, seq) for key, th, seqs in logs for seq in seqs)
        else:
            by_id: builtins.list[tuple[str, _Key, _Thread, int]] = sorted(
                ((th.cid(seq), key, th, seq) for key, th, seqs in logs for seq in seqs),
                key=lambda item: item[0],
                reverse=True,
            )
            items = by_id
        bound = get_checkpoint_id(before)
        memo = Memo()
        count = 0
        for cid, key, th, seq in items:
            if bound is not None and (th.cid(seq) if cid is None else cid) >= bound:
                continue
            with self._lock:
                memo.floor[th.uid] = seq
                record = memo.records.get(th.uid, {}).pop(seq, None) or self._record(th, seq)
                if filter and any(unpack_meta(record[3]).get(k) != v for k, v in filter.items()):
                    continue
                item = self._tuple(key, th, seq, memo, record)
            yield item
            count += 1
            if limit is not None and count >= limit:
                return

    # -- writing ------------------------------------------------------------------

    def put(
        self,
        config: dict[str, Any],
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: Mapping[str, int],
        *,
        expected_head: str | None | EllipsisType = ...,
    ) -> dict[str, Any]:
        """Store a checkpoint; keys not in ``new_versions`` point at their parent's value.

        Raises:
            CheckpointConflictError: ``expected_head`` is given and is not the thread's newest checkpoint.
            SerializationError: A value cannot be stored (the error names the state key).
        """
        metadata = recorded_metadata(config, metadata)
        thread, ns, parent = thread_key(config)
        key: _Key = thread if not ns else (thread, ns)
        cid = checkpoint["id"]  # pyright: ignore[reportTypedDictNotRequiredAccess]  # the runtime always sets "id"; a KeyError is the right failure otherwise
        with self._lock:
            th = self._threads.get(key)
            head = None if th is None else th.head
            if expected_head is not ...:
                check_head(thread, cid, expected_head, head)
            if th is None:
                th, pseq = _Thread(), None
            else:
                pseq = None if parent is None else th.last if parent == head else th.find(parent)
            recent = self._recent
            ploc = {} if pseq is None else recent[2] if recent[:2] == (th, pseq) else self._loc(th, pseq)
            values = checkpoint.get("channel_values")
            if values:
                inherit: set[str] = {ch for ch in ploc if ch not in new_versions} if ploc else set()
                loc, rows, entries = self._encode(thread, th, values, ploc, inherit)
            else:
                loc, rows, entries = {}, {}, []
            try:
                ts = pack_ts(checkpoint.get("ts") or now_iso())
                record = self.serde.dumps(
                    [
                        parent if pseq is None else pseq,
                        ts,
                        pack_fields(checkpoint),
                        pack_meta(metadata),
                        loc,
                        rows,
                    ]
                )
            except SerializationError as exc:
                raise SerializationError(f"Cannot store checkpoint {cid}: {exc}") from exc
            seq = self._store(key, th, cid, record, entries, head is None or cid > head)
            if rows:
                loc = {**loc, **dict.fromkeys(rows, seq)}
            self._recent = (th, seq, loc)
        return {"configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": cid}}

    def _encode(
        self, thread: str, th: _Thread, values: Mapping[str, Any], ploc: Mapping[str, int], inherit: set[str]
    ) -> tuple[dict[str, int], dict[str, object], builtins.list[tuple[str, Entry]]]:
        """Value rows for the keys that changed; ``loc`` entries for those in ``inherit``."""
        loc: dict[str, int] = {}
        rows: dict[str, Any] = {}
        entries: builtins.list[tuple[str, Entry]] = []
        dumps = self.serde.dumps
        listed: Callable[[], int] | None = None
        for channel, value in values.items():
            base_seq = ploc.get(channel)
            if base_seq is not None and channel in inherit:
                loc[channel] = base_seq
                continue
            if not isinstance(value, list):  # stored whole: no delta, no tuple to watch for
                try:
                    data = dumps(value)
                except SerializationError as exc:
                    raise SerializationError(
                        f"Cannot store state key {channel!r}: {exc}", key=channel
                    ) from exc
                rows[channel] = data
                entries.append((channel, Entry(None, data, 0)))
                continue
            base = None
            if base_seq is not None:
                try:
                    base = self._entry(thread, th, channel, base_seq)
                except SerializationError:
                    base = None
            if listed is None:
                listed = tuple_counter(dumps)
            try:
                mark = listed()
                blob, entry = encode_value(value, base, base_seq, dumps, share=True)
                if entry.items is not None and listed() != mark:  # a tuple in it reads back as a list
                    entry = Entry(None, dumps(entry.items), 0)
            except SerializationError as exc:
                raise SerializationError(f"Cannot store state key {channel!r}: {exc}", key=channel) from exc
            rows[channel] = blob.data if blob.kind == FULL else [blob.prev, blob.data]
            entries.append((channel, entry))
        return loc, rows, entries

    def _store(  # noqa: PLR0913
        self, key: _Key, th: _Thread, cid: str, record: bytes, entries: Sequence[tuple[str, Entry]], new: bool
    ) -> int:
        """Add (or replace) the record of ``cid``; ``new``: ``cid`` sorts after the head, so it is not stored yet."""
        loose = self._loose.pop((key, cid), None) if self._loose else None
        seq = None if new or th.last < 0 else th.find(cid)
        if seq is None:
            seq = th.add(cid, record, loose)
        else:  # the same id again: replace the record, keep its pending writes
            th.set_record(seq, record)
            self._cache.drop_thread(key if type(key) is str else key[0])
        if self._threads.get(key) is not th:
            self._threads[key] = th
            if type(key) is tuple:
                self._namespaces.setdefault(key[0], set()).add(key[1])
        if entries:
            thread = key if type(key) is str else key[0]
            uid, put = th.uid, self._cache.put
            for channel, entry in entries:
                put((thread, uid, channel, seq), entry)
        return seq

    def put_writes(
        self, config: dict[str, Any], writes: Sequence[tuple[str, object]], task_id: str, task_path: str = ""
    ) -> None:
        """Record writes of a task whose step has not completed (replacing its earlier ones).

        ``__interrupt__`` and ``__resume__`` writes are kept when the task writes other keys, and
        replaced when it writes them again (the last one, when one call writes one twice).

        Raises:
            SerializationError: A value cannot be stored (the error names the key).
        """
        thread, ns, cid = thread_key(config)
        key: _Key = thread if not ns else (thread, ns)
        cid = str(cid)
        dumps = self.serde.dumps
        new, shares = encode_writes(dumps, writes, task_id, type(self.serde) in _SHARING)
        with self._lock:
            th = self._threads.get(key)
            seq = None if th is None else th.find(cid)
            recent = self._writes
            if th is not None and recent.th is th and recent.seq == seq:
                new, shares = kept_writes(recent.rows, recent.shares, task_id, new, shares)
            else:
                old = self._loose.get((key, cid)) if th is None or seq is None else th.writes(seq)
                if old:
                    rows: list[list[Any]] = self.serde.loads(old)
                    new, shares = kept_writes(rows, [DECODE] * len(rows), task_id, new, shares)
            data = dumps(new)
            if th is None or seq is None:
                self._loose[(key, cid)] = data
            else:
                th.set_writes(seq, data)
                self._writes = RecentWrites(th, seq, new, shares)

    def delete_thread(self, thread_id: str) -> None:
        """Forget every checkpoint and pending write of the thread, in every namespace."""
        thread_id = check_thread_id(thread_id)
        with self._lock:
            self._threads.pop(thread_id, None)
            for ns in self._namespaces.pop(thread_id, ()):
                self._threads.pop((thread_id, ns), None)
            for loose in [k for k in self._loose if (k[0] if type(k[0]) is str else k[0][0]) == thread_id]:
                del self._loose[loose]
            self._recent = (None, -1, {})
            self._writes = _NO_WRITES
        self._cache.drop_thread(thread_id)

    # -- pruning ------------------------------------------------------------------

    def prune(self, thread_id: str, *, keep_last: int | None = None, older_than: float | None = None) -> int:
        """Delete old checkpoints of a thread; return how many were deleted.

        A checkpoint is deleted when it is beyond the ``keep_last`` newest of its
        namespace or older than ``older_than`` seconds; the newest one is always
        kept. The kept checkpoints are stored again, so values whose delta chain
        ran through deleted checkpoints are rewritten and the memory is freed.
        """
        check_prune(keep_last, older_than)
        thread_id = check_thread_id(thread_id)
        cutoff = (
            None
            if older_than is None
            else datetime.fromtimestamp(time.time() - older_than, timezone.utc).isoformat()
        )
        deleted = 0
        with self._lock:
            keys: list[_Key] = [thread_id, *((thread_id, ns) for ns in self._namespaces.get(thread_id, ()))]
            for key in keys:
                th = self._threads.get(key)
                if th is None:
                    continue
                order = th.newest_first()
                doomed = {
                    seq
                    for i, seq in enumerate(order)
                    if i > 0
                    and (
                        (keep_last is not None and i >= keep_last)
                        or (cutoff is not None and unpack_ts(self._record(th, seq)[1]) < cutoff)
                    )
                }
                if doomed:
                    self._threads[key] = self._copy(thread_id, th, doomed)
                    self._recent, self._writes = (None, -1, {}), _NO_WRITES
                    deleted += len(doomed)
        if deleted:
            self._cache.drop_thread(thread_id)
        return deleted

    def _copy(self, thread: str, th: _Thread, doomed: set[int]) -> _Thread:
        """A new thread holding the checkpoints of ``th`` that are not doomed."""
        new = _Thread()
        seqs: dict[int, int] = {}  # old seq -> new seq
        for seq in range(len(th)):
            if seq in doomed:
                continue
            record = self._record(th, seq)
            parent = record[0]
            old_loc = self._loc(th, seq, record)
            kept_parent = seqs.get(parent) if type(parent) is int else None
            ploc = {} if kept_parent is None else self._loc(new, kept_parent)
            parent_loc = {} if kept_parent is None else self._loc(th, parent)
            values = {
                ch: self._entry(thread, th, ch, rseq).value(self.serde.loads) for ch, rseq in old_loc.items()
            }
            inherit = {ch for ch, rseq in old_loc.items() if parent_loc.get(ch) == rseq}
            loc, rows, entries = self._encode(thread, new, values, ploc, inherit)
            ref = (
                kept_parent
                if kept_parent is not None
                else (th.cid(parent) if type(parent) is int else parent)
            )
            data = self.serde.dumps([ref, record[1], record[2], record[3], loc, rows])
            seqs[seq] = new.add(th.cid(seq), data, th.writes(seq))
            for channel, entry in entries:
                self._cache.put((thread, new.uid, channel, seqs[seq]), entry)
        return new


MemorySaver = InMemorySaver  # LangGraph's name
