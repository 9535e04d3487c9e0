"""``AsyncBatchedBaseStore``: a base for stores whose concurrent async calls share one ``abatch``.

A subclass implements ``abatch`` (and may implement ``batch``). Each convenience
call (``aget``, ``asearch``, ``aput``, ``adelete``, ``alist_namespaces`` and their
sync forms) checks its arguments, queues one operation (:meth:`BaseStore._arun_op`)
and waits. A background task on the event loop the store was created in takes
everything queued in the same tick, merges equal reads and repeated puts of one
item (the last put wins), runs a single ``abatch`` and hands each caller its
result (or the batch's exception). The sync methods, called from another thread,
run on that loop; called from the loop's own thread they raise
``asyncio.InvalidStateError`` instead of deadlocking.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Coroutine, Iterable
from typing import TypeVar

from plait.store.base import (
    BaseStore,
    GetOp,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchOp,
)

__all__ = ["AsyncBatchedBaseStore"]

T = TypeVar("T")
Queued = tuple["asyncio.Future[Result]", Op]


class AsyncBatchedBaseStore(BaseStore):
    """Batch the concurrent async calls of one event loop into single ``abatch`` calls.

    Create it inside a running event loop (the loop its batches run on).
    """

    def __init__(self) -> None:
        """Bind the store to the running loop and start its batching task."""
        super().__init__()
        self._loop = asyncio.get_running_loop()
        self._aqueue: asyncio.Queue[Queued] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._ensure_task()

    def __del__(self) -> None:
        task = getattr(self, "_task", None)
        if task is not None and not self._loop.is_closed():
            task.cancel()

    def _ensure_task(self) -> None:
        """(Re)start the batching task if it is not running (e.g. it was cancelled)."""
        if self._task is None or self._task.done():
            self._task = self._loop.create_task(_drain(self._aqueue, weakref.ref(self)))

    async def _enqueue(self, op: Op) -> Result:
        self._ensure_task()
        future: asyncio.Future[Result] = self._loop.create_future()
        self._aqueue.put_nowait((future, op))
        return await future

    async def _arun_op(self, op: Op) -> Result:
        """Queue the operation of ``aget``, ``aput``, ... with the other calls of this tick."""
        return await self._enqueue(op)

    def _run_op(self, op: Op) -> Result:
        """Queue the operation of ``get``, ``put``, ... on the store's loop, from another thread."""
        return self._on_loop(lambda: self._enqueue(op), _method(op))

    def _on_loop(self, make: Callable[[], Coroutine[object, object, T]], name: str) -> T:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            raise asyncio.InvalidStateError(
                f"{type(self).__name__}.{name}() was called on the event loop the store runs on, where it would "
                f"block that loop; use `await store.a{name}(...)` there"
            )
        return asyncio.run_coroutine_threadsafe(make(), self._loop).result()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``abatch`` on the store's loop, from another thread."""
        ops = list(ops)
        return self._on_loop(lambda: self.abatch(ops), "batch")


def _method(op: Op) -> str:
    """The convenience method that makes ``op`` (named in the error of a call on the store's loop)."""
    if isinstance(op, PutOp):
        return "put" if op.value is not None else "delete"
    if isinstance(op, GetOp):
        return "get"
    return "search" if isinstance(op, SearchOp) else "list_namespaces"


def _dedupe_ops(ops: list[Op]) -> tuple[list[int] | None, list[Op]]:
    """Merge the operations of one tick: equal reads run once; puts of one item collapse to the last.

    Returns:
        For each input operation the index of the merged operation whose result it gets
        (``None`` when nothing could merge), and the merged operations.
    """
    if len(ops) < 2:
        return None, list(ops)
    merged: list[Op] = []
    slot_of: list[int] = []
    put_slots: dict[tuple[tuple[str, ...], str], int] = {}
    read_slots: dict[Op, int] = {}
    for op in ops:
        if isinstance(op, PutOp):
            slot = put_slots.setdefault((op.namespace, op.key), len(merged))
            if slot == len(merged):
                merged.append(op)
            else:
                merged[slot] = op
        elif isinstance(op, (GetOp, SearchOp, ListNamespacesOp)):  # pyright: ignore[reportUnnecessaryIsInstance]
            slot = _read_slot(read_slots, merged, op)
            if slot == len(merged):
                merged.append(op)
        else:  # an operation type this module does not know: run it as is
            slot = len(merged)
            merged.append(op)
        slot_of.append(slot)
    return slot_of, merged


def _read_slot(seen: dict[Op, int], merged: list[Op], op: Op) -> int:
    try:
        return seen.setdefault(op, len(merged))
    except TypeError:  # a filter dict makes the op unhashable: compare by equality
        return next((i for i, other in enumerate(merged) if other == op), len(merged))


async def _drain(
    queue: asyncio.Queue[Queued], store_ref: weakref.ReferenceType[AsyncBatchedBaseStore]
) -> None:
    """Run the queued operations, one ``abatch`` per tick, while the store is alive."""
    while True:
        first = await queue.get()
        pending = [first]
        while not queue.empty():
            pending.append(queue.get_nowait())
        pending = [(future, op) for future, op in pending if not future.done()]  # cancelled callers
        if not pending:
            continue
        store = store_ref()
        if store is None:
            return
        try:
            slots, ops = _dedupe_ops([op for _, op in pending])
            results = await store.abatch(ops)
            answers = results if slots is None else [results[slot] for slot in slots]
            if len(answers) != len(pending):
                raise ValueError(
                    f"{type(store).__name__}.abatch returned {len(results)} results for {len(ops)} operations"
                )
        except Exception as exc:  # noqa: BLE001 - handed to every caller of the batch
            for future, _ in pending:
                if not future.done():
                    future.set_exception(exc)
        else:
            for (future, _), answer in zip(pending, answers, strict=True):
                if not future.done():
                    future.set_result(answer)
        finally:
            del store
