"""Concurrent calls of the async SQL stores share transactions; equal reads run once, each caller gets its own copy."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from _pg import private_schema

from plait.store.postgres import AsyncPostgresStore
from plait.store.sqlite.aio import AsyncSqliteStore


@asynccontextmanager
async def _store(kind: str, tmp_path: Path, dsn: str) -> AsyncIterator[Any]:
    if kind == "sqlite":
        async with AsyncSqliteStore.from_conn_string(tmp_path / "s.db") as store:
            await store.setup()
            yield store
    else:
        async with AsyncPostgresStore.from_conn_string(dsn) as pg:
            await pg.setup()
            yield pg


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_equal_concurrent_reads_give_each_caller_its_own_result(kind: str, tmp_path: Path) -> None:
    async def main(dsn: str) -> None:
        async with _store(kind, tmp_path, dsn) as store:
            await store.aput(("a",), "k", {"v": 1, "nested": {"n": [1]}})
            await store.aput(("a", "b"), "j", {"v": 2})
            gets = [store.aget(("a",), "k") for _ in range(5)]
            searches = [store.asearch(("a",), filter={"v": 1}) for _ in range(5)]
            lists = [store.alist_namespaces(prefix=("a",)) for _ in range(5)]
            found = await asyncio.gather(*gets, *searches, *lists)
            items, hits, spaces = found[:5], found[5:10], found[10:]
            assert all(item.value == {"v": 1, "nested": {"n": [1]}} for item in items)
            assert all([h.key for h in hit] == ["k"] for hit in hits)
            assert all(space == [("a",), ("a", "b")] for space in spaces)
            items[0].value["nested"]["n"].append(2)
            hits[0][0].value["v"] = 3
            spaces[0].append(("x",))
            assert items[1].value == {"v": 1, "nested": {"n": [1]}}
            assert hits[1][0].value["v"] == 1
            assert spaces[1] == [("a",), ("a", "b")]

    with private_schema() as dsn:
        asyncio.run(main(dsn))


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_read_after_a_concurrent_write_sees_it(kind: str, tmp_path: Path) -> None:
    async def main(dsn: str) -> None:
        async with _store(kind, tmp_path, dsn) as store:
            await store.aput(("a",), "k", {"v": 1})
            before, _, after, _, gone = await asyncio.gather(
                store.aget(("a",), "k"),
                store.aput(("a",), "k", {"v": 2}),
                store.aget(("a",), "k"),
                store.adelete(("a",), "k"),
                store.aget(("a",), "k"),
            )
            assert (before.value, after.value, gone) == ({"v": 1}, {"v": 2}, None)

    with private_schema() as dsn:
        asyncio.run(main(dsn))


def test_sync_calls_from_threads_share_the_async_postgres_stores_transactions() -> None:
    threads_n = 8

    async def main(dsn: str) -> None:
        async with AsyncPostgresStore.from_conn_string(dsn, pool_config={"max_size": 1}) as store:
            await store.setup()
            pool = store.conn
            loop = asyncio.get_running_loop()
            groups = store._groups
            assert groups is not None

            async def queued(
                count: int,
            ) -> None:  # until exactly ``count`` calls wait behind the one in flight
                while (queue := groups._queues.get(loop)) is None or len(queue.calls) != count:
                    await asyncio.sleep(0.01)

            workers = [
                threading.Thread(target=store.put, args=(("t",), f"k{i}", {"v": i})) for i in range(threads_n)
            ]
            async with pool.connection():  # the only connection is busy: the calls queue up
                workers[0].start()
                await asyncio.wait_for(queued(0), 60)
                for worker in workers[1:]:
                    worker.start()
                await asyncio.wait_for(queued(threads_n - 1), 60)
            await asyncio.to_thread(lambda: [worker.join(60) for worker in workers])
            async with store._cursor() as cur:
                await cur.execute("SELECT count(*) AS n, count(DISTINCT xmin::text) AS tx FROM plait_store")
                row = await cur.fetchone()
            assert row == {"n": threads_n, "tx": 2}  # the first call alone, then all the others at once

    with private_schema() as dsn:
        asyncio.run(main(dsn))


def test_concurrent_puts_share_one_statement_and_a_bad_one_fails_alone() -> None:
    from plait.store.base import PutOp

    async def main(dsn: str) -> None:
        async with _store("postgres", Path(), dsn) as store:
            puts = [store.aput(("p",), f"k{i}", {"v": i}) for i in range(10)]
            puts.insert(4, store.aput(("p",), "bad", {"v": "nul\x00"}))  # jsonb refuses \u0000
            results = await asyncio.gather(*puts, return_exceptions=True)
            assert [i for i, r in enumerate(results) if isinstance(r, Exception)] == [4]
            assert len(await store.asearch(("p",), limit=100)) == 10
            with pytest.raises(Exception, match="u0000"):  # one batch of puts: all or nothing
                await store.abatch([PutOp(("q",), "ok", {"v": 1}), PutOp(("q",), "bad", {"v": "\x00"})])
            assert await store.aget(("q",), "ok") is None

    with private_schema() as dsn:
        asyncio.run(main(dsn))


@pytest.mark.parametrize("bad", [False, True])
def test_sync_calls_from_threads_on_one_connection_share_a_run_and_a_bad_one_fails_alone(bad: bool) -> None:
    from plait.store.postgres import PostgresStore

    threads_n = 8
    with private_schema() as dsn, PostgresStore.from_conn_string(dsn) as store:
        store.setup()
        errors: dict[str, BaseException] = {}

        def put(key: str, value: dict[str, Any]) -> None:
            try:
                store.put(("t",), key, value)
            except Exception as exc:  # noqa: BLE001 - kept for the assertion
                errors[key] = exc

        values: list[dict[str, Any]] = [{"v": i} for i in range(threads_n)]
        if bad:
            values[3] = {"v": "nul\x00"}  # jsonb refuses \u0000
        workers = [threading.Thread(target=put, args=(f"k{i}", v)) for i, v in enumerate(values)]
        with store.lock:  # the connection is busy: the first call waits for it, the others queue up
            workers[0].start()
            while not store._threads._turn.locked():
                time.sleep(0.01)
            for worker in workers[1:]:
                worker.start()
            while len(store._threads._calls) < threads_n - 1:
                time.sleep(0.01)  # until every other thread's call is queued
        for worker in workers:
            worker.join(60)
        assert list(errors) == (["k3"] if bad else [])
        with store._cursor() as cur:
            cur.execute("SELECT count(*) AS n, count(DISTINCT xmin::text) AS tx FROM plait_store")
            row = cur.fetchone()
        # the first call alone, then the others in one statement (or, one being bad, each alone again)
        assert row == ({"n": threads_n - 1, "tx": threads_n - 1} if bad else {"n": threads_n, "tx": 2})
