"""The SQL stores' short paths: one-operation batches without a transaction, TTL refreshes only where needed."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from _pg import private_schema

from plait.store._engine import SEEKS
from plait.store.base import PutOp
from plait.store.postgres import PostgresStore
from plait.store.sqlite import SqliteStore


@contextmanager
def _store(kind: str, tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    """A store and a function reading one item's ``expires_at`` from its table."""
    if kind == "sqlite":
        with SqliteStore.from_conn_string(tmp_path / "s.db") as store:
            store.setup()
            yield (
                store,
                lambda key: store.conn.execute(
                    "SELECT expires_at FROM plait_store WHERE key = ?", (key,)
                ).fetchone()[0],
            )
        return
    with private_schema() as dsn, PostgresStore.from_conn_string(dsn) as pg:
        pg.setup()

        def expires(key: str) -> Any:
            with pg._cursor() as cur:
                cur.execute("SELECT expires_at FROM plait_store WHERE key = %s", (key,))
                return cur.fetchone()["expires_at"]

        yield pg, expires


def _tick() -> None:
    """Wait until the clock has moved (the stores' timestamps come from it)."""
    start = time.time()
    while time.time() == start:
        pass


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_search_restarts_the_ttl_of_the_hits_that_have_one(kind: str, tmp_path: Path) -> None:
    with _store(kind, tmp_path) as (store, expires):
        store.put(("t",), "timed", {"v": 1}, ttl=10)
        store.put(("t",), "plain", {"v": 2})
        first = expires("timed")
        _tick()
        assert {h.key for h in store.search(("t",), refresh_ttl=False)} == {"timed", "plain"}
        assert expires("timed") == first
        assert {h.key for h in store.search(("t",), filter={"v": 1})} == {"timed"}
        second = expires("timed")
        assert second > first
        _tick()
        assert {h.key for h in store.search(("t",))} == {"timed", "plain"}
        assert expires("timed") > second
        assert expires("plain") is None


def test_postgres_store_on_a_connection_without_autocommit_still_commits_each_batch() -> None:
    with private_schema() as dsn:
        with psycopg.connect(dsn) as conn:  # autocommit off: the store opens transactions itself
            store = PostgresStore(conn)
            store.setup()
            store.put(("a",), "k", {"v": 1})
            assert store.get(("a",), "k") is not None
            assert store.list_namespaces() == [("a",)]
            with psycopg.connect(dsn, autocommit=True) as other:
                assert other.execute("SELECT count(*) FROM plait_store").fetchone() == (1,)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_list_namespaces_by_seeks_or_by_a_scan_finds_the_same(kind: str, tmp_path: Path) -> None:
    with _store(kind, tmp_path) as (store, _):
        for ns in [("a",), ("a", "x"), ("a-b",), ("ab",), ("a", "y", "z")]:
            store.put(ns, "k", {"v": 1})
        store.put(("gone",), "k", {"v": 1}, ttl=0.0001)  # expires 6 ms after it is written
        deadline = time.time() + 0.01
        while time.time() < deadline:  # until it has expired
            pass
        assert store.list_namespaces(prefix=("a",)) == [("a",), ("a", "x"), ("a", "y", "z")]
        assert store.list_namespaces(max_depth=1) == [("a",), ("a-b",), ("ab",)]
        assert store.list_namespaces(prefix=("a", "*"), max_depth=2) == [("a", "x"), ("a", "y")]
        many = [("n", f"{i:03}") for i in range(SEEKS + 6)]
        store.batch([PutOp(ns, "k", {"v": 1}) for ns in many])
        assert store.list_namespaces(prefix=("n",), limit=1000) == many
        assert store.list_namespaces(limit=1000, offset=2) == [("a", "y", "z"), ("a-b",), ("ab",), *many]
        assert store.list_namespaces(suffix=("005",)) == [("n", "005")]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_consecutive_gets_read_in_one_statement_answer_each_get(kind: str, tmp_path: Path) -> None:
    from plait.store.base import GetOp

    with _store(kind, tmp_path) as (store, expires):
        store.put(("t",), "timed", {"v": 1}, ttl=10)
        store.put(("t", "x"), "plain", {"v": 2})
        first = expires("timed")
        _tick()
        got = store.batch(
            [GetOp(("t",), "timed", refresh_ttl=False), GetOp(("t",), "none"), GetOp(("t", "x"), "plain")]
        )
        assert [g and g.value for g in got] == [{"v": 1}, None, {"v": 2}]
        assert expires("timed") == first
        got = store.batch(
            [
                GetOp(("t",), "timed"),
                GetOp(("t", "x"), "plain"),
                GetOp(("t",), "timed"),
                GetOp(("t", "x"), "gone"),
            ]
        )
        assert [g and (g.namespace, g.key) for g in got] == [
            (("t",), "timed"),
            (("t", "x"), "plain"),
            (("t",), "timed"),
            None,
        ]
        assert got[0] is not got[2] and got[0].value is not got[2].value  # type: ignore[union-attr]
        assert expires("timed") > first
        store.put(("t",), "timed", {"v": 3}, ttl=10)
        got = store.batch([GetOp(("t",), "timed"), PutOp(("t",), "timed", None), GetOp(("t",), "timed")])
        assert [g and g.value for g in got] == [{"v": 3}, None, None]
