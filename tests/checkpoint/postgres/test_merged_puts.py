"""A batch's puts of one thread go to PostgreSQL as one ``plait_put_many`` call, storing what
one-by-one puts store; the joining itself (:func:`merge_puts`) on the steps a batch is made of."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from _pg import private_schema
from _save_calls import list_checkpoint, list_graph

from plait.checkpoint._calls import PutCheckpoint, PutWrites
from plait.checkpoint._engine_ops import Step
from plait.checkpoint.postgres import PostgresSaver
from plait.checkpoint.postgres._merge import PUT_MANY, PUT_MANY_TEMP, merge_puts
from plait.checkpoint.postgres._sql import ASYNC_COMMIT, PUT, PUT_TEMP, STRICT, strict_params, writes_steps
from plait.checkpoint.postgres.aio import AsyncPostgresSaver


def _put(thread: str, parent: str | None, cid: str, x: list[str], head: Any) -> PutCheckpoint:
    config: dict[str, Any] = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    if parent is not None:
        config["configurable"]["checkpoint_id"] = parent
    return PutCheckpoint(config, list_checkpoint(cid, x), {"source": "loop", "step": 0}, {"x": 1}, head)


def _chain(thread: str, count: int) -> list[PutCheckpoint]:
    """``count`` puts, each appending one item to ``x`` and expecting the one before as the head."""
    ids = [f"{n:04d}" for n in range(1, count + 1)]
    return [
        _put(
            thread, ids[n - 1] if n else None, cid, [f"v{k}" for k in range(n + 1)], ids[n - 1] if n else None
        )
        for n, cid in enumerate(ids)
    ]


@pytest.fixture
def tracked() -> Iterator[str]:
    """A private schema whose connections count calls of plait's functions (``track_functions``)."""
    with private_schema("plait_merge") as dsn:
        yield dsn.replace("options=", "options=-ctrack_functions%3Dpl%20")


def _calls(dsn: str) -> dict[str, int]:
    """Calls of each plait function so far (counted by the server once a session has ended)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT funcname, calls FROM pg_stat_user_functions WHERE schemaname = current_schema()"
        ).fetchall()
    return {name: int(calls) for name, calls in rows}


def _settled_calls(dsn: str, **least: int) -> dict[str, int]:
    """:func:`_calls` once each named count reached its least value and a later read agrees.

    A session reports its counts as it exits, and also while it runs (at most once a second).
    """
    deadline = time.monotonic() + 120  # (only a guard against a hang: the test then fails on the counts)
    while True:
        calls = _calls(dsn)
        if all(calls.get(name, 0) >= n for name, n in least.items()):
            time.sleep(0.2)
            if _calls(dsn) == calls:
                return calls
        if time.monotonic() > deadline:
            return calls
        time.sleep(0.05)


def _rows(dsn: str, thread: str) -> tuple[list[Any], list[Any]]:
    """A thread's value and checkpoint rows, without the thread id and the time of writing."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        blobs = conn.execute(
            "SELECT channel, version, prev_id, type, blob FROM plait_checkpoint_blobs"
            " WHERE thread_id = %s ORDER BY channel, version",
            [thread],
        ).fetchall()
        checkpoints = conn.execute(
            "SELECT checkpoint_id, parent_checkpoint_id, step, source, checkpoint, metadata"
            " FROM plait_checkpoints WHERE thread_id = %s ORDER BY checkpoint_id",
            [thread],
        ).fetchall()
    return blobs, checkpoints


def test_a_long_batch_is_one_call_and_stores_what_one_by_one_puts_store(tracked: str) -> None:
    # 40 appends: consolidating keyframes rewrite rows that earlier puts of the same call wrote
    with PostgresSaver.from_conn_string(tracked) as saver:
        saver.setup()
        saver._save_many(_chain("batched", 40), None)
        for call in _chain("single", 40):
            saver._save_many([call], None)
    calls = _settled_calls(tracked, plait_put_many=1, plait_put=40)
    assert calls.get("plait_put_many") == 1
    assert calls.get("plait_put") == 40  # the one-by-one thread's
    assert _rows(tracked, "batched") == _rows(tracked, "single")
    with PostgresSaver.from_conn_string(tracked) as cold:  # a new process's view: no cached values
        for n, cid in enumerate(f"{k:04d}" for k in range(1, 41)):
            got = cold.get_tuple({"configurable": {"thread_id": "batched", "checkpoint_id": cid}})
            assert got is not None and got.checkpoint["channel_values"] == {
                "x": [f"v{k}" for k in range(n + 1)]
            }


def test_a_chat_turn_sends_its_three_puts_as_one_call(tracked: str) -> None:
    with PostgresSaver.from_conn_string(tracked) as saver:
        graph = list_graph(saver)
        config = {"configurable": {"thread_id": "chat"}}
        for n in range(5):
            assert graph.invoke({"x": [str(n)]}, config)["x"][-2:] == [str(n), "a"]
        assert len(list(graph.get_state_history(config))) == 15
    calls = _settled_calls(tracked, plait_put_many=5)
    assert calls.get("plait_put_many") == 5
    assert calls.get("plait_put", 0) == 0


def test_an_async_chat_turn_merges_its_puts_when_they_queue_up(tracked: str) -> None:
    # the async saver sends whatever puts are queued when its previous call returns: how many a turn's
    # three puts take (1 to 3 calls) depends on scheduling; none is lost or sent twice
    async def main() -> None:
        async with AsyncPostgresSaver.from_conn_string(tracked) as saver:
            graph = list_graph(saver)
            config = {"configurable": {"thread_id": "chat"}}
            for n in range(3):
                assert (await graph.ainvoke({"x": [str(n)]}, config))["x"][-2:] == [str(n), "a"]
            assert len([s async for s in graph.aget_state_history(config)]) == 9

    asyncio.run(main())
    calls = _settled_calls(tracked)  # (the saver's sessions reported their counts as they closed)
    sent = calls.get("plait_put_many", 0) + calls.get("plait_put", 0)
    assert 3 <= sent <= 9, calls  # at least one call per turn, at most one per checkpoint


def test_puts_of_two_threads_in_one_batch_join_per_thread(tracked: str) -> None:
    one, two = _chain("one", 3), _chain("two", 3)
    writes = PutWrites(
        {"configurable": {"thread_id": "one", "checkpoint_id": "0001"}}, [("x", ["w"])], "task"
    )
    with PostgresSaver.from_conn_string(tracked) as saver:
        saver.setup()
        saver._save_many([one[0], two[0], writes, one[1], two[1], one[2], two[2]], None)
        for thread in ("one", "two"):
            head = saver.get_tuple({"configurable": {"thread_id": thread}})
            assert head is not None and head.checkpoint["id"] == "0003"
            assert head.checkpoint["channel_values"] == {"x": ["v0", "v1", "v2"]}
        first = saver.get_tuple({"configurable": {"thread_id": "one", "checkpoint_id": "0001"}})
        assert first is not None and first.pending_writes == [("task", "x", ["w"])]
    assert _settled_calls(tracked, plait_put_many=2).get("plait_put_many") == 2


def test_a_missing_base_row_refuses_the_call_and_the_puts_are_then_stored_whole(tracked: str) -> None:
    with PostgresSaver.from_conn_string(tracked) as saver:
        saver.setup()
        chain = _chain("t", 4)
        saver._save_many(chain[:2], None)
        # another process pruned the row "0002" deltas build on (this process still has it cached)
        with psycopg.connect(tracked, autocommit=True) as conn:
            conn.execute("DELETE FROM plait_checkpoint_blobs WHERE thread_id = 't' AND version = '0002'")
        saver._save_many(chain[2:], None)
        with PostgresSaver.from_conn_string(tracked) as cold:
            for cid, length in (("0003", 3), ("0004", 4)):
                got = cold.get_tuple({"configurable": {"thread_id": "t", "checkpoint_id": cid}})
                assert got is not None
                assert got.checkpoint["channel_values"] == {"x": [f"v{k}" for k in range(length)]}
        with psycopg.connect(tracked, autocommit=True) as conn:  # "0003" no longer builds on it
            row = conn.execute(
                "SELECT prev_id, type FROM plait_checkpoint_blobs WHERE thread_id = 't' AND version = '0003'"
            ).fetchone()
        assert row is not None and row[0] is None


# -- the joining, on the steps a batch is made of --------------------------------------------


def _step(
    thread: str, cid: str, parent: str | None, temporary: bool = False, rewrite: str | None = None
) -> Step:
    """A batch's put statement (as ``_engine_batch.batched`` makes it) with one value row, and one
    row to ``rewrite``."""
    own: list[object] = [thread, "", cid, parent, parent is not None, True, parent, f"1:{thread}", False]
    own += [1, "loop", "2026-12-02T00:00:00+00:00", b"\x80", b"\x80"]
    own += [["x"], [cid], [parent], ["delta" if parent else "full"], [b"\x01"]]
    own += [[], [], [], [], []] if rewrite is None else [["x"], [rewrite], [cid], ["delta"], [b"\x02"]]
    return Step(STRICT[PUT_TEMP if temporary else PUT], strict_params(own))


def test_merge_joins_a_threads_puts_across_writes_and_other_threads() -> None:
    writes = writes_steps(("a", ""), "2", "task", [(0, "x", "", b"\x01")], False)[0]
    steps = (_step("a", "2", "1"), _step("b", "5", "4"), writes, _step("a", "3", "2"), _step("b", "6", "5"))
    merged, expand = merge_puts(steps)
    assert [item.sql for item in merged] == [PUT_MANY, PUT_MANY, writes.sql]
    first = merged[0].params
    assert first[:4] == ["a", "", "1:a", False]
    assert first[4] == ["2", "3"] and first[5] == ["1", "2"]
    assert first[14] == [1, 2] and first[16] == ["2", "3"]  # each value row's put, and its version
    assert expand is not None
    answers = expand([[("1",), ("2",)], [("4",), ("5",)], [(None,)]])
    assert answers == [[("1",)], [("4",)], [(None,)], [("2",)], [("5",)]]


def test_merge_leaves_puts_it_may_not_join() -> None:
    alone = (_step("a", "2", "1"), _step("b", "5", "4"))
    assert merge_puts(alone) == (alone, None)
    older = (_step("a", "3", "2"), _step("a", "2", "1"))  # ids not increasing: one call each
    assert merge_puts(older) == (older, None)
    barrier = (_step("a", "2", "1"), Step(ASYNC_COMMIT, []), _step("a", "3", "2"))
    assert merge_puts(barrier) == (barrier, None)
    mixed = (_step("a", "2", "1"), _step("a", "3", "2", temporary=True))  # another schema's function
    assert merge_puts(mixed) == (mixed, None)
    merged, _ = merge_puts((_step("a", "2", "1", temporary=True), _step("a", "3", "2", temporary=True)))
    assert [item.sql for item in merged] == [PUT_MANY_TEMP]
    # a put rewriting the row a later put writes: that later put may not join (the call rewrites
    # after every insert), one before it may
    ahead = (_step("a", "2", "1", rewrite="3"), _step("a", "3", "2"))
    assert merge_puts(ahead) == (ahead, None)
    merged, _ = merge_puts((_step("a", "2", "1", rewrite="1"), _step("a", "3", "2")))
    assert [item.sql for item in merged] == [PUT_MANY]
