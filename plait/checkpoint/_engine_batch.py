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
from dataclasses import dataclass
from types import EllipsisType
from typing import Any, TypeVar, cast

from plait.checkpoint._calls import PutCheckpoint, SaveOp
from plait.checkpoint._delta import Entry, ValueCache
from plait.checkpoint._engine_async import NativeAsync
from plait.checkpoint._engine_ops import Batch, Fetch, Ops, Step
from plait.checkpoint._engine_read import thread_of
from plait.checkpoint._lease import ThreadLeases
from plait.checkpoint.base import Checkpoint, CheckpointMetadata

__all__ = ["BatchedSaves", "Held", "batched", "own_methods"]

_T = TypeVar("_T")

_APUTS = ("aput", "aput_writes")
_PUTS = ("put", "put_writes")
"""The saver methods :meth:`BatchedSaves._asave_many` (and its sync form) stand in for."""


REFUSED = "plait_put refused"
"""In the error a batch's put statement raises when the put may not be written (see ``_sql._strict``)."""


class _Progress:
    """How far :func:`batched` got: calls committed, and whether a transaction was being sent."""

    __slots__ = ("done", "sending")

    def __init__(self) -> None:
        self.done = 0
        self.sending = False

    def replayable(self, exc: BaseException) -> bool:
        """Whether the calls may be made again one by one after ``exc``.

        Yes when nothing was sent (an error while collecting), or when a put refused the
        transaction; not after any other database error (a connection lost during the commit
        may have stored everything) nor after ``KeyboardInterrupt`` or cancellation.
        """
        if not isinstance(exc, Exception):
            return False
        return not self.sending or REFUSED in str(exc)


@dataclass(frozen=True, slots=True)
class Held:
    """Saver calls serialized into their statements, not sent yet (see :meth:`BatchedSaves._hold_saves`)."""

    calls: tuple[SaveOp, ...]
    steps: tuple[Step, ...]
    durable: bool


_OWN: dict[tuple[type, tuple[str, ...]], bool] = {}


def own_methods(kind: type, names: tuple[str, ...]) -> bool:
    """Whether ``kind`` uses the engine's own ``names`` (a subclass's override must be called)."""
    known = _OWN.get((kind, names))
    if known is None:
        owners = [next((k for k in kind.__mro__ if name in k.__dict__), None) for name in names]
        known = _OWN[(kind, names)] = all(
            k is not None and k.__module__ == "plait.checkpoint._engine" for k in owners
        )
    return known


def batched(  # noqa: PLR0913 - the calls, what came before them, and how to end
    sql: Any,
    call_ops: Callable[[SaveOp], Ops[Any]],
    calls: Sequence[SaveOp],
    tail: tuple[Step, ...],
    state: _Progress,
    before: Held | None = None,
    send: bool = True,
) -> Ops[Held | None]:
    """Run ``calls`` (then the ``tail`` statements) in as few transactions as their reads allow.

    ``sql`` is the dialect module (``STRICT``, ``strict_params``); ``call_ops`` gives a call's
    operation. ``before``: calls held back earlier, whose statements go first (``calls`` starts
    with them). ``state.done`` counts the calls committed so far: when a call needs a read first
    (a value evicted from the cache), the statements collected before it are sent and committed.
    With a ``tail`` (the dialect's one-statement lease release, which undoes a put's
    ``synchronous_commit = off``), the last transaction's commit reaches the disk. Without
    ``send``, the last transaction is not sent but answered (:class:`Held`).
    """
    strict_params: Callable[[Sequence[Any]], list[Any]] = sql.strict_params
    strict: Mapping[str, str] = sql.STRICT
    steps: list[Step] = list(before.steps) if before is not None else []
    durable = before.durable if before is not None else True
    skip = len(before.calls) if before is not None else 0
    for index, call in enumerate(calls):
        if index < skip:
            continue
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
                    state.sending = True
                    yield Batch(tuple(steps), durable)
                    state.sending = False
                    steps, durable = [], True
                    state.done = index
                answer = yield op
    if not send:
        return Held(tuple(calls[state.done :]), tuple(steps), durable) if steps else None
    steps.extend(tail)
    if steps:
        state.sending = True
        yield Batch(tuple(steps), durable or bool(tail))
        state.sending = False
    state.done = len(calls)
    return None


def _after(before: Held | None, calls: Sequence[SaveOp]) -> tuple[SaveOp, ...]:
    """The calls of a batch: those held back first."""
    return (*before.calls, *calls) if before is not None else tuple(calls)


class BatchedSaves:
    """:meth:`_save_many` / :meth:`_asave_many` of the SQL saver engine (mixed into ``SqlSaverBase``).

    Their sync forms are generated from the async ones (``tools/unasync_gen.py``); only the async
    forms of a sync backend differ: they make the whole call in one worker-thread hop.
    """

    sql: Any
    _leases: ThreadLeases
    _cache: ValueCache[Entry]
    _locs: ValueCache[dict[str, str]]

    def _drive(self, ops: Ops[_T]) -> _T:
        raise NotImplementedError

    async def _adrive(self, ops: Ops[_T]) -> _T:
        raise NotImplementedError

    async def _off_loop(self, fn: Callable[..., _T], *args: object) -> _T:
        raise NotImplementedError

    def _put(  # noqa: PLR0913 - the engine's put
        self,
        config: dict[str, Any],
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: Mapping[str, int],
        expected_head: str | None | EllipsisType,
    ) -> Ops[dict[str, object]]:
        raise NotImplementedError

    def _put_writes(
        self, config: dict[str, object], writes: Sequence[tuple[str, object]], task_id: str, task_path: str
    ) -> Ops[None]:
        raise NotImplementedError

    def _can_hold(self) -> bool:
        """Whether :meth:`_hold_saves` and :meth:`_ahold_saves` can hold calls back.

        Only where a batch of calls is one statement (PostgreSQL), and the saver's own ``put``,
        ``put_writes``, ``aput`` and ``aput_writes`` are the ones called (a subclass overriding
        one of them has every call made through it).
        """
        names = ("put", "put_writes", "aput", "aput_writes")
        return getattr(self.sql, "STRICT", None) is not None and own_methods(type(self), names)

    # >>> async source
    async def _ahold_saves(self, calls: Sequence[SaveOp], before: Held | None) -> Held | None:
        """Serialize ``calls`` (after ``before``) into their statements now, to be sent later.

        Needs :meth:`_can_hold`. The statements go out with the next :meth:`_save_many` (its
        ``before``), in its transaction. ``None``: nothing is held (the calls needed a read
        first, and what came before it was sent). Raises as :meth:`_save_many`.
        """
        # >>> async only
        if not isinstance(self, NativeAsync):  # a sync backend: all of it in one worker-thread hop
            return await self._off_loop(self._hold_saves, calls, before)
        # <<< async only
        everything, state = _after(before, calls), _Progress()
        try:
            return await self._adrive(
                batched(self.sql, self._call_ops, everything, (), state, before, send=False)
            )
        except BaseException as exc:
            await self._adrive(self._replay(everything, state, exc))
            return None

    async def _asave_many(
        self, calls: Sequence[SaveOp], release: tuple[str, str] | None, before: Held | None = None
    ) -> bool:
        """Make ``calls`` in order, in one transaction where the backend can (PostgreSQL: one round trip).

        With ``release`` (``(thread_id, checkpoint_ns)`` whose lease this process holds), the lease
        is given back in that same durable commit (a backend without one-statement batches: in a
        commit of its own right after, in the same call), and the ``lease()`` block then releases
        nothing. ``before``: calls held back by :meth:`_hold_saves`, sent first.
        Answers ``False``, having done nothing, when a subclass overrides ``put`` or ``put_writes``
        (async: ``aput`` or ``aput_writes``): the caller then makes the calls through them.

        Raises:
            CheckpointConflictError, SerializationError: as :meth:`put` and :meth:`put_writes` would,
                for the first call that fails; the calls before it are stored.
        """
        if not own_methods(type(self), _APUTS):
            return False
        # >>> async only
        if not isinstance(self, NativeAsync):  # a sync backend: all of it in one worker-thread hop
            return await self._off_loop(self._save_many, calls, release, before)
        # <<< async only
        everything = _after(before, calls)
        tail, holder = self._leases.release_steps(release) if release is not None else ((), None)
        if getattr(self.sql, "STRICT", None) is None or not (len(everything) > 1 or tail or before):
            for call in everything:
                await self._adrive(self._call_ops(call))
            if release is not None and holder is not None:  # no one-statement batch here: right after
                try:
                    await self._leases.arelease(release, holder, confirm=True)
                finally:
                    self._leases.released(holder)  # tried once: the lease block does not try again
            return True
        state = _Progress()
        try:
            await self._adrive(batched(self.sql, self._call_ops, everything, tail, state, before))
        except BaseException as exc:
            await self._adrive(self._replay(everything, state, exc))
            return True
        if holder is not None:
            self._leases.released(holder)
        return True

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def _hold_saves(self, calls: Sequence[SaveOp], before: Held | None) -> Held | None:
        """Serialize ``calls`` (after ``before``) into their statements now, to be sent later.

        Needs :meth:`_can_hold`. The statements go out with the next :meth:`_save_many` (its
        ``before``), in its transaction. ``None``: nothing is held (the calls needed a read
        first, and what came before it was sent). Raises as :meth:`_save_many`.
        """
        everything, state = _after(before, calls), _Progress()
        try:
            return self._drive(batched(self.sql, self._call_ops, everything, (), state, before, send=False))
        except BaseException as exc:
            self._drive(self._replay(everything, state, exc))
            return None

    def _save_many(
        self, calls: Sequence[SaveOp], release: tuple[str, str] | None, before: Held | None = None
    ) -> bool:
        """Make ``calls`` in order, in one transaction where the backend can (PostgreSQL: one round trip).

        With ``release`` (``(thread_id, checkpoint_ns)`` whose lease this process holds), the lease
        is given back in that same durable commit (a backend without one-statement batches: in a
        commit of its own right after, in the same call), and the ``lease()`` block then releases
        nothing. ``before``: calls held back by :meth:`_hold_saves`, sent first.
        Answers ``False``, having done nothing, when a subclass overrides ``put`` or ``put_writes``
        (async: ``aput`` or ``aput_writes``): the caller then makes the calls through them.

        Raises:
            CheckpointConflictError, SerializationError: as :meth:`put` and :meth:`put_writes` would,
                for the first call that fails; the calls before it are stored.
        """
        if not own_methods(type(self), _PUTS):
            return False
        everything = _after(before, calls)
        tail, holder = self._leases.release_steps(release) if release is not None else ((), None)
        if getattr(self.sql, "STRICT", None) is None or not (len(everything) > 1 or tail or before):
            for call in everything:
                self._drive(self._call_ops(call))
            if release is not None and holder is not None:  # no one-statement batch here: right after
                try:
                    self._leases.release(release, holder, confirm=True)
                finally:
                    self._leases.released(holder)  # tried once: the lease block does not try again
            return True
        state = _Progress()
        try:
            self._drive(batched(self.sql, self._call_ops, everything, tail, state, before))
        except BaseException as exc:
            self._drive(self._replay(everything, state, exc))
            return True
        if holder is not None:
            self._leases.released(holder)
        return True

    # <<< generated sync

    def _replay(self, calls: Sequence[SaveOp], state: _Progress, exc: BaseException) -> Ops[None]:
        """After a batch of ``calls`` failed with ``exc``: forget what was assumed, then make the
        calls not committed one by one (nothing of the failed transaction was stored), which
        raises the precise error; ``exc`` itself when they may not be made again."""
        self._forget(calls)
        if not state.replayable(exc):
            raise exc
        for call in calls[state.done :]:
            yield from self._call_ops(call)

    def _call_ops(self, call: SaveOp) -> Ops[object]:
        """The operation of one saver call."""
        if isinstance(call, PutCheckpoint):
            checkpoint = cast("Checkpoint", call.checkpoint)
            metadata = cast("CheckpointMetadata", call.metadata)
            return self._put(call.config, checkpoint, metadata, call.versions, call.expected_head)
        return self._put_writes(call.config, call.writes, call.task_id, "")

    def _forget(self, calls: Sequence[SaveOp]) -> None:  # (the calls of a batch, held ones first)
        """Drop what this process assumed about the threads of ``calls`` (a batch that failed)."""
        for thread_id in {thread_of(call.config)[0][0] for call in calls}:
            self._cache.drop_thread(thread_id)
            self._locs.drop_thread(thread_id)
