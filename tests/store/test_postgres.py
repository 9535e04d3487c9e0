"""PostgreSQL store specifics: your own pools, pipeline mode, the no-pgvector warning, sync calls on the async store."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _pg import private_schema
from psycopg_pool import AsyncConnectionPool, ConnectionPool
from typing_extensions import TypedDict

from plait.graph import END, START, StateGraph
from plait.store._rank import ExactScanWarning
from plait.store.postgres import PostgresStore
from plait.store.postgres.aio import AsyncPostgresStore


class N(TypedDict):
    n: int


def embed(texts: list[str]) -> list[list[float]]:
    return [[float("cat" in t), 1.0] for t in texts]


def test_own_pool_pipeline_and_unsupported_options() -> None:
    with private_schema() as dsn:
        with ConnectionPool(dsn, min_size=1, max_size=2, kwargs={"autocommit": True}) as pool:
            store = PostgresStore(pool)
            store.setup()
            store.put(("p",), "k", {"v": 1})
            assert store.get(("p",), "k").value == {"v": 1}
        with PostgresStore.from_conn_string(dsn, pipeline=True) as piped:
            piped.put(("p",), "j", {"v": 2})
            assert {h.key for h in piped.search(("p",))} == {"k", "j"}
            with pytest.raises(NotImplementedError, match="deserializer"):
                PostgresStore(pool, deserializer=str)
        with pytest.raises(NotImplementedError, match="ann_index_config"):
            with PostgresStore.from_conn_string(
                dsn, index={"dims": 2, "embed": embed, "ann_index_config": {"kind": "ivfflat"}}
            ):
                pass


def test_search_without_pgvector_warns_once_and_still_ranks(recwarn: pytest.WarningsRecorder) -> None:
    from plait.store import _rank

    _rank._WARNED.discard("pgvector")  # the warning is once per process; this test wants to see it
    with (
        private_schema() as dsn,
        PostgresStore.from_conn_string(dsn, index={"dims": 2, "embed": embed}) as store,
    ):
        store.setup()
        assert store.dialect.vector is False  # the shared server has no pgvector
        store.put(("p",), "cat", {"text": "cat"})
        store.put(("p",), "dog", {"text": "dog"})
        assert [h.key for h in store.search(("p",), query="cat")] == ["cat", "dog"]
        store.search(("p",), query="dog")
    found = [w for w in recwarn.list if issubclass(w.category, ExactScanWarning)]
    assert len(found) == 1 and "pgvector" in str(found[0].message)


def test_async_store_on_your_pool_serves_sync_nodes_and_rejects_sync_calls_on_its_loop() -> None:
    def node(state: dict[str, Any], *, store: Any) -> dict[str, Any]:
        store.put(("g",), "k", {"n": state["n"]})  # a sync node: runs in a thread under ainvoke
        return {"n": state["n"] + 1}

    app = StateGraph(N).add_node("node", node).add_edge(START, "node").add_edge("node", END)

    async def main(dsn: str) -> None:
        async with AsyncConnectionPool(dsn, min_size=1, max_size=2, kwargs={"autocommit": True}) as pool:
            store = AsyncPostgresStore(pool)
            await store.setup()
            out = await app.compile(store=store).ainvoke({"n": 1})
            assert out == {"n": 2}
            assert (await store.aget(("g",), "k")).value == {"n": 1}
            with pytest.raises(asyncio.InvalidStateError, match="async methods"):
                store.get(("g",), "k")

    with private_schema() as dsn:
        asyncio.run(main(dsn))


def test_setup_beside_an_open_write_transaction_waits_for_no_lock() -> None:
    """A store set up while another transaction writes its table (a second server starting beside busy
    workers) waits for no lock: its indexes exist, so it does not ask for the lock that would wait."""
    import psycopg

    with private_schema() as dsn:
        with PostgresStore.from_conn_string(dsn, index={"dims": 2, "embed": embed}) as first:
            first.setup()
            first.put(("w",), "k", {"v": 1})
        with psycopg.connect(dsn) as writer:  # an open transaction holding a row of each table
            writer.execute("UPDATE plait_store SET key = key")
            writer.execute("UPDATE plait_store_vectors SET key = key")
            # lock_timeout counts only time spent waiting for a lock: any wait fails the setup
            waiting = f"{dsn}%20-clock_timeout%3D5s"
            with PostgresStore.from_conn_string(waiting, index={"dims": 2, "embed": embed}) as second:
                second.setup()
                assert second.get(("w",), "k") is not None  # (a read waits for no writer)
            writer.rollback()
