"""plait and LangGraph 1.2.24 on one database: each keeps to its own tables; old plait tables move aside."""

from __future__ import annotations

import hashlib
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from langchain_core.messages import AIMessage, HumanMessage

from plait.checkpoint.sqlite import SqliteSaver
from plait.cli import main
from plait.errors import IncompatibleDatabaseError
from plait.graph import END, START, MessagesState, StateGraph

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _langgraph import langgraph, require_langgraph  # noqa: E402
from _pg import private_schema  # noqa: E402

LANGGRAPH_TABLES = {
    "sqlite": ("checkpoints", "writes"),
    "postgres": ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations"),
}


def _echo(state: MessagesState) -> dict[str, Any]:
    return {"messages": [AIMessage("plait: " + state["messages"][-1].content)]}


def _turn(saver: Any, text: str) -> list[str]:
    graph = StateGraph(MessagesState).add_node("echo", _echo).add_edge(START, "echo").add_edge("echo", END)
    out = graph.compile(checkpointer=saver).invoke(
        {"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": "plait-thread"}}
    )
    return [m.content for m in out["messages"]]


class Database:
    """One database (a SQLite file or a private PostgreSQL schema) that both libraries use."""

    def __init__(self, backend: str, target: str) -> None:
        self.backend, self.target = backend, target

    def saver(self) -> Any:
        if self.backend == "sqlite":
            return SqliteSaver.from_conn_string(self.target)
        from plait.checkpoint.postgres import PostgresSaver

        return PostgresSaver.from_conn_string(self.target)

    def rows(self, tables: tuple[str, ...]) -> str:
        """A digest of every row of ``tables``."""
        digest = hashlib.sha256()
        for rows in self._select(tables):
            for row in sorted(map(repr, rows)):
                digest.update(row.encode())
        return digest.hexdigest()

    def _select(self, tables: tuple[str, ...]) -> Iterator[list[Any]]:
        if self.backend == "sqlite":
            conn = sqlite3.connect(self.target)
            try:
                for table in tables:
                    yield conn.execute(f"SELECT * FROM {table}").fetchall()  # noqa: S608 - fixed names
            finally:
                conn.close()
            return
        import psycopg

        with psycopg.connect(self.target) as conn:
            for table in tables:
                yield conn.execute(f"SELECT * FROM {table}").fetchall()  # noqa: S608 - fixed names

    def tables(self) -> set[str]:
        if self.backend == "sqlite":
            conn = sqlite3.connect(self.target)
            try:
                return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            finally:
                conn.close()
        import psycopg

        with psycopg.connect(self.target) as conn:
            sql = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
            return {r[0] for r in conn.execute(sql)}


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    require_langgraph()
    if request.param == "sqlite":
        yield Database("sqlite", str(tmp_path / "both.sqlite"))
        return
    with private_schema("plait_lgb") as dsn:
        yield Database("postgres", dsn)


@pytest.fixture
def pg_database() -> Iterator[Database]:
    require_langgraph()
    with private_schema("plait_lgb") as dsn:
        yield Database("postgres", dsn)


def test_both_set_up_and_run_on_one_postgres_database_without_touching_each_other(
    pg_database: Database,
) -> None:
    database = pg_database
    with database.saver() as saver:
        saver.setup()
        assert _turn(saver, "one") == ["one", "plait: one"]
    plait_tables = tuple(sorted(t for t in database.tables() if t.startswith("plait_")))
    plait_rows = database.rows(plait_tables)
    written = langgraph("write", database.backend, database.target)  # LangGraph's setup() and four threads
    assert database.rows(plait_tables) == plait_rows  # LangGraph left plait's tables alone
    assert written["chat"]["messages"][-1] == ["ai", "echo third", "echo-2"]
    lg_rows = database.rows(LANGGRAPH_TABLES[database.backend])
    with database.saver() as saver:
        saver.setup()  # idempotent beside LangGraph's tables, whose migrations table is not plait's
        assert _turn(saver, "two") == ["one", "plait: one", "two", "plait: two"]
        assert [t.thread_id for t in saver.threads()] == [
            "plait-thread"
        ]  # LangGraph's threads are not plait's
        assert saver.get_tuple({"configurable": {"thread_id": "chat"}}) is None
    assert database.rows(LANGGRAPH_TABLES[database.backend]) == lg_rows  # plait left LangGraph's alone
    again = langgraph("check", database.backend, database.target)  # LangGraph still reads and writes
    assert again["chat"]["messages"][-1] == ["ai", "echo from langgraph", "echo-3"]
    with database.saver() as saver:
        assert _turn(saver, "three")[-1] == "plait: three"


def test_a_langgraph_sqlite_file_is_refused_by_the_saver_and_left_alone(tmp_path: Path) -> None:
    """On SQLite both libraries name a table ``checkpoints`` (plait keeps seed 002's names): no sharing."""
    require_langgraph()
    database = Database("sqlite", str(tmp_path / "lg.sqlite"))
    langgraph("write", "sqlite", database.target)
    rows = database.rows(LANGGRAPH_TABLES["sqlite"])
    with (
        pytest.raises(IncompatibleDatabaseError, match="plait migrate --from-langgraph"),
        database.saver() as saver,
    ):
        saver.setup()
    assert database.rows(LANGGRAPH_TABLES["sqlite"]) == rows
    assert langgraph("check", "sqlite", database.target)["chat"]["messages"][-1][0] == "ai"


def test_a_langgraph_only_database_is_refused_pointing_at_the_import(database: Database) -> None:
    langgraph("write", database.backend, database.target)
    tables = database.tables()
    for command in (["threads", database.target], ["show", database.target, "chat"]):
        out = CliRunner().invoke(main, command)
        assert out.exit_code != 0 and "Traceback" not in out.output
        assert "LangGraph" in out.output and "plait migrate --from-langgraph" in out.output
    assert database.tables() == tables  # reads never write


def _old_plait_layout(dsn: str) -> None:
    """Turn plait's schema-3 tables back into the layout of plait before them (LangGraph's names)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_leases"):
            conn.execute(f"ALTER TABLE plait_{table} RENAME TO {table}")
            conn.execute(f"ALTER TABLE {table} RENAME CONSTRAINT plait_{table}_pkey TO {table}_pkey")
        conn.execute("DROP TABLE plait_migrations")
        conn.execute("DROP FUNCTION plait_put, plait_put_many, plait_begin, plait_release, plait_put_writes")
        conn.execute("CREATE TABLE checkpoint_migrations (v INTEGER PRIMARY KEY)")
        conn.execute("INSERT INTO checkpoint_migrations VALUES (1), (2)")


@pytest.mark.parametrize("langgraph_ran_setup", [False, True])
def test_an_old_plait_postgres_database_moves_to_plait_names_on_first_use(langgraph_ran_setup: bool) -> None:
    if langgraph_ran_setup:
        require_langgraph()
    from plait.checkpoint.postgres import PostgresSaver

    with private_schema("plait_old") as dsn:
        with PostgresSaver.from_conn_string(dsn) as saver:
            assert _turn(saver, "old") == ["old", "plait: old"]
        _old_plait_layout(dsn)
        if langgraph_ran_setup:  # the accident of the issue: LangGraph's setup() applied to plait's tables
            langgraph("setup", "postgres", dsn)
        with PostgresSaver.from_conn_string(dsn) as saver:
            config = {"configurable": {"thread_id": "plait-thread"}}
            assert [m.content for m in saver.get_tuple(config).checkpoint["channel_values"]["messages"]] == [
                "old",
                "plait: old",
            ]  # a read migrates
            assert _turn(saver, "new") == ["old", "plait: old", "new", "plait: new"]
            assert saver._fetch("SELECT v FROM plait_migrations ORDER BY v", []) == [(1,), (2,), (3,)]
        database = Database("postgres", dsn)
        assert not database.tables() & {"checkpoints", "checkpoint_blobs", "checkpoint_writes"}
        if langgraph_ran_setup:
            written = langgraph("write", "postgres", dsn)  # LangGraph sets its own tables up afresh
            assert written["chat"]["messages"][-1] == ["ai", "echo third", "echo-2"]
            with PostgresSaver.from_conn_string(dsn) as saver:
                assert _turn(saver, "after")[-1] == "plait: after"
