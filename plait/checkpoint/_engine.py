"""The SQL saver engine shared by :class:`SqliteSaver` and ``PostgresSaver``.

Storage layout (see ``docs/storage.md``): one ``checkpoints`` row per
checkpoint holding everything but the state values, plus a ``loc`` map from
each state key to the ``checkpoint_blobs`` row that holds its value; a value
row is written only when the key changed, and a list value is written as a
delta against the previous value whenever that is smaller.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from datetime import datetime, timezone
from typing import Any, cast

from typing_extensions import LiteralString

from plait.checkpoint._config import checkpoint_config
from plait.checkpoint._delta import EMPTY_FIELDS, Blob, Entry, ValueCache, encode_value, rebuild
from plait.checkpoint._lease import DEFAULT_TTL, ThreadLeases
from plait.checkpoint._prune import locations, lock_name, prune_thread
from plait.checkpoint.base import (
    INTERRUPT,
    RESUME,
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    ThreadInfo,
    check_head,
    check_prune,
    check_thread_id,
    get_checkpoint_id,
    thread_key,
)
from plait.checkpoint.serde import Serializer
from plait.errors import SerializationError

__all__ = ["SqlSaverBase"]

_SPECIAL_IDX = {INTERRUPT: -1, RESUME: -2}
_PAGE = 64
_Thread = tuple[str, str]
_Memo = dict[tuple[str, str, str, str], Entry]
"""Values materialized while reading, by ``(thread_id, checkpoint_ns, channel, row id)``."""


def _thread(config: Mapping[str, Any]) -> tuple[_Thread, str | None]:
    thread_id, ns, cid = thread_key(config)
    return (thread_id, ns), cid


def _config(thread: _Thread, cid: str) -> dict[str, Any]:
    return checkpoint_config(thread[0], thread[1], cid)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


_MISSING = object()


class _Incomplete(SerializationError):
    """A value's row chain is missing a row (pruned while it was read, or damaged)."""


class _ParentGone(Exception):  # noqa: N818 - internal signal, never escapes put()
    """The parent checkpoint a put was encoded against was pruned meanwhile."""


class SqlSaverBase(BaseCheckpointSaver):
    """Backend-independent part of the SQL savers.

    Subclasses provide :meth:`_fetch` (run a query, return rows), :meth:`_tx`
    (a transaction yielding an object with ``execute``/``executemany``),
    :meth:`_setup_once`, :meth:`_lease_scope` and the ``sql`` module with the SQL text.

    Args:
        serde: The serializer (default: :class:`~plait.checkpoint.serde.Serializer`).
        cache_size: How many materialized values to keep in memory.
        lease_ttl: Seconds after which the thread lease of a vanished process can be taken over.
    """

    sql: Any = None
    """The dialect module with the SQL text (set by each backend)."""

    def __init__(
        self, *, serde: Serializer | None = None, cache_size: int = 128, lease_ttl: float = DEFAULT_TTL
    ) -> None:
        self.serde = serde or Serializer()
        self._cache: ValueCache[Entry] = ValueCache(cache_size)
        self._locs: ValueCache[dict[str, str]] = ValueCache(cache_size)
        self._leases = ThreadLeases(self._lease_tx, self.sql.LEASE, lease_ttl, self._lease_scope)

    # -- backend hooks ------------------------------------------------------------

    def _fetch(self, sql: LiteralString, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """Rows of the query ``sql``: plait's own SQL text (psycopg wants a LiteralString), values in ``params``."""
        raise NotImplementedError

    def _tx(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _setup_once(self) -> None:
        raise NotImplementedError

    def _lease_scope(self) -> tuple[str, bool]:
        """``(name of the database, reachable by other processes?)``."""
        raise NotImplementedError

    # -- thread leases (see plait/checkpoint/_lease.py) ---------------------------------

    def _lease_tx(self) -> AbstractContextManager[Any]:
        self._setup_once()
        return self._tx()

    def lease(
        self, thread_id: str, checkpoint_ns: str = "", *, wait: bool = True, timeout: float | None = None
    ) -> AbstractContextManager[None]:
        """Hold ``thread_id`` for one run, across threads **and processes** sharing the database.

        Raises:
            ThreadBusyError: the thread is held and ``wait`` is false or ``timeout`` passed.
        """
        return self._leases.hold(thread_id, checkpoint_ns, wait, timeout)

    async def alease(
        self, thread_id: str, checkpoint_ns: str = "", *, wait: bool = True, timeout: float | None = None
    ) -> AbstractAsyncContextManager[None]:
        """Async :meth:`lease` (waits without blocking the event loop)."""
        return self._leases.ahold(thread_id, checkpoint_ns, wait, timeout)

    def lease_id(self, thread_id: str, checkpoint_ns: str = "") -> tuple[object, str, str]:
        """Savers on the same database share leases, so their ids name the database."""
        return self._leases.scope()[0], check_thread_id(thread_id), checkpoint_ns or ""

    # -- reading ------------------------------------------------------------------

    def decode(self, data: bytes, what: str, *, record: bool = True) -> Any:
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
        self, thread: _Thread, wanted: Mapping[str, str], memo: _Memo, keep_all: bool = False
    ) -> dict[str, Entry]:
        """Materialized values for ``{channel: row id}``, via memo/cache, else one chain query."""
        out: dict[str, Entry] = {}
        missing: list[tuple[str, str]] = []
        for channel, rid in wanted.items():
            key = (*thread, channel, rid)
            found = memo.get(key) or self._cache.get(key)
            if found is None:
                missing.append((channel, rid))
            else:
                out[channel] = found
        if not missing:
            return out
        rows: dict[str, dict[str, Blob]] = {}
        for channel, rid, prev, kind, value in self._fetch(*self.sql.chain_query(thread, missing)):
            rows.setdefault(channel, {})[rid] = Blob(kind, prev, bytes(value))
        for channel, rid in missing:
            known = {k[3]: v for k, v in memo.items() if k[2] == channel and k[:2] == thread}
            try:
                built = rebuild(rid, rows.get(channel, {}), known, self.serde.loads, keep_all=keep_all)
            except KeyError as exc:
                raise _Incomplete(
                    f"Stored value of key {channel!r} in thread {thread[0]!r} is "
                    f"incomplete: missing row {exc}",
                    key=channel,
                ) from None
            except SerializationError as exc:
                raise SerializationError(
                    f"Cannot read key {channel!r} of thread {thread[0]!r} (row {rid}): {exc}", key=channel
                ) from exc
            for bid, entry in built.items():
                memo[thread + (channel, bid)] = entry
            out[channel] = built[rid]
            self._cache.put((*thread, channel, rid), built[rid])
        return out

    def _tuple(
        self,
        thread: _Thread,
        head: Sequence[Any],
        writes: list[Any],  # noqa: PLR0913
        memo: _Memo,
        keep_all: bool = False,
    ) -> CheckpointTuple:
        cid, parent, step, source, created, blob, meta = head
        stored = {
            **EMPTY_FIELDS,
            **self.decode(blob, f"checkpoint {cid} of thread {thread[0]!r}"),
            "ts": created,
        }
        loc = locations(stored.pop("loc", {}), cid)
        self._locs.put((*thread, cid), loc)
        entries = self._entries(thread, loc, memo, keep_all=keep_all)
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
        parent_config = _config(thread, parent) if parent else None
        return CheckpointTuple(_config(thread, cid), checkpoint, metadata, parent_config, pending)

    def get_tuple(self, config: dict[str, Any]) -> CheckpointTuple | None:
        """The addressed checkpoint, or the thread's newest (one query plus at most one for values)."""
        self._setup_once()
        thread, cid = _thread(config)
        for attempt in (1, 2):
            rows = self._fetch(self.sql.SELECT_HEAD, [*thread, cid, *thread])
            if not rows:
                return None
            writes = [r[7:] for r in rows if r[7] is not None]
            try:
                return self._tuple(thread, rows[0][:7], writes, {})
            except _Incomplete:
                if attempt == 2:  # not a checkpoint pruned while it was read: the rows are damaged
                    raise
        return None

    def threads(self) -> Iterator[ThreadInfo]:
        """Every thread of the root namespace, newest first, in one query."""
        self._setup_once()
        for thread_id, count, head, step, created in self._fetch(self.sql.THREADS, []):
            yield ThreadInfo(str(thread_id), int(count), str(head), int(step), str(created))

    def list(
        self,
        config: dict[str, Any] | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002
        before: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first, read a page at a time."""
        self._setup_once()
        thread = _thread(config)[0] if config is not None else None
        where: dict[str, Any] = {k: v for k, v in (filter or {}).items() if k in ("step", "source")}
        where["before"] = get_checkpoint_id(before)
        memo: _Memo = {}
        after, count = None, 0
        while limit is None or count < limit:
            page = self._fetch(*self.sql.list_query(thread, after, where, _PAGE))
            if not page:
                return
            after = (page[-1][2], page[-1][0], page[-1][1])
            writes: dict[tuple[str, str, str], list[Any]] = {}
            for key in {(r[0], r[1]) for r in page}:
                ids = [r[2] for r in page if (r[0], r[1]) == key]
                for cid, task, ch, value in self._fetch(*self.sql.writes_query(key, ids)):
                    writes.setdefault((*key, cid), []).append((task, ch, value))
            for row in page:
                try:
                    pending = writes.get((row[0], row[1], row[2]), [])
                    item = self._tuple((row[0], row[1]), row[2:], pending, memo, True)
                except _Incomplete:
                    if self._fetch(self.sql.SELECT_HEAD, [row[0], row[1], row[2], row[0], row[1]]):
                        raise
                    continue  # pruned while the page was read
                if filter and any(item.metadata.get(k) != v for k, v in filter.items()):
                    continue
                yield item
                count += 1
                if limit is not None and count >= limit:
                    return
            if len(page) < _PAGE:
                return

    # -- writing ------------------------------------------------------------------

    def _parentlocations(self, thread: _Thread, parent: str | None) -> dict[str, str]:
        if parent is None:
            return {}
        loc = self._locs.get((*thread, parent))
        if loc is None:
            rows = self._fetch(self.sql.SELECT_HEAD, [*thread, parent, *thread])
            if not rows:
                return {}
            loc = locations(self.decode(rows[0][5], f"checkpoint {parent}").get("loc", {}), parent)
            self._locs.put((*thread, parent), loc)
        return loc

    def _base(self, thread: _Thread, channel: str, rid: str | None) -> Entry | None:
        if rid is None:
            return None
        found = self._cache.get((*thread, channel, rid))
        if found is None:
            try:
                found = self._entries(thread, {channel: rid}, {}).get(channel)
            except SerializationError:
                return None
        return found

    supports_head_check = True

    def put(
        self,
        config: dict[str, Any],
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: Mapping[str, int],
        *,
        expected_head: Any = ...,
    ) -> dict[str, Any]:
        """Store a checkpoint in one transaction; unchanged keys point at their earlier rows.

        What the new rows build on (the parent checkpoint and its value rows) is
        checked inside the write transaction, so a concurrent :meth:`prune` in
        another thread or process can never leave the new checkpoint pointing
        at deleted rows: if it removed the parent meanwhile, the values are
        stored again in full.

        Raises:
            CheckpointConflictError: ``expected_head`` is given and is not the thread's newest
                checkpoint, or the new id does not sort after it (clock skew).
            SerializationError: A value cannot be stored (the error names the state key).
        """
        self._setup_once()
        thread, parent = _thread(config)
        parent_loc = self._parentlocations(thread, parent)
        try:
            return self._put(thread, parent, parent_loc, checkpoint, metadata, new_versions, expected_head)
        except _ParentGone:
            self._locs.drop_thread(thread[0])
            return self._put(thread, parent, {}, checkpoint, metadata, new_versions, expected_head)

    def _put(  # noqa: PLR0913 - the parts of one put
        self,
        thread: _Thread,
        parent: str | None,
        parent_loc: dict[str, str],
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: Mapping[str, int],
        expected_head: Any,
    ) -> dict[str, Any]:
        cid = checkpoint["id"]  # pyright: ignore[reportTypedDictNotRequiredAccess]  # the runtime always sets "id"; a KeyError is the right failure otherwise
        loc, blobs = self._encode(
            thread, cid, checkpoint.get("channel_values") or {}, parent_loc, new_versions
        )
        stored = {
            k: v
            for k, v in checkpoint.items()
            if v != EMPTY_FIELDS.get(k, _MISSING) and k not in ("channel_values", "id", "ts")
        }
        meta = {
            k: v
            for k, v in metadata.items()
            if k not in ("step", "source") and not (k == "parents" and not v)
        }
        row = [
            *thread,
            cid,
            parent,
            metadata.get("step"),
            metadata.get("source"),
            checkpoint.get("ts") or _now(),
            self.serde.dumps({**stored, "loc": {ch: "" if rid == cid else rid for ch, rid in loc.items()}}),
            self.serde.dumps(meta),
        ]
        with self._tx() as cur:
            if self.sql.LOCK_THREAD:
                cur.execute(self.sql.LOCK_THREAD, [lock_name(thread)])
            head, parent_there = cur.execute(self.sql.HEAD_AND_PARENT, [*thread, *thread, parent]).fetchone()
            if parent_loc and not parent_there:
                raise _ParentGone
            if expected_head is not ...:
                check_head(thread[0], cid, expected_head, head)
            cur.executemany(
                self.sql.INSERT_BLOB, [(*thread, ch, cid, b.prev, b.kind, b.data) for ch, b, _ in blobs]
            )
            cur.execute(self.sql.INSERT_CHECKPOINT, row)
        for channel, _, entry in blobs:
            self._cache.put((*thread, channel, cid), entry)
        self._locs.put((*thread, cid), loc)
        return _config(thread, cid)

    def _encode(
        self,
        thread: _Thread,
        cid: str,
        values: Mapping[str, Any],
        parent_loc: Mapping[str, str],
        new_versions: Mapping[str, int],
    ) -> tuple[dict[str, str], builtins.list[tuple[str, Blob, Entry]]]:
        """Where each value is stored, and the rows of the values that changed."""
        loc: dict[str, str] = {}
        blobs: builtins.list[tuple[str, Blob, Entry]] = []
        for channel, value in values.items():
            if channel not in new_versions and channel in parent_loc:
                loc[channel] = parent_loc[channel]
                continue
            base = self._base(thread, channel, parent_loc.get(channel)) if isinstance(value, list) else None
            try:
                blob, entry = encode_value(value, base, parent_loc.get(channel), self.serde.dumps, share=True)
            except SerializationError as exc:
                raise SerializationError(f"Cannot store state key {channel!r}: {exc}", key=channel) from exc
            blobs.append((channel, blob, entry))
            loc[channel] = cid
        return loc, blobs

    def put_writes(
        self, config: dict[str, Any], writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Record writes of a task whose step has not completed (replacing its earlier ones)."""
        self._setup_once()
        thread, cid = _thread(config)
        rows: list[tuple[Any, ...]] = []
        for i, (channel, value) in enumerate(writes):
            try:
                data = self.serde.dumps(value)
            except SerializationError as exc:
                raise SerializationError(f"Cannot store write to {channel!r}: {exc}", key=channel) from exc
            rows.append((*thread, cid, task_id, _SPECIAL_IDX.get(channel, i), channel, task_path, data))
        with self._tx() as cur:
            cur.execute(self.sql.DELETE_TASK_WRITES, [*thread, cid, task_id])
            cur.executemany(self.sql.INSERT_WRITE, rows)

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, value and write of the thread."""
        self._setup_once()
        thread_id = check_thread_id(thread_id)
        with self._tx() as cur:
            for sql in self.sql.DELETE_THREAD:
                cur.execute(sql, [thread_id])
        self._cache.drop_thread(thread_id)
        self._locs.drop_thread(thread_id)

    # -- pruning ------------------------------------------------------------------

    def prune(self, thread_id: str, *, keep_last: int | None = None, older_than: float | None = None) -> int:
        """Delete old checkpoints of a thread and reclaim their space; return how many were deleted.

        A checkpoint is deleted when it is beyond the ``keep_last`` newest of its
        namespace or older than ``older_than`` seconds; the newest one is always
        kept. Values the kept checkpoints need are rewritten in full where their
        delta chain would lose its base.

        Safe beside running writers, in this process or others: what to keep is
        decided inside the write transaction that deletes, which writers of the
        thread wait for (SQLite: the database write lock; PostgreSQL: the
        thread's advisory lock), and a writer that built on a checkpoint pruned
        meanwhile stores its values in full.

        Raises:
            SerializationError: a row the kept checkpoints need is unreadable (nothing is deleted).
        """
        check_prune(keep_last, older_than)
        self._setup_once()
        cutoff = (
            None
            if older_than is None
            else datetime.fromtimestamp(time.time() - older_than, timezone.utc).isoformat()
        )
        thread_id = check_thread_id(thread_id)
        with self._tx() as cur:
            deleted = prune_thread(self, cur, thread_id, keep_last, cutoff)
        if deleted:
            self._cache.drop_thread(thread_id)
            self._locs.drop_thread(thread_id)
            self._reclaim()
        return deleted

    def _reclaim(self) -> None:
        """Give freed pages back to the file system (backend-specific)."""
