"""The SQL saver engine shared by the SQLite and PostgreSQL savers, sync and async.

Storage layout (see ``docs/storage.md``): one checkpoint row per checkpoint
holding everything but the state values, plus a ``loc`` map from each state
key to the value row that holds it; a value row is written only when the key
changed, and a list value is written as a delta against the previous value
whenever that is smaller.

Every operation is a generator of database operations
(:mod:`plait.checkpoint._engine_ops`); a backend only performs them, with a
sync driver (``_perform``) and an async one (``_aperform``).
"""

from __future__ import annotations

import asyncio
import builtins
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from datetime import datetime, timezone
from typing import Any, TypeVar

from plait.checkpoint._delta import EMPTY_FIELDS, Entry, ValueCache
from plait.checkpoint._engine_batch import BatchedSaves
from plait.checkpoint._engine_ops import Batch, Fetch, Op, Ops, Session, Setup, Step, drive, iterate
from plait.checkpoint._engine_read import SqlReader, Thread, config_of, thread_of
from plait.checkpoint._engine_sql import PutRows, WriteRow, put_allowed
from plait.checkpoint._keyframe import encode_values
from plait.checkpoint._lease import DEFAULT_TTL, ThreadLeases
from plait.checkpoint._locks import check_head
from plait.checkpoint._prune import locations, lock_name, prune_thread
from plait.checkpoint.base import (
    INTERRUPT,
    RESUME,
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    ThreadInfo,
    check_prune,
    check_thread_id,
    recorded_metadata,
)
from plait.checkpoint.serde import Serializer
from plait.errors import SerializationError

__all__ = ["SqlSaverBase"]

_SPECIAL_IDX = {INTERRUPT: -1, RESUME: -2}
_MISSING = object()
_T = TypeVar("_T")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


class _ParentGone(Exception):  # noqa: N818 - internal signal, never escapes put()
    """The parent checkpoint a put was encoded against was pruned meanwhile."""


class SqlSaverBase(BatchedSaves, SqlReader, BaseCheckpointSaver):
    """Backend-independent part of the SQL savers.

    Subclasses provide :meth:`_perform` (perform one operation, :class:`Setup` included),
    :meth:`_scope_ops` and the ``sql`` module with the SQL text; native async
    savers also override :meth:`_aperform`, :meth:`_adrive` and :meth:`_aitems`.

    Args:
        serde: The serializer (default: :class:`~plait.checkpoint.serde.Serializer`).
        cache_size: How many materialized values to keep in memory.
        lease_ttl: Seconds after which the thread lease of a vanished process can be taken over.
    """

    sql: Any = None
    """The dialect module with the SQL text (set by each backend)."""
    is_setup: bool = False
    supports_head_check = True
    writes_by_serde = True

    def __init__(
        self, *, serde: Serializer | None = None, cache_size: int = 128, lease_ttl: float = DEFAULT_TTL
    ) -> None:
        self.serde = serde or Serializer()
        self._cache: ValueCache[Entry] = ValueCache(cache_size)
        self._locs: ValueCache[dict[str, str]] = ValueCache(cache_size)
        self._leases = ThreadLeases(
            self._drive,
            self._adrive,
            self.sql.LEASE,
            lease_ttl,
            self._scope_ops,
            ready=lambda: self._ready(write=True),
            read=lambda key: Step(self.sql.SELECT_HEAD, [*key, None, *key]),
        )

    # -- backend hooks ------------------------------------------------------------

    def _perform(self, op: Op) -> Any:
        """Perform one database operation (sync)."""
        raise NotImplementedError

    async def _aperform(self, op: Op) -> Any:
        """Perform one database operation without blocking the event loop."""
        return await self._off_loop(self._perform, op)

    async def _off_loop(self, fn: Callable[..., _T], *args: Any) -> _T:
        """Run the sync part of an async call: in a worker thread, so the event loop keeps serving."""
        return await asyncio.to_thread(fn, *args)

    def _scope_ops(self) -> Ops[tuple[str, bool]]:
        """``(name of the database, reachable by other processes?)``."""
        raise NotImplementedError
        yield  # pragma: no cover - makes this a generator

    def _put_ops(self, rows: PutRows) -> Ops[tuple[str | None, bool]]:
        """The backend's put statement(s): ``(head, parent exists)``."""
        put_ops: Callable[[PutRows], Ops[tuple[str | None, bool]]] = self.sql.put_ops
        return put_ops(rows)

    # -- drivers ------------------------------------------------------------------

    def _fetch(self, sql: str, params: Sequence[Any]) -> builtins.list[tuple[Any, ...]]:
        """The rows of one read statement (for tests and tools)."""
        rows: builtins.list[tuple[Any, ...]] = self._perform(Fetch(sql, list(params)))
        return rows

    def _drive(self, ops: Ops[_T]) -> _T:
        return drive(ops, self._perform)

    async def _adrive(self, ops: Ops[_T]) -> _T:
        """Sync backends run a whole operation in one worker thread (one hop per call)."""
        return await self._off_loop(drive, ops, self._perform)

    def _items(self, ops: Ops[None]) -> Iterator[Any]:
        return iterate(ops, self._perform)

    async def _aitems(self, ops: Ops[None]) -> AsyncIterator[Any]:
        items = self._items(ops)
        while True:
            item = await self._off_loop(next, items, None)
            if item is None:
                return
            yield item

    def _ready(self, *, write: bool) -> Ops[bool]:
        """Tables set up (a :class:`Setup` op the first time); a read on a database without them creates none."""
        if self.is_setup:
            return True
        answer: bool = yield Setup(write)
        return answer

    def setup(self) -> None:
        """Create or migrate the tables (done automatically on first write; idempotent)."""
        self._perform(Setup(True))

    # -- thread leases (see plait/checkpoint/_lease.py) ---------------------------------

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

    # -- the public API, sync and async -------------------------------------------------

    def get_tuple(self, config: dict[str, Any]) -> CheckpointTuple | None:
        """The addressed checkpoint, or the thread's newest (one query plus at most one for values)."""
        return self._drive(self._get_tuple(config))

    async def aget_tuple(self, config: dict[str, Any]) -> CheckpointTuple | None:
        """Async :meth:`get_tuple`."""
        return await self._adrive(self._get_tuple(config))

    def threads(self) -> Iterator[ThreadInfo]:
        """Every thread of the root namespace, newest first, in one query."""
        yield from self._drive(self._threads())

    def list(
        self,
        config: dict[str, Any] | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002
        before: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first, read a page at a time."""
        return self._items(self._list(config, filter, before, limit))

    async def alist(
        self,
        config: dict[str, Any] | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002
        before: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list`, streamed."""
        async for item in self._aitems(self._list(config, filter, before, limit)):
            yield item

    def put(
        self,
        config: dict[str, Any],
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: Mapping[str, int],
        *,
        expected_head: Any = ...,
    ) -> dict[str, Any]:
        """Store a checkpoint in one transaction (PostgreSQL: one round trip); unchanged keys point at earlier rows.

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
        metadata = recorded_metadata(config, metadata)
        return self._drive(self._put(config, checkpoint, metadata, new_versions, expected_head))

    async def aput(
        self,
        config: dict[str, Any],
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: Mapping[str, int],
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Async :meth:`put` (the one keyword argument is ``expected_head``)."""
        expected_head = kwargs.pop("expected_head", ...)
        if kwargs:
            raise TypeError(f"aput() got unexpected keyword arguments: {sorted(kwargs)}")
        metadata = recorded_metadata(config, metadata)
        return await self._adrive(self._put(config, checkpoint, metadata, new_versions, expected_head))

    def put_writes(
        self, config: dict[str, Any], writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Record writes of a task whose step has not completed (replacing its earlier ones)."""
        self._drive(self._put_writes(config, writes, task_id, task_path))

    async def aput_writes(
        self, config: dict[str, Any], writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Async :meth:`put_writes`."""
        await self._adrive(self._put_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, value and write of the thread."""
        self._drive(self._delete_thread(thread_id))

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`."""
        await self._adrive(self._delete_thread(thread_id))

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
        deleted = self._drive(self._prune(thread_id, keep_last, older_than))
        if deleted:
            self._reclaim()
        return deleted

    async def aprune(
        self, thread_id: str, *, keep_last: int | None = None, older_than: float | None = None
    ) -> int:
        """Async :meth:`prune`."""
        return await self._adrive(self._prune(thread_id, keep_last, older_than))

    def _reclaim(self) -> None:
        """Give freed pages back to the file system (backend-specific)."""

    # -- writing ------------------------------------------------------------------

    def _durable(self, thread_id: str) -> bool:
        """Whether a write must reach the disk before it returns: not inside a run holding the thread.

        A run's writes become durable together when it releases its lease (a
        durable commit flushes everything before it).
        """
        return not self._leases.defer_flush(thread_id)

    def _parent_locations(self, thread: Thread, parent: str | None) -> Ops[dict[str, str]]:
        if parent is None:
            return {}
        loc = self._locs.get((*thread, parent))
        if loc is None:
            rows = yield Fetch(self.sql.SELECT_HEAD, [*thread, parent, *thread])
            if not rows:
                return {}
            loc = locations(self.decode(rows[0][5], f"checkpoint {parent}").get("loc", {}), parent)
            self._locs.put((*thread, parent), loc)
        return loc

    def _base(self, thread: Thread, channel: str, rid: str | None) -> Ops[Entry | None]:
        """The materialized value a new list value is encoded against (``None``: store it whole)."""
        if rid is None:
            return None
        found = self._cache.get((*thread, channel, rid))
        if found is None:
            try:
                found = (yield from self._entries(thread, {channel: rid}, {})).get(channel)
            except SerializationError:
                return None
        return found

    def _put(
        self,
        config: dict[str, Any],
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: Mapping[str, int],
        expected_head: Any,
    ) -> Ops[dict[str, Any]]:
        yield from self._ready(write=True)
        thread, parent = thread_of(config)
        self._leases.drop_ahead(thread[0])
        parent_loc = yield from self._parent_locations(thread, parent)
        try:
            return (
                yield from self._write(
                    thread, parent, parent_loc, checkpoint, metadata, new_versions, expected_head
                )
            )  # noqa: E501
        except (
            _ParentGone
        ):  # pruned meanwhile: forget what this process knew of the thread, store values whole
            self._locs.drop_thread(thread[0])
            self._cache.drop_thread(thread[0])
            return (
                yield from self._write(thread, parent, {}, checkpoint, metadata, new_versions, expected_head)
            )

    def _write(  # noqa: PLR0913 - the parts of one put
        self,
        thread: Thread,
        parent: str | None,
        parent_loc: dict[str, str],
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: Mapping[str, int],
        expected_head: Any,
    ) -> Ops[dict[str, Any]]:
        cid = checkpoint["id"]  # pyright: ignore[reportTypedDictNotRequiredAccess]  # the runtime always sets "id"; a KeyError is the right failure otherwise
        values = checkpoint.get("channel_values") or {}
        bases: dict[str, Entry | None] = {}
        for channel, value in values.items():
            if isinstance(value, list) and (channel in new_versions or channel not in parent_loc):
                bases[channel] = yield from self._base(thread, channel, parent_loc.get(channel))
        loc, blobs, rewrites, cached = encode_values(
            cid, values, parent_loc, new_versions, bases, self.serde.dumps
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
        rows = PutRows(
            thread=thread,
            cid=cid,
            parent=parent,
            need_parent=bool(parent_loc) or any(b[2] is not None for b in blobs),
            expected=expected_head,
            lock=lock_name(thread),
            blobs=blobs,
            rewrites=rewrites,
            checkpoint=[
                *thread,
                cid,
                parent,
                metadata.get("step"),
                metadata.get("source"),
                checkpoint.get("ts") or _now(),
                self.serde.dumps(
                    {**stored, "loc": {ch: "" if rid == cid else rid for ch, rid in loc.items()}}
                ),
                self.serde.dumps(meta),
            ],
            durable=self._durable(thread[0]),
        )
        head, parent_there = yield from self._put_ops(rows)
        if not put_allowed(rows, head, parent_there):
            if rows.need_parent and not parent_there:
                raise _ParentGone
            check_head(thread[0], cid, expected_head, head)
            raise AssertionError("unreachable: put_allowed and check_head disagree")  # noqa: TRY003
        for channel, rid, entry in cached:
            self._cache.put((*thread, channel, rid), entry)
        self._locs.put((*thread, cid), loc)
        return config_of(thread, cid)

    def _put_writes(
        self, config: dict[str, Any], writes: Sequence[tuple[str, Any]], task_id: str, task_path: str
    ) -> Ops[None]:
        yield from self._ready(write=True)
        thread, cid = thread_of(config)
        self._leases.drop_ahead(thread[0])
        rows: builtins.list[WriteRow] = []
        for i, (channel, value) in enumerate(writes):
            try:
                data = self.serde.dumps(value)
            except SerializationError as exc:
                raise SerializationError(f"Cannot store write to {channel!r}: {exc}", key=channel) from exc
            rows.append((_SPECIAL_IDX.get(channel, i), channel, task_path, data))
        yield Batch(self._writes_steps(thread, cid, task_id, rows), durable=self._durable(thread[0]))

    def _writes_steps(
        self, thread: Thread, cid: str | None, task_id: str, rows: Sequence[WriteRow]
    ) -> tuple[Step, ...]:
        """The backend's statements storing a task's writes (replacing those it wrote before)."""
        writes_steps: Callable[[Thread, str | None, str, Sequence[WriteRow]], tuple[Step, ...]] = (
            self.sql.writes_steps
        )
        return writes_steps(thread, cid, task_id, rows)

    def _delete_thread(self, thread_id: str) -> Ops[None]:
        thread_id = check_thread_id(thread_id)
        self._leases.drop_ahead(thread_id)
        if not (yield from self._ready(write=False)):
            return
        yield Batch(tuple(Step(sql, [thread_id]) for sql in self.sql.DELETE_THREAD))
        self._cache.drop_thread(thread_id)
        self._locs.drop_thread(thread_id)

    def _prune(self, thread_id: str, keep_last: int | None, older_than: float | None) -> Ops[int]:
        check_prune(keep_last, older_than)
        thread_id = check_thread_id(thread_id)
        self._leases.drop_ahead(thread_id)
        if not (yield from self._ready(write=False)):
            return 0
        cutoff = (
            None
            if older_than is None
            else datetime.fromtimestamp(time.time() - older_than, timezone.utc).isoformat()
        )
        deleted: int = yield Session(prune_thread(self, thread_id, keep_last, cutoff))
        if deleted:
            self._cache.drop_thread(thread_id)
            self._locs.drop_thread(thread_id)
        return deleted
