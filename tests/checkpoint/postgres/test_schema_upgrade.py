"""plait's PostgreSQL functions on a database set up before some of them existed, or with other bodies.

``plait_begin``, ``plait_release`` and ``plait_put_writes`` came after schema 3 without a schema
version of their own (no table changed): every set-up creates the functions that are missing and
replaces those whose body differs, and leaves the others alone. The release's body is what makes
a run's last commit wait for the disk, so that is checked on the server too.
"""

from __future__ import annotations

import asyncio
import operator
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any
from urllib.parse import quote

import psycopg
import pytest
from _pg import PG_DSN, private_schema
from typing_extensions import TypedDict

from plait.checkpoint._engine_ops import Batch, Step
from plait.checkpoint.postgres import PostgresSaver, _sql
from plait.checkpoint.postgres._functions import FUNCTIONS, function_body
from plait.checkpoint.postgres.aio import AsyncPostgresSaver
from plait.graph import START, StateGraph

ALL = ["plait_begin", "plait_put", "plait_put_many", "plait_put_writes", "plait_release"]


class S(TypedDict):
    x: Annotated[list[str], operator.add]


def _builder() -> StateGraph[S]:
    return StateGraph(S).add_node("a", lambda s: {"x": ["a"]}).add_edge(START, "a")


def _admin(dsn: str, sql: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute(sql)  # type: ignore[arg-type]  # test SQL
        return cur.fetchall() if cur.description else []


def _functions(dsn: str) -> dict[str, int]:
    """plait's functions in the schema, each with the transaction id that last wrote its row."""
    rows = _admin(
        dsn,
        "SELECT p.proname, p.xmin::text::bigint FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname = current_schema() AND p.proname LIKE 'plait%%'",
    )
    return dict(rows)


@contextmanager
def _quoted_schema() -> Iterator[str]:
    """A DSN whose schema's name needs quoting (upper case), beside a schema of its lower-case name."""
    name = f"PlaitUp_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_DSN, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{name}"')  # type: ignore[arg-type]  # test SQL
        admin.execute(f'CREATE SCHEMA "{name.lower()}"')  # type: ignore[arg-type]  # test SQL
        try:
            path = quote(f'"{name}"', safe="")
            yield f"{PG_DSN}{'&' if '?' in PG_DSN else '?'}options=-csearch_path%3D{path}"
        finally:
            admin.execute(f'DROP SCHEMA "{name}" CASCADE')  # type: ignore[arg-type]  # test SQL
            admin.execute(f'DROP SCHEMA "{name.lower()}" CASCADE')  # type: ignore[arg-type]  # test SQL


def test_a_database_without_the_new_functions_gains_them_on_first_run() -> None:
    config = {"configurable": {"thread_id": "t"}}
    with private_schema("plait_up") as dsn:
        with PostgresSaver.from_conn_string(dsn) as saver:
            assert _builder().compile(checkpointer=saver).invoke({"x": ["one"]}, config) == {
                "x": ["one", "a"]
            }
        _admin(dsn, "DROP FUNCTION plait_begin, plait_release, plait_put_writes, plait_put_many")
        assert list(_functions(dsn)) == ["plait_put"]
        with PostgresSaver.from_conn_string(dsn) as saver:
            graph = _builder().compile(checkpointer=saver)
            assert graph.invoke({"x": ["two"]}, config) == {"x": ["one", "a", "two", "a"]}
            assert saver._fetch("SELECT v FROM plait_migrations ORDER BY v", []) == [(1,), (2,), (3,)]
        assert sorted(_functions(dsn)) == ALL
        assert _admin(dsn, "SELECT count(*) FROM plait_checkpoint_leases") == [(0,)]  # the run gave it back


def test_set_up_replaces_only_the_functions_whose_body_differs() -> None:
    with private_schema("plait_up") as dsn:
        with PostgresSaver.from_conn_string(dsn) as saver:
            saver.setup()
        before = _functions(dsn)
        _admin(
            dsn,
            "CREATE OR REPLACE FUNCTION plait_release(t text, ns text, me text) RETURNS integer "
            "LANGUAGE sql AS $$ SELECT 0 $$",
        )  # a body of another plait
        changed = _functions(dsn)
        with PostgresSaver.from_conn_string(dsn) as saver:
            saver.setup()
        after = _functions(dsn)
        assert after["plait_release"] != changed["plait_release"]  # put back
        assert {k: v for k, v in after.items() if k != "plait_release"} == {
            k: v for k, v in before.items() if k != "plait_release"
        }  # the others were not written again
        bodies = _admin(
            dsn,
            "SELECT p.proname, p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname = current_schema() AND p.proname LIKE 'plait%%'",
        )
        assert dict(bodies) == {name: function_body(create) for name, create in FUNCTIONS.items()}


def test_the_release_makes_the_commit_wait_for_the_disk_after_a_put_turned_that_off() -> None:
    with private_schema("plait_up") as dsn:
        with PostgresSaver.from_conn_string(dsn) as saver:
            saver.setup()
            params = {"t": "t", "ns": "", "me": "nobody"}
            answers = saver._perform(
                Batch(
                    (
                        Step(_sql.LEASE.release, params),
                        Step("SELECT current_setting('synchronous_commit')", []),
                    ),
                    durable=False,  # the batch starts with synchronous_commit off, as a run's puts do
                )
            )
            default = saver._fetch("SELECT reset_val FROM pg_settings WHERE name = 'synchronous_commit'", [])
            if default == [("off",)]:
                pytest.skip("this server does not wait for the disk by default")
            assert answers == [[(0,)], default]


def test_the_async_saver_gains_the_functions_too() -> None:
    config = {"configurable": {"thread_id": "t"}}

    async def turn(dsn: str, text: str) -> dict[str, list[str]]:
        async with AsyncPostgresSaver.from_conn_string(dsn) as saver:
            return await _builder().compile(checkpointer=saver).ainvoke({"x": [text]}, config)

    with private_schema("plait_up") as dsn:
        assert asyncio.run(turn(dsn, "one")) == {"x": ["one", "a"]}
        _admin(dsn, "DROP FUNCTION plait_begin, plait_release, plait_put_writes, plait_put_many")
        assert asyncio.run(turn(dsn, "two")) == {"x": ["one", "a", "two", "a"]}
        assert sorted(_functions(dsn)) == ALL


def test_a_schema_whose_name_needs_quoting_gets_its_own_functions() -> None:
    """Beside a schema of the same name in lower case, set up first: its functions are not these."""
    config = {"configurable": {"thread_id": "t"}}
    with _quoted_schema() as dsn:
        lower = dsn.replace(quote('"PlaitUp_', safe=""), quote('"plaitup_', safe=""))
        with PostgresSaver.from_conn_string(lower) as saver:
            saver.setup()
        with PostgresSaver.from_conn_string(dsn) as saver:
            graph = _builder().compile(checkpointer=saver)
            assert graph.invoke({"x": ["one"]}, config) == {"x": ["one", "a"]}
            assert graph.invoke({"x": ["two"]}, config) == {"x": ["one", "a", "two", "a"]}
        assert sorted(_functions(dsn)) == ALL
