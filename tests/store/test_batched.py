"""``AsyncBatchedBaseStore``: concurrent async calls of one tick share one ``abatch``."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable
from typing import Any

import pytest

from plait.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchOp,
)
from plait.store.base.batch import AsyncBatchedBaseStore
from plait.store.memory import InMemoryStore


class Recording(AsyncBatchedBaseStore):
    """Runs batches on an in-memory store and records each batch it was handed."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = InMemoryStore()
        self.batches: list[list[Op]] = []

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        self.batches.append(ops)
        return self.inner.batch(ops)


async def test_calls_of_one_tick_run_as_one_batch_with_equal_reads_and_repeated_puts_merged() -> None:
    store = Recording()
    await asyncio.gather(store.aput(("a",), "k", {"v": 1}), store.aput(("a",), "k", {"v": 2}))
    assert store.batches == [[PutOp(("a",), "k", {"v": 2})]]  # the last put of an item wins
    store.batches.clear()
    got = await asyncio.gather(
        store.aget(("a",), "k"),
        store.aget(("a",), "k"),
        store.asearch(("a",), filter={"v": 2}),
        store.asearch(("a",), filter={"v": 2}),
        store.alist_namespaces(prefix=("a",)),
    )
    assert len(store.batches) == 1
    assert store.batches[0] == [
        GetOp(("a",), "k"),
        SearchOp(("a",), filter={"v": 2}),
        ListNamespacesOp((MatchCondition("prefix", ("a",)),)),
    ]
    assert got[0] == got[1] and got[0] is not None and got[0].value == {"v": 2}
    assert [h.key for h in got[2]] == [h.key for h in got[3]] == ["k"]
    assert got[4] == [("a",)]


async def test_a_bad_namespace_is_refused_before_it_is_queued() -> None:
    store = Recording()
    for call in (
        lambda: store.aget(("a.b",), "k"),
        lambda: store.asearch(("",)),
        lambda: store.aput(("langgraph",), "k", {"v": 1}),
        lambda: store.adelete((1,), "k"),  # type: ignore[arg-type]
        lambda: store.alist_namespaces(suffix=("x.y",)),
    ):
        with pytest.raises(InvalidNamespaceError):
            await call()
    assert store.batches == []


async def test_a_failing_batch_fails_each_caller_and_the_store_keeps_working() -> None:
    class Failing(Recording):
        async def abatch(self, ops: Iterable[Op]) -> list[Result]:
            if any(isinstance(op, PutOp) and op.key == "boom" for op in ops):
                raise RuntimeError("boom")
            return await super().abatch(ops)

    store = Failing()
    results = await asyncio.gather(
        store.aput(("a",), "boom", {"v": 1}), store.aget(("a",), "x"), return_exceptions=True
    )
    assert [type(r) for r in results] == [RuntimeError, RuntimeError]
    await store.aput(("a",), "k", {"v": 1})
    assert (await store.aget(("a",), "k")).value == {"v": 1}  # type: ignore[union-attr]


async def test_a_cancelled_worker_or_caller_does_not_break_the_store() -> None:
    store = Recording()
    await store.aput(("a",), "k", {"v": 1})
    assert store._task is not None
    store._task.cancel()
    await asyncio.sleep(0)
    waiter = asyncio.ensure_future(store.aget(("a",), "k"))
    await asyncio.sleep(0)
    waiter.cancel()
    assert (await store.aget(("a",), "k")).value == {"v": 1}  # type: ignore[union-attr]


async def test_sync_methods_run_on_the_loop_from_other_threads_and_refuse_on_it() -> None:
    store = Recording()
    with pytest.raises(asyncio.InvalidStateError, match="aget"):
        store.get(("a",), "k")
    out: dict[str, Any] = {}

    def worker() -> None:
        store.put(("a",), "k", {"v": 3})
        out["get"] = store.get(("a",), "k")
        out["search"] = store.search(("a",))
        out["namespaces"] = store.list_namespaces()
        store.delete(("a",), "k")
        out["batch"] = store.batch([GetOp(("a",), "k")])

    thread = threading.Thread(target=worker)
    thread.start()
    while thread.is_alive():
        await asyncio.sleep(0.01)
    assert out["get"].value == {"v": 3}
    assert [h.key for h in out["search"]] == ["k"]
    assert out["namespaces"] == [("a",)]
    assert out["batch"] == [None]


async def test_a_batch_with_too_few_results_fails_its_callers_instead_of_leaving_them_waiting() -> None:
    class Short(Recording):
        async def abatch(self, ops: Iterable[Op]) -> list[Result]:
            return (await super().abatch(ops))[:-1]

    store = Short()
    with pytest.raises(ValueError, match="returned 0 results for 1 operations"):
        await asyncio.wait_for(store.aget(("a",), "k"), 60)
