"""The SQL saver engine shared by the SQLite and PostgreSQL savers, sync and async.

Storage layout (see ``docs/storage.md``): one checkpoint row per checkpoint
holding everything but the state values, plus a ``loc`` map from each state
key to the value row that holds it; a value row is written only when the key
changed, and a list value is written as a delta against the previous value
whenever that is smaller.

Every operation is a generator of database operations
(:mod:`plait.checkpoint._engine_ops`; reading in :mod:`~plait.checkpoint._engine_read`,
writing in :mod:`~plait.checkpoint._engine_write`); a backend only performs them, with a
sync driver (``_perform``) and an async one (``_aperform``). The public sync methods are
generated from the async ones (``tools/unasync_gen.py``).
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from types import EllipsisType
from typing import Any, TypeVar

from plait.checkpoint._delta import Entry, ValueCache
from plait.checkpoint._engine_batch import BatchedSaves
from plait.checkpoint._engine_ops import Fetch, Op, Ops, Setup, Step, drive, iterate
from plait.checkpoint._engine_write import SqlWriter
from plait.checkpoint._lease import DEFAULT_TTL, ThreadLeases
from plait.checkpoint.base import (
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    ThreadInfo,
    check_thread_id,
    recorded_metadata,
)
from plait.checkpoint.serde import Serializer

__all__ = ["SqlSaverBase"]

_T = TypeVar("_T")


class SqlSaverBase(SqlWriter, BatchedSaves, BaseCheckpointSaver):
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

    async def _aperform(self, op: Op) -> object:
        """Perform one database operation without blocking the event loop."""
        return await self._off_loop(self._perform, op)

    async def _off_loop(self, fn: Callable[..., _T], *args: object) -> _T:
        """Run the sync part of an async call: in a worker thread, so the event loop keeps serving."""
        return await asyncio.to_thread(fn, *args)

    def _scope_ops(self) -> Ops[tuple[str, bool]]:
        """``(name of the database, reachable by other processes?)``."""
        raise NotImplementedError
        yield  # pragma: no cover - makes this a generator

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

    def lease_id(self, thread_id: str, checkpoint_ns: str = "") -> tuple[object, str, str]:
        """Savers on the same database share leases, so their ids name the database."""
        return self._leases.scope()[0], check_thread_id(thread_id), checkpoint_ns or ""

    def threads(self) -> Iterator[ThreadInfo]:
        """Every thread of the root namespace, newest first, in one query."""
        yield from self._drive(self._threads())

    # -- the public API (the sync forms are generated from the async ones) ------------------------

    # >>> async source
    async def aput(
        self,
        config: dict[str, Any],
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: Mapping[str, int],
        *,
        expected_head: str | None | EllipsisType = ...,
        # >>> async only
        **kwargs: object,  # LangGraph's aput signature (its put has none): any other keyword is refused
        # <<< async only
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
        # >>> async only
        if kwargs:
            raise TypeError(f"aput() got unexpected keyword arguments: {sorted(kwargs)}")
        # <<< async only
        return await self._adrive(
            self._put_recorded(config, checkpoint, metadata, new_versions, expected_head)
        )

    async def alease(
        self, thread_id: str, checkpoint_ns: str = "", *, wait: bool = True, timeout: float | None = None
    ) -> AbstractAsyncContextManager[None]:
        """Hold ``thread_id`` for one run, across threads **and processes** sharing the database.

        The async form waits without blocking the event loop (see ``plait/checkpoint/_lease.py``).

        Raises:
            ThreadBusyError: the thread is held and ``wait`` is false or ``timeout`` passed.
        """
        return self._leases.ahold(thread_id, checkpoint_ns, wait, timeout)

    async def aget_tuple(self, config: dict[str, Any]) -> CheckpointTuple | None:
        """The addressed checkpoint, or the thread's newest (one query plus at most one for values)."""
        return await self._adrive(self._get_tuple(config))

    async def alist(
        self,
        config: dict[str, Any] | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002
        before: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Checkpoints newest first, read a page at a time, streamed."""
        async for item in self._aitems(self._list(config, filter, before, limit)):
            yield item

    async def aput_writes(
        self, config: dict[str, Any], writes: Sequence[tuple[str, object]], task_id: str, task_path: str = ""
    ) -> None:
        """Record writes of a task whose step has not completed (replacing its earlier ones)."""
        await self._adrive(self._put_writes(config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, value and write of the thread."""
        await self._adrive(self._delete_thread(thread_id))

    async def aprune(
        self, thread_id: str, *, keep_last: int | None = None, older_than: float | None = None
    ) -> int:
        """Delete old checkpoints of a thread; return how many were deleted.

        A checkpoint is deleted when it is beyond the ``keep_last`` newest of its
        namespace or older than ``older_than`` seconds; the newest one is always
        kept. Values the kept checkpoints need are rewritten in full where their
        delta chain would lose its base. The sync form then reclaims the space
        (:meth:`_reclaim`; SQLite gives the freed pages back).

        Safe beside running writers, in this process or others: what to keep is
        decided inside the write transaction that deletes, which writers of the
        thread wait for (SQLite: the database write lock; PostgreSQL: the
        thread's advisory lock), and a writer that built on a checkpoint pruned
        meanwhile stores its values in full.

        Raises:
            SerializationError: a row the kept checkpoints need is unreadable (nothing is deleted).
        """
        deleted = await self._adrive(self._prune(thread_id, keep_last, older_than))
        if deleted:
            await self._areclaim()
        return deleted

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def put(
        self,
        config: dict[str, Any],
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: Mapping[str, int],
        *,
        expected_head: str | None | EllipsisType = ...,
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
        return self._drive(self._put_recorded(config, checkpoint, metadata, new_versions, expected_head))

    def lease(
        self, thread_id: str, checkpoint_ns: str = "", *, wait: bool = True, timeout: float | None = None
    ) -> AbstractContextManager[None]:
        """Hold ``thread_id`` for one run, across threads **and processes** sharing the database.

        The async form waits without blocking the event loop (see ``plait/checkpoint/_lease.py``).

        Raises:
            ThreadBusyError: the thread is held and ``wait`` is false or ``timeout`` passed.
        """
        return self._leases.hold(thread_id, checkpoint_ns, wait, timeout)

    def get_tuple(self, config: dict[str, Any]) -> CheckpointTuple | None:
        """The addressed checkpoint, or the thread's newest (one query plus at most one for values)."""
        return self._drive(self._get_tuple(config))

    def list(
        self,
        config: dict[str, Any] | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002
        before: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first, read a page at a time, streamed."""
        yield from self._items(self._list(config, filter, before, limit))

    def put_writes(
        self, config: dict[str, Any], writes: Sequence[tuple[str, object]], task_id: str, task_path: str = ""
    ) -> None:
        """Record writes of a task whose step has not completed (replacing its earlier ones)."""
        self._drive(self._put_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, value and write of the thread."""
        self._drive(self._delete_thread(thread_id))

    def prune(self, thread_id: str, *, keep_last: int | None = None, older_than: float | None = None) -> int:
        """Delete old checkpoints of a thread; return how many were deleted.

        A checkpoint is deleted when it is beyond the ``keep_last`` newest of its
        namespace or older than ``older_than`` seconds; the newest one is always
        kept. Values the kept checkpoints need are rewritten in full where their
        delta chain would lose its base. The sync form then reclaims the space
        (:meth:`_reclaim`; SQLite gives the freed pages back).

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

    # <<< generated sync

    async def _areclaim(self) -> None:
        """After an async prune: nothing (as before; the freed space is reused by later writes)."""

    def _reclaim(self) -> None:
        """Give freed pages back to the file system after a prune (backend-specific)."""

    def _put_recorded(
        self,
        config: dict[str, Any],
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: Mapping[str, int],
        expected_head: str | None | EllipsisType,
    ) -> Ops[dict[str, object]]:
        """:meth:`put`: the checkpoint stored with the metadata recorded from ``config``."""
        return self._put(config, checkpoint, recorded_metadata(config, metadata), new_versions, expected_head)
