"""Concurrent async calls of one SQL store share a transaction.

An async store hands each prepared batch to :meth:`Groups.run`. A task on the
caller's event loop takes every batch queued meanwhile (up to 256) and runs them,
in the order they were made, as one batch in one transaction: consecutive puts of
different callers are written by one statement, and a read equal to an earlier
read of the group, with no write between them, runs once (each caller gets its
own copy of the result). If that transaction fails once it has begun, every batch
runs again on its own, so only a faulty one fails; if it never began (no
connection), every caller gets the error at once. A batch with nobody else to
share with runs by itself (a one-operation batch then needs no transaction).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import threading
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from typing import Any, cast

from plait.store._embed import Embedded
from plait.store._engine import Engine, Prepared
from plait.store._statement import Step
from plait.store.base import Item, Op, PutOp, Result

__all__ = ["Groups", "ThreadGroups"]

_GROUP = 256  # most batches of concurrent calls run in one transaction

Run = Callable[[Callable[[float], Step], bool], Awaitable[object]]
"""How a store runs a step: ``run(make_step, alone)`` (see ``SqlStore._transact``)."""


@dataclass
class _Call:
    prepared: Prepared
    embedded: Embedded | None
    future: asyncio.Future[list[Result]] | concurrent.futures.Future[list[Result]]


@dataclass
class _Queue:
    calls: list[_Call]
    task: asyncio.Task[None] | None = None


@dataclass
class _Merged:
    """The batches of a group as one: operations, encoded values, vectors, and where each caller's results are."""

    prepared: Prepared = field(default_factory=lambda: Prepared([]))
    docs: dict[int, Any] = field(default_factory=dict[int, Any])
    queries: dict[str, Any] = field(default_factory=dict[str, Any])
    slots: list[tuple[int, int, bool]] = field(default_factory=list[tuple[int, int, bool]])
    """Per call: its results' span in the merged results, and whether it shares them with an earlier call."""


class Groups:
    """The queues of one store's concurrent async calls, one per event loop."""

    def __init__(self, engine: Engine, run: Run) -> None:
        """Bind the store's engine and how it runs a step.

        Args:
            engine: The store's engine.
            run: Runs a step in a transaction (``alone``: none needed), on the calling loop.
        """
        self.engine = engine
        self.run_step = run
        self._queues: dict[asyncio.AbstractEventLoop, _Queue] = {}

    async def run(self, prepared: Prepared, embedded: Embedded | None) -> list[Result]:
        """Run a batch with the other batches queued on this loop meanwhile; returns its results."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[Result]] = loop.create_future()
        call = _Call(prepared, embedded, future)
        queue = self._queues.get(loop)
        if queue is None:
            queue = self._queues[loop] = _Queue([call])
            queue.task = loop.create_task(self._drain(loop, queue))
        else:
            queue.calls.append(call)
        return await future

    async def _drain(self, loop: asyncio.AbstractEventLoop, queue: _Queue) -> None:
        group: list[_Call] = []
        try:
            while queue.calls:
                group, queue.calls = queue.calls[:_GROUP], queue.calls[_GROUP:]
                group = [call for call in group if not call.future.done()]  # cancelled callers
                await _arun_group(self.engine, group, self.run_step)
        finally:
            del self._queues[loop]
            for call in group + queue.calls:  # cancelled (the loop is closing): nobody runs these now
                call.future.cancel()


class ThreadGroups:
    """Concurrent sync calls of one store from several threads share transactions.

    The first caller runs its batch; the calls made meanwhile queue up, and the
    next caller to get the turn runs them all as one group (see the module
    docstring) while the others wait for their results. For stores whose calls
    are serialised anyway (one connection).
    """

    def __init__(self, engine: Engine, run: Callable[[Callable[[float], Step], bool], Any]) -> None:
        """Bind the store's engine and how it runs a step (``run(make_step, alone)``)."""
        self.engine = engine
        self.run_step = run
        self._calls: list[_Call] = []
        self._queue = threading.Lock()  # guards _calls
        self._turn = threading.Lock()  # held by the thread running a group

    def run(self, prepared: Prepared, embedded: Embedded | None) -> list[Result]:
        """Run a batch, with the batches other threads queue meanwhile; returns its results."""
        if self._turn.acquire(blocking=False):  # nobody runs a group: run alone, unless calls wait
            try:
                with self._queue:
                    idle = not self._calls
                if idle:
                    return self.run_step(lambda now: self.engine.run(prepared, embedded, now), prepared.alone)  # type: ignore[no-any-return]
            finally:
                self._turn.release()
        future: concurrent.futures.Future[list[Result]] = concurrent.futures.Future()
        call = _Call(prepared, embedded, future)
        with self._queue:
            self._calls.append(call)
        with self._turn:
            if not future.done():  # nobody took it: run everything queued, this call among them
                with self._queue:
                    group, self._calls = self._calls[:_GROUP], self._calls[_GROUP:]
                try:
                    _run_group(self.engine, group, self.run_step)
                finally:
                    for other in group:  # interrupted: the other callers must not wait for ever
                        _settle(other.future, error=RuntimeError("the thread running this batch stopped"))
        return future.result()


_Outcome = tuple[Any, "Exception | None"]
"""What running a step gave: its result, or the exception it raised."""
Plan = Generator[tuple[Callable[[float], Step], bool], _Outcome, None]
"""How a group is settled: it yields the steps to run (with ``alone``) and is sent their outcomes."""


def _settle_group(engine: Engine, group: list[_Call]) -> Plan:
    """Run a group: one batch by itself, several as one (each again alone if that fails once begun)."""
    if len(group) <= 1:
        for call in group:
            yield from _settle_alone(engine, call)
        return
    merged = _merge(group)
    embedded = Embedded(merged.docs, merged.queries) if merged.docs or merged.queries else None
    started: list[bool] = []
    alone = all(call.prepared.alone for call in group) and engine.alone(merged.prepared.ops, shared=True)
    results, error = yield (
        lambda now: _noting_start(engine.run(merged.prepared, embedded, now), started),
        alone,
    )
    if error is not None:
        for call in group:
            if started:  # each batch again on its own, so that only a faulty one fails
                yield from _settle_alone(engine, call)
            else:  # it never began (no connection, failed setup): alone each would fail so
                _settle(call.future, error=error)
        return
    for call, (start, end, shared) in zip(group, merged.slots, strict=True):
        part: list[Result] = results[start:end]
        _settle(call.future, [_fresh(r) for r in part] if shared else part)


# >>> async source
async def _arun_group(
    engine: Engine, group: list[_Call], run_step: Callable[[Callable[[float], Step], bool], Awaitable[Any]]
) -> None:
    """Settle a group's calls, running the steps its plan yields with ``run_step``."""
    plan = _settle_group(engine, group)
    try:
        request = next(plan)
        while True:
            try:
                outcome: _Outcome = (await run_step(*request), None)
            except Exception as exc:  # noqa: BLE001 - handed to the plan
                outcome = (None, exc)
            request = plan.send(outcome)
    except StopIteration:
        pass
    except Exception as exc:  # noqa: BLE001 - a fault here: the callers must not wait for ever
        for call in group:
            _settle(call.future, error=exc)


# <<< async source


# >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
def _run_group(
    engine: Engine, group: list[_Call], run_step: Callable[[Callable[[float], Step], bool], Any]
) -> None:
    """Settle a group's calls, running the steps its plan yields with ``run_step``."""
    plan = _settle_group(engine, group)
    try:
        request = next(plan)
        while True:
            try:
                outcome: _Outcome = (run_step(*request), None)
            except Exception as exc:  # noqa: BLE001 - handed to the plan
                outcome = (None, exc)
            request = plan.send(outcome)
    except StopIteration:
        pass
    except Exception as exc:  # noqa: BLE001 - a fault here: the callers must not wait for ever
        for call in group:
            _settle(call.future, error=exc)


# <<< generated sync


def _settle_alone(engine: Engine, call: _Call) -> Plan:
    prepared, embedded = call.prepared, call.embedded
    result, error = yield (lambda now: engine.run(prepared, embedded, now), prepared.alone)
    _settle(call.future, result, error)


def _merge(group: list[_Call]) -> _Merged:
    merged = _Merged()
    ops = merged.prepared.ops
    reads = _Reads()  # since the last write
    for call in group:
        batch = call.prepared.ops
        read = batch[0] if len(batch) == 1 and not isinstance(batch[0], PutOp) else None
        if read is not None:
            at = reads.find(read)
            if at is not None:
                merged.slots.append((at, at + 1, True))
                continue
        else:  # a write, or several operations: later reads must see its effects
            reads = _Reads()
        base = len(ops)
        ops.extend(batch)
        merged.prepared.values.update({base + i: v for i, v in call.prepared.values.items()})
        if call.embedded is not None:
            merged.docs.update({base + i: d for i, d in call.embedded.docs.items()})
            merged.queries.update(call.embedded.queries)
        if read is not None:
            reads.add(read, base)
        merged.slots.append((base, base + len(batch), False))
    return merged


class _Reads:
    """Read operations and where they are in a merged batch (a search with a filter is not hashable)."""

    def __init__(self) -> None:
        self.hashed: dict[Op, int] = {}
        self.others: list[tuple[Op, int]] = []

    def find(self, op: Op) -> int | None:
        try:
            return self.hashed.get(op)
        except TypeError:
            return next((i for other, i in self.others if other == op), None)

    def add(self, op: Op, at: int) -> None:
        try:
            self.hashed[op] = at
        except TypeError:
            self.others.append((op, at))


def _noting_start(step: Step, started: list[bool]) -> Step:
    """``step``, noting in ``started`` that it began (its transaction had a connection)."""
    started.append(True)
    return (yield from step)


def _fresh(result: object) -> Any:
    """A caller's own copy of a result another caller also gets (namespaces are tuples: shared)."""
    if isinstance(result, list):
        return [_own(r) if isinstance(r, Item) else r for r in cast("list[object]", result)]
    return _own(result) if isinstance(result, Item) else result


def _own(item: Item) -> Item:
    own = copy.copy(item)
    own.value = copy.deepcopy(item.value)
    return own


def _settle(future: Any, result: Any = None, error: BaseException | None = None) -> None:
    """Hand a caller its result or error, unless it stopped waiting (cancelled)."""
    if not future.done():
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
