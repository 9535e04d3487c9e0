"""SQLite stores a run step's saves in one transaction, and async calls may run on the event loop.

A batch in which a call fails is rolled back, then made call by call, so the caller sees the same
outcome, and error, as with single calls. ``inline_async=True`` runs the async methods' statements
on the calling loop (no worker thread), except while another thread uses the connection.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from _save_calls import list_graph, put_call
from typing_extensions import TypedDict

from plait.checkpoint._calls import PutWrites
from plait.checkpoint.sqlite import SqliteSaver
from plait.errors import CheckpointConflictError, SerializationError
from plait.graph import START, StateGraph


@pytest.fixture
def saver(tmp_path: Path) -> Iterator[SqliteSaver]:
    with SqliteSaver.from_conn_string(tmp_path / "cp.db") as saver:
        saver.setup()
        yield saver


def _count(saver: SqliteSaver, sql: str) -> int:
    with saver.lock:
        return int(saver.conn.execute(sql).fetchone()[0])


def _ids(saver: SqliteSaver) -> list[str]:
    return [t.checkpoint["id"] for t in saver.list({"configurable": {"thread_id": "t"}})]


def test_a_stale_batch_stores_nothing_of_itself_and_raises_the_conflict(saver: SqliteSaver) -> None:
    saver._save_many([put_call(None, "1", ["a"], None)], None)
    writes = PutWrites(
        {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "2"}},
        [("x", ["w"])],
        "task",
    )
    with pytest.raises(CheckpointConflictError):  # built on "0", not the head
        saver._save_many(
            [put_call("1", "2", ["a", "b"], "0"), writes, put_call("2", "3", ["a", "b", "c"], "2")], None
        )
    assert _ids(saver) == ["1"]
    assert _count(saver, "SELECT count(*) FROM checkpoint_writes") == 0
    saver._save_many(
        [put_call("1", "2", ["a", "b"], "1"), writes, put_call("2", "3", ["a", "b", "c"], "2")], None
    )
    assert _ids(saver) == ["3", "2", "1"]
    head = saver.get_tuple({"configurable": {"thread_id": "t"}})
    assert head is not None and head.checkpoint["channel_values"] == {"x": ["a", "b", "c"]}
    at_2 = saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_id": "2"}})
    assert at_2 is not None and at_2.pending_writes == [("task", "x", ["w"])]


def test_a_conflict_in_the_middle_keeps_the_calls_before_it(saver: SqliteSaver) -> None:
    saver._save_many([put_call(None, "1", ["a"], None)], None)
    with pytest.raises(CheckpointConflictError):  # the second put expects a head that is not "2"
        saver._save_many(
            [put_call("1", "2", ["a", "b"], "1"), put_call("2", "3", ["a", "b", "c"], "9")], None
        )
    assert _ids(saver) == ["2", "1"]
    head = saver.get_tuple({"configurable": {"thread_id": "t"}})
    assert head is not None and head.checkpoint["channel_values"] == {"x": ["a", "b"]}


def test_the_last_save_releases_the_lease_and_a_failed_one_leaves_it_to_the_block(saver: SqliteSaver) -> None:
    saver._save_many([put_call(None, "1", ["a"], None)], None)
    owners = "SELECT count(*) FROM plait_checkpoint_leases WHERE owner IS NOT NULL"
    with saver.lease("t"):
        with pytest.raises(CheckpointConflictError):
            saver._save_many([put_call("1", "2", ["a", "b"], "0")], ("t", ""))
        assert _count(saver, owners) == 1  # still held
        saver._save_many([put_call("1", "2", ["a", "b"], "1")], ("t", ""))
        assert _count(saver, owners) == 0  # given back in the put's transaction
    with saver.lease("t", wait=False):  # and the block released nothing twice: the thread is free
        pass


def test_a_run_commits_three_times_and_leaves_no_lease(saver: SqliteSaver) -> None:
    begun: list[str] = []
    saver.conn.set_trace_callback(lambda sql: begun.append(sql) if sql.startswith("BEGIN") else None)
    graph = list_graph(saver)
    config = {"configurable": {"thread_id": "r"}}
    for n in range(1, 4):
        begun.clear()
        assert graph.invoke({"x": [str(n)]}, config)["x"][-2:] == [str(n), "a"]
        # the lease; the input and step checkpoints with the node's writes; the last one with the release
        assert len(begun) == 3
    saver.conn.set_trace_callback(None)
    assert _count(saver, "SELECT count(*) FROM plait_checkpoint_leases") == 0
    assert len(list(graph.get_state_history(config))) == 9


def _statement_threads(saver: SqliteSaver) -> set[int]:
    threads: set[int] = set()
    saver.conn.set_trace_callback(lambda _sql: threads.add(threading.get_ident()))
    return threads


@pytest.mark.parametrize("inline", [True, False])
def test_async_statements_run_on_the_loop_only_when_inline(tmp_path: Path, inline: bool) -> None:
    async def main() -> None:
        with SqliteSaver.from_conn_string(tmp_path / "cp.db", inline_async=inline) as saver:
            graph = list_graph(saver)
            config = {"configurable": {"thread_id": "r"}}
            await graph.ainvoke({"x": ["1"]}, config)
            threads = _statement_threads(saver)
            assert (await graph.ainvoke({"x": ["2"]}, config))["x"] == ["1", "a", "2", "a"]
            assert (await graph.aget_state(config)).values["x"] == ["1", "a", "2", "a"]
            assert len([s async for s in graph.aget_state_history(config)]) == 6
            on_loop = threading.get_ident()
            assert (threads == {on_loop}) is inline

    asyncio.run(main())


def test_inline_calls_go_to_a_thread_while_another_thread_holds_the_connection(tmp_path: Path) -> None:
    async def main() -> None:
        with SqliteSaver.from_conn_string(tmp_path / "cp.db", inline_async=True) as saver:
            graph = list_graph(saver)
            config = {"configurable": {"thread_id": "r"}}
            await graph.ainvoke({"x": ["1"]}, config)
            held, release = threading.Event(), threading.Event()

            def hold() -> None:
                with saver.lock:
                    held.set()
                    release.wait(120)  # (only a guard against a hang)

            holder = threading.Thread(target=hold)
            holder.start()
            assert held.wait(120)
            read = asyncio.ensure_future(graph.aget_state(config))
            for _ in range(5):  # the loop keeps running meanwhile (a blocked loop ticks once released)
                await asyncio.sleep(0.01)
            assert not read.done()
            release.set()
            assert (await read).values["x"] == ["1", "a"]
            holder.join()

    asyncio.run(main())


class Any_(TypedDict):
    x: object


def test_a_failed_first_save_leaves_the_saver_usable() -> None:
    with SqliteSaver.from_conn_string(":memory:") as saver:  # tables created by the first save
        graph = StateGraph(Any_).add_node("a", lambda s: {}).add_edge(START, "a").compile(checkpointer=saver)
        with pytest.raises(SerializationError):
            graph.invoke({"x": threading.Lock()}, {"configurable": {"thread_id": "bad"}})
        assert graph.invoke({"x": "fine"}, {"configurable": {"thread_id": "good"}}) == {"x": "fine"}
        assert graph.get_state({"configurable": {"thread_id": "good"}}).values == {"x": "fine"}
