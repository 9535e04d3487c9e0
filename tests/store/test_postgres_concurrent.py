"""PostgreSQL stores under concurrency: shared transactions for concurrent async calls, a sweep that skips busy rows."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import psycopg
from _pg import private_schema

from plait.store.postgres import AsyncPostgresStore, PostgresStore


def test_concurrent_async_calls_share_transactions_in_call_order_and_fail_alone() -> None:
    async def main(dsn: str) -> None:
        async with AsyncPostgresStore.from_conn_string(
            dsn, pool_config={"min_size": 1, "max_size": 2}
        ) as store:
            await store.setup()
            calls = []
            for i in range(300):
                calls += [store.aput(("c",), f"k{i}", {"v": i}), store.aget(("c",), f"k{i}")]
                calls += [store.adelete(("c",), f"k{i}"), store.aget(("c",), f"k{i}")]
            calls.insert(5, store.aput(("c",), "bad", {"v": "nul\x00"}))  # jsonb refuses \u0000
            results = await asyncio.gather(*calls, return_exceptions=True)
            failed = [r for r in results if isinstance(r, Exception)]
            assert len(failed) == 1 and "\\u0000" in str(failed[0])
            results.pop(5)
            assert [r.value["v"] for r in results[1::4]] == list(range(300))  # type: ignore[union-attr]
            assert results[3::4] == [None] * 300
            await asyncio.gather(*(store.aput(("x",), f"k{i}", {"v": i}) for i in range(300)))
            async with store._cursor() as cur:
                await cur.execute("SELECT count(DISTINCT xmin::text) AS n FROM plait_store")
                row = await cur.fetchone()
            assert row is not None and row["n"] < 30  # 300 puts, a few transactions

    with private_schema() as dsn:
        asyncio.run(main(dsn))


def test_a_sweep_skips_expired_rows_another_transaction_holds() -> None:
    with private_schema() as dsn, PostgresStore.from_conn_string(dsn) as store:
        store.put(("t",), "held", {"v": 1}, ttl=0.001)
        store.put(("t",), "free", {"v": 2}, ttl=0.001)
        time.sleep(0.2)
        with psycopg.connect(dsn) as other:
            other.execute("SELECT 1 FROM plait_store WHERE key = 'held' FOR UPDATE")
            pool = ThreadPoolExecutor(1)
            try:  # a sweep that waited for the lock would time out here
                swept = pool.submit(store.sweep_ttl).result(timeout=120)
            finally:
                pool.shutdown(wait=False)
            assert swept == 1  # "free" goes; "held" is left for the next sweep
        assert store.sweep_ttl() == 1
        with store._cursor() as cur:
            cur.execute("SELECT count(*) AS n FROM plait_store")
            assert cur.fetchone() == {"n": 0}


def test_batches_deleting_and_writing_the_same_rows_in_opposite_roles_do_not_deadlock() -> None:
    from plait.store.base import PutOp

    with (
        private_schema() as dsn,
        PostgresStore.from_conn_string(dsn, pool_config={"min_size": 2, "max_size": 2}) as store,
    ):
        store.setup()
        errors: list[BaseException] = []

        def work(gone: str, kept: str) -> None:
            for i in range(150):
                store.put(("d",), gone, {"v": i})
                store.put(("d",), kept, {"v": i})
                try:  # the delete of one row and the upsert of the other run as two statements
                    store.batch([PutOp(("d",), gone, None), PutOp(("d",), kept, {"v": i})])
                except psycopg.Error as exc:
                    errors.append(exc)

        with ThreadPoolExecutor(2) as pool:
            list(pool.map(work, ["k2", "k1"], ["k1", "k2"]))
        assert errors == []  # without locking both rows in key order first: DeadlockDetected


def test_when_no_connection_comes_every_concurrent_call_fails_at_once_without_reruns() -> None:
    from psycopg_pool import AsyncConnectionPool, PoolTimeout

    async def main(dsn: str) -> None:
        async with AsyncConnectionPool(
            dsn, min_size=1, max_size=1, timeout=0.5, kwargs={"autocommit": True}
        ) as pool:
            store = AsyncPostgresStore(pool)
            await store.setup()
            pool.pop_stats()
            async with pool.connection():  # the only connection is busy
                results = await asyncio.gather(
                    *(store.aput(("h",), f"k{i}", {"v": i}) for i in range(10)), return_exceptions=True
                )
            assert all(isinstance(r, PoolTimeout) for r in results)
            stats = pool.get_stats()  # the test's request, and the calls' one that timed out
            assert (stats["requests_num"], stats["requests_errors"]) == (2, 1), stats  # no re-run alone

    with private_schema() as dsn:
        asyncio.run(main(dsn))
