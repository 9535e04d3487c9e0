"""Writing checkpoints of the SQL savers: a checkpoint, a task's writes, deleting and pruning a thread.

Written as operation generators (:mod:`plait.checkpoint._engine_ops`), so the
sync and async savers share every line of it.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from types import EllipsisType
from typing import Any

from plait.checkpoint._delta import EMPTY_FIELDS, Entry
from plait.checkpoint._engine_ops import Batch, Fetch, Ops, Session, Step
from plait.checkpoint._engine_read import SqlReader, Thread, config_of, thread_of
from plait.checkpoint._engine_sql import PutRows, WriteRow, put_allowed
from plait.checkpoint._keyframe import encode_values
from plait.checkpoint._locks import check_head
from plait.checkpoint._prune import locations, lock_name, prune_thread
from plait.checkpoint.base import (
    INTERRUPT,
    RESUME,
    Checkpoint,
    CheckpointMetadata,
    check_prune,
    check_thread_id,
)
from plait.errors import SerializationError

__all__ = ["SqlWriter"]

_SPECIAL_IDX = {INTERRUPT: -1, RESUME: -2}
_MISSING = object()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


class _ParentGone(Exception):  # noqa: N818 - internal signal, never escapes put()
    """The parent checkpoint a put was encoded against was pruned meanwhile."""


class SqlWriter(SqlReader):
    """The writing half of the SQL saver engine (mixed into ``SqlSaverBase``)."""

    def _put_ops(self, rows: PutRows) -> Ops[tuple[str | None, bool]]:
        """The backend's put statement(s): ``(head, parent exists)``."""
        put_ops: Callable[[PutRows], Ops[tuple[str | None, bool]]] = self.sql.put_ops
        return put_ops(rows)

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
        expected_head: str | None | EllipsisType,
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
        expected_head: str | None | EllipsisType,
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
            if expected_head is not ...:  # always: put_allowed passes every put that checks no head
                check_head(thread[0], cid, expected_head, head)
            raise AssertionError("unreachable: put_allowed and check_head disagree")  # noqa: TRY003
        for channel, rid, entry in cached:
            self._cache.put((*thread, channel, rid), entry)
        self._locs.put((*thread, cid), loc)
        return config_of(thread, cid)

    def _put_writes(
        self, config: dict[str, Any], writes: Sequence[tuple[str, object]], task_id: str, task_path: str
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
