"""A PostgreSQL database written by plait's schema 3 (before ``plait_begin``, ``plait_release`` and ``plait_put_writes``).

The first saver of schema 4 that uses it adds the three functions and records version 4; the
threads written before read back whole, and runs (which now take the lease with ``plait_begin``)
go on from them, on the sync and async savers alike.
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated

import psycopg
from _pg import private_schema
from typing_extensions import TypedDict

from plait.checkpoint.postgres import PostgresSaver
from plait.checkpoint.postgres.aio import AsyncPostgresSaver
from plait.graph import START, StateGraph


class S(TypedDict):
    x: Annotated[list[str], operator.add]


def _builder() -> StateGraph[S]:
    return StateGraph(S).add_node("a", lambda s: {"x": ["a"]}).add_edge(START, "a")


def _back_to_schema_3(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP FUNCTION plait_begin, plait_release, plait_put_writes")
        conn.execute("DELETE FROM plait_migrations WHERE v = 4")


def _functions(dsn: str) -> list[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT proname FROM pg_proc WHERE pronamespace = current_schema()::regnamespace "
            "AND proname LIKE 'plait%%' ORDER BY proname"
        ).fetchall()
    return [r[0] for r in rows]


def test_a_schema_3_database_gains_the_lease_functions_on_first_run() -> None:
    config = {"configurable": {"thread_id": "t"}}
    with private_schema("plait_up") as dsn:
        with PostgresSaver.from_conn_string(dsn) as saver:
            assert _builder().compile(checkpointer=saver).invoke({"x": ["one"]}, config) == {
                "x": ["one", "a"]
            }
        _back_to_schema_3(dsn)
        assert _functions(dsn) == ["plait_put"]
        with PostgresSaver.from_conn_string(dsn) as saver:
            graph = _builder().compile(checkpointer=saver)
            assert graph.invoke({"x": ["two"]}, config) == {"x": ["one", "a", "two", "a"]}
            assert saver._fetch("SELECT v FROM plait_migrations ORDER BY v", []) == [(1,), (2,), (3,), (4,)]
        assert _functions(dsn) == ["plait_begin", "plait_put", "plait_put_writes", "plait_release"]
        with psycopg.connect(dsn, autocommit=True) as conn:  # the run gave its lease back
            assert conn.execute("SELECT count(*) FROM plait_checkpoint_leases").fetchone() == (0,)


def test_the_async_saver_upgrades_a_schema_3_database_too() -> None:
    config = {"configurable": {"thread_id": "t"}}

    async def turn(dsn: str, text: str) -> dict[str, list[str]]:
        async with AsyncPostgresSaver.from_conn_string(dsn) as saver:
            return await _builder().compile(checkpointer=saver).ainvoke({"x": [text]}, config)

    with private_schema("plait_up") as dsn:
        assert asyncio.run(turn(dsn, "one")) == {"x": ["one", "a"]}
        _back_to_schema_3(dsn)
        assert asyncio.run(turn(dsn, "two")) == {"x": ["one", "a", "two", "a"]}
        assert _functions(dsn) == ["plait_begin", "plait_put", "plait_put_writes", "plait_release"]
