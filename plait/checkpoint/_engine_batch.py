"""Several saver calls in one transaction and one round trip (backends whose put is one statement).

A run's step usually stores more than one thing: the input checkpoint, the input's writes and the
first step's checkpoint; or its last checkpoint and the release of the thread's lease. Each call is
run as usual, except that its statements are collected instead of sent and each put is answered as
if it had been written; the put's own rule (thread head, parent and base rows) is checked by its
statement, which fails the whole transaction when the rule does not hold. The caller then forgets
what this process assumed and makes the calls one by one, which raises the precise error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

from plait.checkpoint._calls import PutCheckpoint, SaveOp
from plait.checkpoint._delta import Entry, ValueCache
from plait.checkpoint._engine_ops import Batch, Fetch, Ops, Step
from plait.checkpoint._engine_read import thread_of
from plait.checkpoint._lease import ThreadLeases
from plait.checkpoint.base import Checkpoint, CheckpointMetadata

__all__ = ["DURABLE", "BatchedSaves", "batched"]

_T = TypeVar("_T")

DURABLE = Step("SET LOCAL synchronous_commit TO DEFAULT", [])
"""Undoes a put's ``synchronous_commit = off`` in a transaction whose commit must reach the disk."""


def batched(
    sql: Any,
    call_ops: Callable[[SaveOp], Ops[Any]],
    calls: Sequence[SaveOp],
    tail: tuple[Step, ...],
    done: list[int],
) -> Ops[None]:
    """Run ``calls`` (then the ``tail`` statements) in as few transactions as their reads allow.

    ``sql`` is the dialect module (``STRICT``, ``strict_params``); ``call_ops`` gives a call's
    operation. ``done[0]`` counts the calls committed so far: when a call needs a read first (a
    value evicted from the cache), the statements collected before it are sent and committed.
    With a ``tail``, the last transaction's commit reaches the disk.
    """
    strict_params: Callable[[Sequence[Any]], list[Any]] = sql.strict_params
    strict: Mapping[str, str] = sql.STRICT
    steps: list[Step] = []
    durable = True
    for index, call in enumerate(calls):
        ops = call_ops(call)
        answer: Any = None
        while True:
            try:
                op = ops.send(answer)
            except StopIteration:
                break
            if type(op) is Fetch and op.sql in strict:
                steps.append(Step(strict[op.sql], strict_params(op.params)))
                durable = durable and bool(op.params[8])
                answer = [(op.params[6], True)]  # written, unless the statement fails the transaction
            elif type(op) is Batch:
                steps.extend(op.steps)
                durable = durable and op.durable
                answer = [None] * len(op.steps)
            else:  # a read the rest depends on (or the tables' set-up): commit what came before it
                if steps:
                    yield Batch(tuple(steps), durable)
                    steps, durable = [], True
                    done[0] = index
                answer = yield op
    if tail:
        steps.extend((*tail, DURABLE))
    if steps:
        yield Batch(tuple(steps), durable or bool(tail))
    done[0] = len(calls)


class BatchedSaves:
    """:meth:`save_many` / :meth:`asave_many` of the SQL saver engine (mixed into ``SqlSaverBase``)."""

    sql: Any
    _leases: ThreadLeases
    _cache: ValueCache[Entry]
    _locs: ValueCache[dict[str, str]]

    def _drive(self, ops: Ops[_T]) -> _T:
        raise NotImplementedError

    async def _adrive(self, ops: Ops[_T]) -> _T:
        raise NotImplementedError

    def _put(  # noqa: PLR0913 - the engine's put
        self,
        config: dict[str, Any],
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: Mapping[str, int],
        expected_head: Any,
    ) -> Ops[dict[str, Any]]:
        raise NotImplementedError

    def _put_writes(
        self, config: dict[str, Any], writes: Sequence[tuple[str, Any]], task_id: str, task_path: str
    ) -> Ops[None]:
        raise NotImplementedError

    def save_many(self, calls: Sequence[SaveOp], *, release: tuple[str, str] | None = None) -> None:
        """Make ``calls`` in order, in one transaction where the backend can (PostgreSQL: one round trip).

        With ``release`` (``(thread_id, checkpoint_ns)`` whose lease this process holds), the lease
        is given back in that same durable commit, and the ``lease()`` block then releases nothing.

        Raises:
            CheckpointConflictError, SerializationError: as :meth:`put` and :meth:`put_writes` would,
                for the first call that fails; the calls before it are stored.
        """
        tail, holder = self._leases.release_steps(release) if release is not None else ((), None)
        if getattr(self.sql, "STRICT", None) is None or not (len(calls) > 1 or tail):
            for call in calls:
                self._drive(self._call_ops(call))
            return
        done = [0]
        try:
            self._drive(batched(self.sql, self._call_ops, calls, tail, done))
        except Exception:  # noqa: BLE001 - nothing of the failed transaction was stored: make the calls one by one
            self._forget(calls)
            for call in calls[done[0] :]:
                self._drive(self._call_ops(call))
            return
        if holder is not None:
            self._leases.released(holder)

    async def asave_many(self, calls: Sequence[SaveOp], *, release: tuple[str, str] | None = None) -> None:
        """Async :meth:`save_many`."""
        tail, holder = self._leases.release_steps(release) if release is not None else ((), None)
        if getattr(self.sql, "STRICT", None) is None or not (len(calls) > 1 or tail):
            for call in calls:
                await self._adrive(self._call_ops(call))
            return
        done = [0]
        try:
            await self._adrive(batched(self.sql, self._call_ops, calls, tail, done))
        except Exception:  # noqa: BLE001 - see save_many
            self._forget(calls)
            for call in calls[done[0] :]:
                await self._adrive(self._call_ops(call))
            return
        if holder is not None:
            self._leases.released(holder)

    def _call_ops(self, call: SaveOp) -> Ops[Any]:
        """The operation of one saver call."""
        if isinstance(call, PutCheckpoint):
            checkpoint = cast("Checkpoint", call.checkpoint)
            metadata = cast("CheckpointMetadata", call.metadata)
            return self._put(call.config, checkpoint, metadata, call.versions, call.expected_head)
        return self._put_writes(call.config, call.writes, call.task_id, "")

    def _forget(self, calls: Sequence[SaveOp]) -> None:
        """Drop what this process assumed about the threads of ``calls`` (a batch that failed)."""
        for thread_id in {thread_of(call.config)[0][0] for call in calls}:
            self._cache.drop_thread(thread_id)
            self._locs.drop_thread(thread_id)
