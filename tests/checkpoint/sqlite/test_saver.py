"""SQLite-specific behaviour: schema, WAL, pruning, corruption, threads."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage

from plait.checkpoint.base import empty_checkpoint
from plait.checkpoint.sqlite import SqliteSaver
from plait.errors import SerializationError
from plait.graph import END, START, MessagesState, StateGraph


def graph(saver: Any) -> Any:
    b = StateGraph(MessagesState)
    b.add_node("chat", lambda s: {"messages": [AIMessage("r" * 200)]})
    b.add_edge(START, "chat")
    b.add_edge("chat", END)
    return b.compile(checkpointer=saver)


def run_turns(g: Any, thread: str, n: int) -> dict[str, Any]:
    config = {"configurable": {"thread_id": thread}}
    out: dict[str, Any] = {}
    for _ in range(n):
        out = g.invoke({"messages": [HumanMessage("u" * 200)]}, config)
    return out


@pytest.fixture
def db(tmp_path: Path) -> Any:
    path = tmp_path / "cp.db"
    with SqliteSaver.from_conn_string(path) as saver:
        yield path, saver


def test_tables_and_columns(db: Any) -> None:
    _, saver = db
    run_turns(graph(saver), "user_1", 1)
    conn = saver.conn
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    # seed 002's names for the two tables its SQL queries; plait's own tables are prefixed
    assert {"checkpoints", "plait_checkpoint_blobs", "checkpoint_writes", "plait_meta"} <= tables
    cols = {r[1] for r in conn.execute("PRAGMA table_info(checkpoints)")}
    assert {
        "thread_id",
        "checkpoint_ns",
        "checkpoint_id",
        "parent_checkpoint_id",
        "step",
        "source",
        "created_at",
        "checkpoint",
        "metadata",
    } <= cols
    bcols = {r[1] for r in conn.execute("PRAGMA table_info(plait_checkpoint_blobs)")}
    assert {"thread_id", "checkpoint_ns", "channel", "checkpoint_id", "prev_id", "kind", "value"} <= bcols
    wcols = {r[1] for r in conn.execute("PRAGMA table_info(checkpoint_writes)")}
    assert {"thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx", "channel", "value"} <= wcols
    assert conn.execute("SELECT value FROM plait_meta WHERE key='schema_version'").fetchone() == ("3",)
    assert conn.execute("SELECT COUNT(DISTINCT thread_id) FROM checkpoints").fetchone() == (1,)
    # LangGraph's name for the pending writes, as a read-only view: SQL written for its layout still runs
    assert conn.execute("SELECT type FROM sqlite_master WHERE name = 'writes'").fetchone() == ("view",)
    seen = conn.execute(
        "SELECT count(*), sum(length(value)) FROM writes WHERE thread_id = ? AND checkpoint_ns = ''",
        ("user_1",),
    ).fetchone()
    stored = conn.execute(
        "SELECT count(*), sum(length(value)) FROM checkpoint_writes WHERE thread_id = ?", ("user_1",)
    ).fetchone()
    assert seen == stored and seen[0] > 0
    with pytest.raises(sqlite3.OperationalError, match="view"):
        conn.execute("DELETE FROM writes")


def test_wal_mode_and_idempotent_setup(db: Any) -> None:
    _, saver = db
    assert saver.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    saver.setup()
    saver.setup()
    run_turns(graph(saver), "t", 1)
    saver.setup()
    assert saver.get_tuple({"configurable": {"thread_id": "t"}}) is not None


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    conn = sqlite3.connect(str(tmp_path / "x.db"))
    SqliteSaver(conn).setup()
    conn.execute("UPDATE plait_meta SET value='99' WHERE key='schema_version'")
    conn.commit()
    with pytest.raises(RuntimeError, match="newer"):
        SqliteSaver(conn).setup()


def test_values_are_stored_as_deltas(db: Any) -> None:
    _, saver = db
    run_turns(graph(saver), "t", 20)
    kinds = dict(
        saver.conn.execute("SELECT kind, COUNT(*) FROM plait_checkpoint_blobs GROUP BY kind").fetchall()
    )
    assert kinds["delta"] >= 38 and kinds.get("full", 0) <= 2


def test_prune_shrinks_file_and_keeps_rest_readable(db: Any) -> None:
    path, saver = db
    g = graph(saver)
    out = run_turns(g, "t", 150)
    run_turns(g, "other", 3)
    config = {"configurable": {"thread_id": "t"}}
    saver.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = path.stat().st_size
    kept_history = list(g.get_state_history(config))[:5]
    deleted = saver.prune("t", keep_last=5)
    assert deleted == 450 - 5
    saver.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert path.stat().st_size < before / 2
    fresh = SqliteSaver(saver.conn)  # cold cache: everything read from the file
    history = list(graph(fresh).get_state_history(config))
    assert len(history) == 5
    assert [s.values for s in history] == [s.values for s in kept_history]
    assert fresh.get_tuple(config).checkpoint["channel_values"]["messages"] == out["messages"]
    more = graph(fresh).invoke({"messages": [HumanMessage("after prune")]}, config)
    assert len(more["messages"]) == 302
    assert len(list(graph(fresh).get_state_history({"configurable": {"thread_id": "other"}}))) == 9


def test_prune_older_than(db: Any) -> None:
    _, saver = db
    run_turns(graph(saver), "t", 3)
    assert saver.prune("t", older_than=3600) == 0
    assert saver.prune("t", older_than=0) == 8
    assert len(list(saver.list({"configurable": {"thread_id": "t"}}))) == 1


def test_corrupted_blob_raises(db: Any) -> None:
    _, saver = db
    run_turns(graph(saver), "t", 2)
    saver.conn.execute("UPDATE plait_checkpoint_blobs SET value = x'c1ff00'")
    saver.conn.commit()
    fresh = SqliteSaver(saver.conn)
    with pytest.raises(SerializationError, match="messages"):
        fresh.get_tuple({"configurable": {"thread_id": "t"}})


def test_missing_chain_row_raises(db: Any) -> None:
    _, saver = db
    run_turns(graph(saver), "t", 3)
    saver.conn.execute("DELETE FROM plait_checkpoint_blobs WHERE kind = 'full'")
    saver.conn.commit()
    with pytest.raises(SerializationError, match="incomplete"):
        SqliteSaver(saver.conn).get_tuple({"configurable": {"thread_id": "t"}})


def test_list_streams(db: Any) -> None:
    _, saver = db
    run_turns(graph(saver), "t", 100)
    calls = []
    original = saver._perform

    def counting(op: Any) -> Any:
        calls.append(op)
        return original(op)

    saver._perform = counting  # type: ignore[method-assign]
    first = next(iter(saver.list({"configurable": {"thread_id": "t"}})))
    assert first.metadata["step"] == 298  # three checkpoints per turn, from step -1
    assert len(calls) <= 3


def test_threads_share_one_saver(db: Any) -> None:
    _, saver = db
    g = graph(saver)
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            run_turns(g, f"w{i}", 10)
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i in range(4):
        assert len(g.get_state({"configurable": {"thread_id": f"w{i}"}}).values["messages"]) == 20


def test_rejects_non_sqlite_connection() -> None:
    with pytest.raises(TypeError, match="from_conn_string"):
        SqliteSaver(object())  # type: ignore[arg-type]


edits = st.lists(
    st.tuples(
        st.sampled_from(["append", "drop", "replace", "clear", "same"]), st.integers(0, 30), st.integers(1, 4)
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=40, deadline=None)
@given(edits)
def test_random_edits_read_back_cold(tmp_path_factory: Any, script: list[tuple[str, int, int]]) -> None:
    conn = sqlite3.connect(str(tmp_path_factory.mktemp("h") / "h.db"), check_same_thread=False)
    saver = SqliteSaver(conn, cache_size=4)
    parent: dict[str, Any] = {"configurable": {"thread_id": "h", "checkpoint_ns": ""}}
    value: list[Any] = []
    expected: list[tuple[dict[str, Any], list[Any]]] = []
    for i, (kind, at, n) in enumerate(script):
        value = list(value)
        if kind == "append":
            value.extend(f"v{i}.{j}" for j in range(n))
        elif kind == "drop" and value:
            del value[at % len(value) : at % len(value) + n]
        elif kind == "replace" and value:
            value[at % len(value)] = f"r{i}"
        elif kind == "clear":
            value = []
        cp = empty_checkpoint()
        cp["channel_values"] = {"items": value}
        cp["channel_versions"] = {"items": i + 1}
        changed = {} if kind == "same" else {"items": i + 1}
        parent = saver.put(parent, cp, {"source": "loop", "step": i}, changed)
        expected.append((parent, list(value)))
    cold = SqliteSaver(conn)
    for config, want in expected:
        assert cold.get_tuple(config).checkpoint["channel_values"]["items"] == want
    listed = [t.checkpoint["channel_values"]["items"] for t in SqliteSaver(conn).list(parent)]
    assert listed == [cold.get_tuple(c).checkpoint["channel_values"]["items"] for c, _ in reversed(expected)]
    conn.close()


async def test_async_sqlite_saver(tmp_path: Path) -> None:
    from plait.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with AsyncSqliteSaver.from_conn_string(tmp_path / "a.db") as saver:
        g = graph(saver)
        config = {"configurable": {"thread_id": "a"}}
        await g.ainvoke({"messages": [HumanMessage("x")]}, config)
        out = await g.ainvoke({"messages": [HumanMessage("y")]}, config)
        assert len(out["messages"]) == 4
        steps = [t.metadata["step"] async for t in saver.alist(config, limit=3)]
        assert steps == [4, 3, 2]
        assert len((await g.aget_state(config)).values["messages"]) == 4


def test_database_from_a_newer_plait_is_refused_untouched(tmp_path) -> None:  # noqa: ANN001
    import sqlite3

    import pytest

    from plait.checkpoint.sqlite import SqliteSaver
    from plait.errors import SchemaVersionError

    path = tmp_path / "future.db"
    with SqliteSaver.from_conn_string(str(path)) as saver:
        saver.setup()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE plait_meta SET value = '999' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with SqliteSaver.from_conn_string(str(path)) as saver, pytest.raises(SchemaVersionError) as info:
        saver.setup()
    assert info.value.found == 999 and "Upgrade plait" in str(info.value)
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM plait_meta WHERE key = 'schema_version'").fetchone() == ("999",)


async def test_async_saver_setup_is_awaitable_and_list_streams(tmp_path) -> None:  # noqa: ANN001
    from plait.checkpoint.sqlite.aio import AsyncSqliteSaver
    from plait.graph import END, START, MessagesState, StateGraph

    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "a.db")) as saver:
        await saver.setup()
        await saver.setup()
        graph = (
            StateGraph(MessagesState)
            .add_node("n", lambda s: {"messages": [("ai", "ok")]})
            .add_edge(START, "n")
            .add_edge("n", END)
            .compile(checkpointer=saver)
        )
        config = {"configurable": {"thread_id": "t"}}
        for _ in range(3):
            await graph.ainvoke({"messages": [("user", "hi")]}, config)
        steps = [s.metadata["step"] async for s in graph.aget_state_history(config, limit=4)]
        assert steps == [7, 6, 5, 4]


def test_a_langgraph_file_is_refused_and_left_alone(tmp_path) -> None:  # noqa: ANN001
    """plait keeps seed 002's table names on SQLite, so LangGraph's file cannot be shared: refused, untouched."""
    import sqlite3

    import pytest

    from plait.checkpoint.sqlite import SqliteSaver
    from plait.errors import IncompatibleDatabaseError

    path = tmp_path / "lg.db"
    conn = sqlite3.connect(path, check_same_thread=False)
    conn.execute("CREATE TABLE checkpoints (thread_id TEXT, checkpoint_ns TEXT, checkpoint_id TEXT)")
    conn.execute("CREATE TABLE writes (thread_id TEXT)")
    conn.execute("INSERT INTO checkpoints VALUES ('lg', '', '1')")
    conn.commit()
    before = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    with pytest.raises(IncompatibleDatabaseError, match="plait migrate --from-langgraph"):
        run_turns(graph(SqliteSaver(conn)), "t", 1)
    assert {r[0] for r in conn.execute("SELECT name FROM sqlite_master")} == before
    assert conn.execute("SELECT * FROM checkpoints").fetchall() == [("lg", "", "1")]


def test_a_file_of_an_earlier_plait_is_migrated_to_the_plait_names(tmp_path) -> None:  # noqa: ANN001
    import sqlite3

    from plait.checkpoint.sqlite import SqliteSaver

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, check_same_thread=False)
    SqliteSaver(conn).setup()
    run_turns(graph(SqliteSaver(conn)), "t", 3)
    # make it what plait wrote at schema 2: LangGraph's table names and a `writes` view
    for table in ("checkpoint_blobs", "checkpoint_leases"):
        conn.execute(f"ALTER TABLE plait_{table} RENAME TO {table}")
    conn.execute("DROP VIEW writes")
    conn.execute("CREATE VIEW writes AS SELECT * FROM checkpoint_writes")
    conn.execute("UPDATE plait_meta SET value = '2' WHERE key = 'schema_version'")
    conn.commit()
    saver = SqliteSaver(conn)
    got = saver.get_tuple({"configurable": {"thread_id": "t"}})
    assert len(got.checkpoint["channel_values"]["messages"]) == 6
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    assert {"checkpoints", "plait_checkpoint_blobs", "checkpoint_writes", "plait_checkpoint_leases"} <= names
    assert not names & {"checkpoint_blobs", "checkpoint_leases"}
    # the old view is replaced by today's (LangGraph's column set)
    assert [r[1] for r in conn.execute("PRAGMA table_info(writes)")] == [
        "thread_id",
        "checkpoint_ns",
        "checkpoint_id",
        "task_id",
        "task_path",
        "idx",
        "channel",
        "type",
        "value",
    ]
    run_turns(graph(saver), "t", 1)
    assert (
        len(saver.get_tuple({"configurable": {"thread_id": "t"}}).checkpoint["channel_values"]["messages"])
        == 8
    )


def test_from_conn_string_needs_a_path() -> None:
    import pytest

    from plait.checkpoint.sqlite import SqliteSaver

    with pytest.raises(TypeError, match="needs a file path"), SqliteSaver.from_conn_string(None):  # type: ignore[arg-type]
        pass


def test_prune_arguments_are_checked(tmp_path) -> None:  # noqa: ANN001
    import pytest

    from plait.checkpoint.sqlite import SqliteSaver

    with SqliteSaver.from_conn_string(str(tmp_path / "p.db")) as saver:
        for kwargs in ({}, {"keep_last": 0}, {"keep_last": "3"}, {"older_than": -5}):
            with pytest.raises(ValueError, match="prune"):
                saver.prune("t", **kwargs)


def test_a_checkpoint_row_of_the_wrong_shape_is_a_serialization_error(tmp_path) -> None:  # noqa: ANN001
    import pytest

    from plait.checkpoint.sqlite import SqliteSaver
    from plait.errors import SerializationError
    from plait.graph import END, START, MessagesState, StateGraph

    with SqliteSaver.from_conn_string(str(tmp_path / "c.db")) as saver:
        graph = (
            StateGraph(MessagesState)
            .add_node("n", lambda s: {"messages": [("ai", "ok")]})
            .add_edge(START, "n")
            .add_edge("n", END)
            .compile(checkpointer=saver)
        )
        config = {"configurable": {"thread_id": "t"}}
        graph.invoke({"messages": [("user", "hi")]}, config)
        saver.conn.execute("UPDATE checkpoints SET checkpoint = x'00ff00ff'")
        saver.conn.commit()
        saver._cache.drop_thread("t")
        saver._locs.drop_thread("t")
        with pytest.raises(SerializationError, match="corrupt|Cannot read"):
            graph.get_state(config)
