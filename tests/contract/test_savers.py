"""One behaviour contract for every checkpoint saver: in-memory, SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from typing import Any

import pytest
from _pg import PG_DSN, pg_saver, private_schema
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage

from plait.checkpoint.base import empty_checkpoint
from plait.checkpoint.sqlite import SqliteSaver
from plait.errors import CheckpointConflictError, SerializationError
from plait.graph import END, START, MessagesState, StateGraph
from plait.graph.message import REMOVE_ALL_MESSAGES


def cfg(thread: str = "t", cid: str | None = None, ns: str = "") -> dict[str, Any]:
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
    if cid is not None:
        conf["checkpoint_id"] = cid
    return {"configurable": conf}


def put(
    saver: Any,
    parent: dict[str, Any],
    values: dict[str, Any],
    changed: dict[str, int],
    step: int,
    **meta: Any,
) -> dict[str, Any]:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = values
    prior = (
        {}
        if parent["configurable"].get("checkpoint_id") is None
        else (saver.get_tuple(parent).checkpoint["channel_versions"])
    )
    checkpoint["channel_versions"] = {**prior, **changed}
    checkpoint["next"] = ["node"]
    return saver.put(parent, checkpoint, {"source": "loop", "step": step, "parents": {}, **meta}, changed)


def chain(saver: Any, n: int, thread: str = "t") -> list[dict[str, Any]]:
    configs = []
    parent = cfg(thread)
    items: list[str] = []
    for i in range(n):
        items = [*items, f"m{i}"]
        parent = put(
            saver,
            parent,
            {"items": items, "count": i},
            {"items": i + 1, "count": i + 1},
            i,
            kind="even" if i % 2 == 0 else "odd",
        )
        configs.append(parent)
    return configs


# -- saver API -------------------------------------------------------------------------


def test_put_get_roundtrip_and_latest(saver: Any) -> None:
    assert saver.get_tuple(cfg("none")) is None
    configs = chain(saver, 3)
    latest = saver.get_tuple(cfg())
    assert latest.config["configurable"]["checkpoint_id"] == configs[-1]["configurable"]["checkpoint_id"]
    assert latest.checkpoint["channel_values"] == {"items": ["m0", "m1", "m2"], "count": 2}
    assert latest.checkpoint["next"] == ["node"]
    assert latest.metadata["step"] == 2 and latest.metadata["kind"] == "even"
    assert (
        latest.parent_config["configurable"]["checkpoint_id"] == configs[1]["configurable"]["checkpoint_id"]
    )
    first = saver.get_tuple(configs[0])
    assert first.checkpoint["channel_values"] == {"items": ["m0"], "count": 0}
    assert saver.get_tuple(cfg(cid="00000000-0000-0000-0000-000000000000")) is None


def test_list_order_filter_before_limit(saver: Any) -> None:
    configs = chain(saver, 6)
    chain(saver, 2, thread="other")
    ids = [c["configurable"]["checkpoint_id"] for c in configs]
    listed = [t.config["configurable"]["checkpoint_id"] for t in saver.list(cfg())]
    assert listed == ids[::-1]
    assert [t.metadata["step"] for t in saver.list(cfg(), filter={"kind": "odd"})] == [5, 3, 1]
    assert [t.metadata["step"] for t in saver.list(cfg(), filter={"step": 2})] == [2]
    assert [t.metadata["step"] for t in saver.list(cfg(), before=configs[3])] == [2, 1, 0]
    assert [t.metadata["step"] for t in saver.list(cfg(), limit=2)] == [5, 4]
    assert [
        t.metadata["step"] for t in saver.list(cfg(), before=configs[4], filter={"kind": "even"}, limit=1)
    ] == [2]
    assert len(list(saver.list(None))) == 8
    assert list(saver.list(cfg("nobody"))) == []


async def test_put_records_the_config_as_langgraph_savers_do(saver: Any) -> None:
    config = {
        "configurable": {
            "thread_id": "meta",
            "checkpoint_ns": "",
            "user_id": "u1",
            "n": 2,
            "model": {"no": 1},
        },
        "metadata": {"tag": "x", "step": 99},
    }
    stored = put(saver, config, {"count": 1}, {"count": 1}, 0, kind="mine")
    recorded = saver.get_tuple(stored).metadata
    # the put's own keys win over the config's; plain user keys of configurable are added
    assert recorded == {
        "source": "loop",
        "step": 0,
        "parents": {},
        "kind": "mine",
        "tag": "x",
        "user_id": "u1",
        "n": 2,
    }
    assert [t.metadata["step"] for t in saver.list(cfg("meta"), filter={"user_id": "u1"})] == [0]
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"count": 2}
    checkpoint["channel_versions"] = {"count": 2}
    again = await saver.aput(
        {**config, "configurable": {**config["configurable"], **stored["configurable"]}},
        checkpoint,
        {"step": 1},
        {"count": 2},
    )
    recorded = (await saver.aget_tuple(again)).metadata
    assert {k: v for k, v in recorded.items() if k != "parents"} == {
        "step": 1,
        "tag": "x",
        "user_id": "u1",
        "n": 2,
    }


def test_list_values_are_materialized(saver: Any) -> None:
    chain(saver, 5)
    values = [t.checkpoint["channel_values"]["items"] for t in saver.list(cfg())]
    assert values == [[f"m{j}" for j in range(i + 1)] for i in range(4, -1, -1)]


def test_pending_writes(saver: Any) -> None:
    config = chain(saver, 1)[0]
    saver.put_writes(config, [("a", 1), ("b", {"x": (1, 2)})], "task1")
    saver.put_writes(config, [("__interrupt__", ["why"])], "task2")
    saver.put_writes(config, [("__resume__", ["yes"])], "task2")
    writes = saver.get_tuple(config).pending_writes
    assert sorted(writes, key=repr) == sorted(
        [
            ("task1", "a", 1),
            ("task1", "b", {"x": [1, 2]}),  # a tuple reads back as a list, as with LangGraph
            ("task2", "__interrupt__", ["why"]),
            ("task2", "__resume__", ["yes"]),
        ],
        key=repr,
    )
    saver.put_writes(config, [("a", 2)], "task1")
    writes = saver.get_tuple(config).pending_writes
    assert ("task1", "a", 2) in writes and ("task1", "b", {"x": [1, 2]}) not in writes
    assert ("task2", "__interrupt__", ["why"]) in writes
    listed = next(iter(saver.list(config)))
    assert sorted(listed.pending_writes, key=repr) == sorted(writes, key=repr)


def test_one_call_writing_a_special_channel_twice_keeps_the_last(saver: Any) -> None:
    config = chain(saver, 1)[0]
    saver.put_writes(config, [("__interrupt__", ["first"]), ("a", 1), ("__interrupt__", ["second"])], "t")
    writes = saver.get_tuple(config).pending_writes
    assert sorted(writes, key=repr) == [("t", "__interrupt__", ["second"]), ("t", "a", 1)]


def test_threads_lists_each_thread_with_its_head(saver: Any) -> None:
    heads = {t: chain(saver, n, thread=t)[-1] for t, n in (("a", 2), ("b", 3))}
    found = {info.thread_id: info for info in saver.threads()}
    assert set(found) >= {"a", "b"}
    assert (found["a"].checkpoints, found["b"].checkpoints) == (2, 3)
    assert found["b"].head_id == heads["b"]["configurable"]["checkpoint_id"]


def test_delete_thread(saver: Any) -> None:
    chain(saver, 3)
    chain(saver, 2, thread="keep")
    saver.delete_thread("t")
    assert saver.get_tuple(cfg()) is None
    assert list(saver.list(cfg())) == []
    assert saver.get_tuple(cfg("keep")).metadata["step"] == 1


def test_head_check(saver: Any) -> None:
    configs = chain(saver, 2)
    checkpoint = empty_checkpoint()
    with pytest.raises(CheckpointConflictError):
        saver.put(
            configs[0],
            checkpoint,
            {"source": "loop", "step": 9},
            {},
            expected_head=configs[0]["configurable"]["checkpoint_id"],
        )
    assert saver.get_tuple(cfg()).metadata["step"] == 1


def test_unserializable_value_names_key(saver: Any) -> None:
    with pytest.raises(SerializationError, match="'bad'"):
        put(saver, cfg(), {"bad": object()}, {"bad": 1}, 0)


def test_list_subclass_values_store_as_lists(saver: Any) -> None:
    class Tagged(list):  # e.g. the list add_messages returns
        pass

    put(saver, cfg(), {"items": Tagged([1, 2])}, {"items": 1}, 0)
    assert saver.get_tuple(cfg()).checkpoint["channel_values"]["items"] == [1, 2]


async def test_async_api(saver: Any) -> None:
    configs = chain(saver, 3)
    got = await saver.aget_tuple(cfg())
    assert (
        got.config == configs[-1]
        or got.config["configurable"]["checkpoint_id"] == configs[-1]["configurable"]["checkpoint_id"]
    )
    assert [t.metadata["step"] async for t in saver.alist(cfg(), limit=2)] == [2, 1]


# -- graph level ---------------------------------------------------------------------


def echo_graph(saver: Any, reply: Any = None) -> Any:
    def echo(state: MessagesState) -> dict[str, Any]:
        if reply is not None:
            return reply(state)
        return {"messages": [AIMessage(f"echo {len(state['messages'])}: " + state["messages"][-1].content)]}

    b = StateGraph(MessagesState)
    b.add_node("echo", echo)
    b.add_edge(START, "echo")
    b.add_edge("echo", END)
    return b.compile(checkpointer=saver)


def test_many_turns_state(saver: Any) -> None:
    g = echo_graph(saver)
    config = {"configurable": {"thread_id": "chat"}}
    for i in range(40):
        out = g.invoke({"messages": [HumanMessage(f"hello {i}")]}, config)
    assert len(out["messages"]) == 80
    state = g.get_state(config)
    assert [m.content for m in state.values["messages"]] == [m.content for m in out["messages"]]
    assert [m.id for m in state.values["messages"]] == [m.id for m in out["messages"]]
    assert state.values["messages"][-1].content == "echo 79: hello 39"


def test_remove_message_trimming(saver: Any) -> None:
    def trim(state: MessagesState) -> dict[str, Any]:
        msgs = state["messages"]
        drop = [RemoveMessage(id=m.id) for m in msgs[:-4]] if len(msgs) > 4 else []
        return {"messages": [*drop, AIMessage(f"n={len(msgs)}")]}

    g = echo_graph(saver, trim)
    config = {"configurable": {"thread_id": "trim"}}
    for i in range(30):
        out = g.invoke({"messages": [HumanMessage(f"q{i}")]}, config)
    assert len(out["messages"]) == 5
    assert [m.content for m in g.get_state(config).values["messages"]] == [m.content for m in out["messages"]]
    # a past checkpoint still shows its own (longer) transcript
    past = [s for s in g.get_state_history(config)][10]
    assert past.values["messages"] == saver.get_tuple(past.config).checkpoint["channel_values"]["messages"]


def test_remove_all(saver: Any) -> None:
    def wipe(state: MessagesState) -> dict[str, Any]:
        if state["messages"][-1].content == "reset":
            return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), AIMessage("fresh")]}
        return {"messages": [AIMessage("ok")]}

    g = echo_graph(saver, wipe)
    config = {"configurable": {"thread_id": "wipe"}}
    for text in ["a", "b", "reset", "c"]:
        out = g.invoke({"messages": [HumanMessage(text)]}, config)
    assert [m.content for m in out["messages"]] == ["fresh", "c", "ok"]
    assert [m.content for m in g.get_state(config).values["messages"]] == ["fresh", "c", "ok"]


def listed_as_read_alone(saver: Any, reply: Any, thread: str, turns: int) -> list[Any]:
    """The thread's history after ``turns`` turns, each checkpoint's messages checked against
    ``get_tuple`` of that checkpoint alone; returns the listed messages, newest first."""
    g = echo_graph(saver, reply)
    config = {"configurable": {"thread_id": thread}}
    for i in range(turns):
        g.invoke({"messages": [HumanMessage(f"q{i}")]}, config)
    listed = list(saver.list(config))
    assert len(listed) == 3 * turns
    for item in listed:
        alone = saver.get_tuple(item.config)
        assert alone is not None
        assert [m.id for m in item.checkpoint["channel_values"].get("messages", [])] == [
            m.id for m in alone.checkpoint["channel_values"].get("messages", [])
        ]
    return [item.checkpoint["channel_values"].get("messages", []) for item in listed]


def test_a_long_history_lists_each_checkpoint_as_reading_it_alone(saver: Any) -> None:
    # 300 turns: 900 checkpoints (pages of the SQL savers' listing), a trim early on (a row that does
    # more than append starts a new trail), then 520 rows of messages: consolidated at two levels
    def reply(state: MessagesState) -> dict[str, Any]:
        msgs = state["messages"]
        if msgs[-1].content == "q40":
            return {"messages": [*(RemoveMessage(id=m.id) for m in msgs[:-4]), AIMessage("trimmed")]}
        return {"messages": [AIMessage(f"a{len(msgs)}")]}

    newest = listed_as_read_alone(saver, reply, "long", 300)[0]
    assert [m.content for m in newest[:6]] == ["a77", "q39", "a79", "q40", "trimmed", "q41"]


def test_a_history_of_a_trimmed_window_lists_each_checkpoint_as_reading_it_alone(saver: Any) -> None:
    # every turn drops messages: each row does more than append, chains run back to a full row
    def reply(state: MessagesState) -> dict[str, Any]:
        msgs = state["messages"]
        return {"messages": [*(RemoveMessage(id=m.id) for m in msgs[:-29]), AIMessage(f"a{len(msgs)}")]}

    newest = listed_as_read_alone(saver, reply, "window", 120)[0]
    assert [m.content for m in newest[-3:]] == ["a31", "q119", "a31"]


def test_update_state_and_time_travel(saver: Any) -> None:
    g = echo_graph(saver)
    config = {"configurable": {"thread_id": "tt"}}
    for text in ["one", "two", "three"]:
        g.invoke({"messages": [HumanMessage(text)]}, config)
    g.update_state(config, {"messages": [AIMessage("edited")]})
    assert g.get_state(config).values["messages"][-1].content == "edited"
    history = list(g.get_state_history(config))
    after_one = next(s for s in history if len(s.values.get("messages", [])) == 2)
    # get_state on a past checkpoint
    past = g.get_state(after_one.config)
    assert [m.content for m in past.values["messages"]] == ["one", "echo 1: one"]
    # fork from it: the old branch stays intact
    forked = g.invoke({"messages": [HumanMessage("other")]}, after_one.config)
    assert [m.content for m in forked["messages"]] == ["one", "echo 1: one", "other", "echo 3: other"]
    again = g.get_state(after_one.config)
    assert [m.content for m in again.values["messages"]] == ["one", "echo 1: one"]
    old_head = history[0]
    assert g.get_state(old_head.config).values["messages"][-1].content == "edited"


def test_sqlite_reconnect_from_file(tmp_path: Any) -> None:
    path = tmp_path / "re.db"
    config = {"configurable": {"thread_id": "r"}}
    with SqliteSaver.from_conn_string(path) as s:
        ids = [m.id for m in echo_graph(s).invoke({"messages": [HumanMessage("hi")]}, config)["messages"]]
    conn = sqlite3.connect(str(path), check_same_thread=False)
    try:
        g = echo_graph(SqliteSaver(conn))
        out = g.invoke({"messages": [HumanMessage("again")]}, config)
        assert [m.id for m in out["messages"]][:2] == ids
        assert [m.content for m in out["messages"]] == ["hi", "echo 1: hi", "again", "echo 3: again"]
    finally:
        conn.close()


def test_sqlite_bytes_per_turn_do_not_grow(tmp_path: Any) -> None:
    path = tmp_path / "size.db"
    config = {"configurable": {"thread_id": "big"}}
    sizes = []
    with SqliteSaver.from_conn_string(path) as s:
        g = echo_graph(s, lambda st: {"messages": [AIMessage("a" * 200)]})
        for i in range(300):
            g.invoke({"messages": [HumanMessage("u" * 200)]}, config)
            if i % 100 == 99:
                s.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                sizes.append(path.stat().st_size)
        assert len(g.get_state(config).values["messages"]) == 600
    first = sizes[0]
    last = sizes[2] - sizes[1]
    assert last <= 1.5 * first, sizes
    assert sizes[2] < 1_500_000, sizes


# -- PostgreSQL specifics -------------------------------------------------------------


@pytest.fixture(name="pg_saver")
def pg_saver_fixture() -> Iterator[Any]:
    yield from pg_saver()


def test_postgres_survives_dropped_connection(pg_saver: Any) -> None:
    import psycopg

    g = echo_graph(pg_saver)
    config = {"configurable": {"thread_id": "drop"}}
    g.invoke({"messages": [HumanMessage("one")]}, config)
    with pg_saver.conn.connection() as conn:
        pids = [conn.info.backend_pid]
    with psycopg.connect(PG_DSN, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", [pids])
        # the backend exits after the call returns: the connection is dropped once it is gone
        deadline = time.monotonic() + 120  # (only a guard against a hang)
        while not admin.execute(
            "SELECT NOT EXISTS(SELECT 1 FROM pg_stat_activity WHERE pid = ANY(%s))", [pids]
        ).fetchone()[0]:  # type: ignore[index]
            assert time.monotonic() < deadline, "the terminated backend did not exit"
            time.sleep(0.02)
    out = g.invoke({"messages": [HumanMessage("two")]}, config)
    assert [m.content for m in out["messages"]][-2:] == ["two", "echo 3: two"]


def test_postgres_setup_idempotent_and_versioned(pg_saver: Any) -> None:
    pg_saver.setup()
    pg_saver.setup()
    rows = pg_saver._fetch("SELECT v FROM plait_migrations ORDER BY v", [])
    assert rows == [(1,), (2,), (3,)]
    tables = {
        r[0]
        for r in pg_saver._fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()", []
        )
    }
    assert {
        "plait_checkpoints",
        "plait_checkpoint_blobs",
        "plait_checkpoint_writes",
        "plait_migrations",
    } <= tables
    assert not tables & {"checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations"}
    blob_cols = {
        r[0]
        for r in pg_saver._fetch(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = 'plait_checkpoint_blobs'",
            [],
        )
    }
    assert {"thread_id", "checkpoint_ns", "channel", "version", "type", "blob"} <= blob_cols


def test_postgres_import_error_names_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import sys

    for name in [m for m in sys.modules if m.startswith("plait.checkpoint.postgres")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(ImportError, match=r"pip install 'plait\[postgres\]'"):
        importlib.import_module("plait.checkpoint.postgres")


async def test_async_postgres_saver() -> None:
    from plait.checkpoint.postgres.aio import AsyncPostgresSaver

    with private_schema() as dsn:
        async with AsyncPostgresSaver.from_conn_string(dsn) as saver:
            await saver.setup()
            g = echo_graph(saver)
            config = {"configurable": {"thread_id": "async"}}
            await g.ainvoke({"messages": [HumanMessage("x")]}, config)
            out = await g.ainvoke({"messages": [HumanMessage("y")]}, config)
            assert [m.content for m in out["messages"]] == ["x", "echo 1: x", "y", "echo 3: y"]
            assert [t.metadata["step"] async for t in saver.alist(config, limit=2)] == [4, 3]
