"""PostgreSQL stores a run step's saves in one transaction, and the run's last save releases its lease.

A batch whose put may not be written (the thread moved) stores nothing of itself; the saver then
makes the calls one by one, so the caller sees the same outcome, and error, as with single calls.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from _pg import pg_saver
from _save_calls import list_checkpoint, list_graph, put_call

from plait.checkpoint._calls import PutWrites
from plait.checkpoint.postgres import PostgresSaver
from plait.checkpoint.postgres.aio import AsyncPostgresSaver
from plait.errors import CheckpointConflictError


@pytest.fixture
def saver() -> Iterator[PostgresSaver]:
    yield from pg_saver("plait_batch")


def _rows(saver: PostgresSaver, table: str) -> int:
    with saver.conn.connection() as conn:  # type: ignore[union-attr]
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])  # type: ignore[index]


def test_a_stale_batch_stores_what_single_calls_would_and_raises_the_conflict(saver: PostgresSaver) -> None:
    saver._save_many([put_call(None, "1", ["a"], None)], None)
    # a batch built on "0" (not the head): its first put is refused, so nothing of the batch is kept
    writes = PutWrites(
        {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "2"}},
        [("x", ["w"])],
        "task",
    )
    with pytest.raises(CheckpointConflictError):
        saver._save_many(
            [put_call("1", "2", ["a", "b"], "0"), writes, put_call("2", "3", ["a", "b", "c"], "2")], None
        )
    assert _rows(saver, "plait_checkpoints") == 1
    assert _rows(saver, "plait_checkpoint_writes") == 0
    # built on the head: all three calls land, in one transaction
    saver._save_many(
        [put_call("1", "2", ["a", "b"], "1"), writes, put_call("2", "3", ["a", "b", "c"], "2")], None
    )
    head = saver.get_tuple({"configurable": {"thread_id": "t"}})
    assert head is not None and head.checkpoint["id"] == "3"
    assert head.checkpoint["channel_values"] == {"x": ["a", "b", "c"]}
    assert [t.checkpoint["id"] for t in saver.list({"configurable": {"thread_id": "t"}})] == ["3", "2", "1"]
    assert saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_id": "2"}}).pending_writes == [  # type: ignore[union-attr]
        ("task", "x", ["w"])
    ]


def test_a_conflict_in_the_middle_keeps_the_calls_before_it(saver: PostgresSaver) -> None:
    saver._save_many([put_call(None, "1", ["a"], None)], None)
    with pytest.raises(CheckpointConflictError):  # the second put expects a head that is not "2"
        saver._save_many(
            [put_call("1", "2", ["a", "b"], "1"), put_call("2", "3", ["a", "b", "c"], "9")], None
        )
    assert [t.checkpoint["id"] for t in saver.list({"configurable": {"thread_id": "t"}})] == ["2", "1"]


def test_the_last_save_releases_the_lease_and_a_failed_one_leaves_it_to_the_block(
    saver: PostgresSaver,
) -> None:
    saver._save_many([put_call(None, "1", ["a"], None)], None)
    owners = "SELECT count(*) FROM plait_checkpoint_leases WHERE owner IS NOT NULL"
    with saver.lease("t"):
        with pytest.raises(CheckpointConflictError):
            saver._save_many([put_call("1", "2", ["a", "b"], "0")], ("t", ""))
        with saver.conn.connection() as conn:  # type: ignore[union-attr]
            assert conn.execute(owners).fetchone()[0] == 1  # type: ignore[index]  # still held
        saver._save_many([put_call("1", "2", ["a", "b"], "1")], ("t", ""))
        with saver.conn.connection() as conn:  # type: ignore[union-attr]
            assert conn.execute(owners).fetchone()[0] == 0  # type: ignore[index]  # given back with the put
    with saver.lease("t", wait=False):  # and the block released nothing twice: the thread is free
        pass


def test_runs_leave_no_lease_and_read_their_own_head(saver: PostgresSaver) -> None:
    graph = list_graph(saver)
    config = {"configurable": {"thread_id": "r"}}
    for n in range(1, 4):
        assert graph.invoke({"x": [str(n)]}, config)["x"][-2:] == [str(n), "a"]
    with saver.conn.connection() as conn:  # type: ignore[union-attr]
        assert conn.execute("SELECT count(*) FROM plait_checkpoint_leases").fetchone()[0] == 0  # type: ignore[index]
    assert len(list(graph.get_state_history(config))) == 9


def test_async_runs_batch_and_release_too() -> None:
    from _pg import private_schema

    async def main(dsn: str) -> None:
        async with AsyncPostgresSaver.from_conn_string(dsn) as saver:
            graph = list_graph(saver)
            config = {"configurable": {"thread_id": "r"}}
            for n in range(1, 4):
                out = await graph.ainvoke({"x": [str(n)]}, config)
                assert out["x"][-2:] == [str(n), "a"]
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            cur = await conn.execute("SELECT count(*) FROM plait_checkpoint_leases")
            assert (await cur.fetchone())[0] == 0  # type: ignore[index]
            cur = await conn.execute("SELECT count(*) FROM plait_checkpoints")
            assert (await cur.fetchone())[0] == 9  # type: ignore[index]

    with private_schema("plait_batch") as dsn:
        asyncio.run(main(dsn))


def test_an_async_put_cancelled_while_it_waits_still_commits_and_the_pool_stays_usable() -> None:
    from _pg import private_schema

    from plait.checkpoint._prune import lock_name

    async def main(dsn: str) -> None:
        async with AsyncPostgresSaver.from_conn_string(dsn) as saver:
            await saver.setup()
            config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
            async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as other:
                # the put takes the thread's advisory lock first: while another session holds it, it waits
                await other.execute("SELECT pg_advisory_lock(hashtext(%s))", [lock_name(("t", ""))])
                put = asyncio.ensure_future(
                    saver.aput(config, list_checkpoint("1", ["a"]), {"source": "input", "step": -1}, {"x": 1})
                )
                deadline = time.monotonic() + 120  # (only a guard against a hang)
                while not await _blocks_a_session(other):  # the put is at the lock
                    assert time.monotonic() < deadline and not put.done(), "the put never waited for the lock"
                    await asyncio.sleep(0.02)
                put.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await put
                await other.execute("SELECT pg_advisory_unlock(hashtext(%s))", [lock_name(("t", ""))])
            deadline = time.monotonic() + 120
            while (head := await saver.aget_tuple({"configurable": {"thread_id": "t"}})) is None:
                assert time.monotonic() < deadline, "the cancelled put's statement was not committed"
                await asyncio.sleep(0.05)  # the statement goes on to its commit
            assert head.checkpoint["channel_values"] == {"x": ["a"]}

    with private_schema("plait_batch") as dsn:
        asyncio.run(main(dsn))


async def _blocks_a_session(conn: Any) -> bool:
    """Whether another session waits for a lock that ``conn``'s session holds."""
    cur = await conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))"
    )
    row = await cur.fetchone()
    return bool(row and row[0])
