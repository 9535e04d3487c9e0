"""SQLite store specifics: sqlite-vec where the driver can load extensions, the one-time warning otherwise."""

from __future__ import annotations

import importlib.util
import sqlite3
import warnings
from pathlib import Path

import pytest

from plait.store import _rank
from plait.store._rank import ExactScanWarning
from plait.store.sqlite import SqliteStore


def embed(texts: list[str]) -> list[list[float]]:
    return [[float("cat" in t), float("dog" in t), 0.1] for t in texts]


def test_sqlite_vec_ranks_in_sql_on_a_driver_that_loads_extensions(tmp_path: Path) -> None:
    pysqlite3 = pytest.importorskip("pysqlite3.dbapi2")  # a sqlite3 build with loadable extensions
    conn = pysqlite3.connect(str(tmp_path / "vec.db"), check_same_thread=False, isolation_level=None)
    store = SqliteStore(conn, index={"dims": 3, "embed": embed, "fields": ["text"]})
    assert store.engine.d.vec is True  # type: ignore[attr-defined]
    store.put(("m",), "cat", {"text": "cat"})
    store.put(("m",), "dog", {"text": "dog"})
    store.put(("m",), "raw", {"text": "dog"}, index=False)
    hits = store.search(("m",), query="dog")
    assert [h.key for h in hits] == ["dog", "cat", "raw"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5) and hits[2].score is None
    assert [h.key for h in store.search(("m",), query="dog", filter={"text": "cat"})] == ["cat"]
    conn.close()


def test_exact_scan_is_announced_once(tmp_path: Path) -> None:
    if hasattr(sqlite3.connect(":memory:"), "enable_load_extension"):
        pytest.skip("this interpreter loads SQLite extensions: sqlite-vec is used, nothing to announce")
    _rank._WARNED.discard("sqlite-extensions")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for name in ("a.db", "b.db"):
            with SqliteStore.from_conn_string(tmp_path / name, index={"dims": 3, "embed": embed}) as store:
                store.put(("m",), "k", {"text": "cat"})
                assert store.search(("m",), query="cat")[0].key == "k"
    found = [w for w in seen if issubclass(w.category, ExactScanWarning)]
    assert len(found) == 1 and "sqlite-vec" in str(found[0].message)


def test_bad_arguments_say_how_to_fix(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="from_conn_string"):
        SqliteStore("not a connection")  # type: ignore[arg-type]
    aiosqlite = pytest.importorskip("aiosqlite")
    with pytest.raises(TypeError, match="aiosqlite"):
        SqliteStore(aiosqlite.Connection(lambda: sqlite3.connect(":memory:"), 64))
    with pytest.raises(NotImplementedError, match="deserializer"):
        SqliteStore(sqlite3.connect(":memory:"), deserializer=str)
    with pytest.raises(TypeError, match="dims"):
        SqliteStore(sqlite3.connect(":memory:"), index={"dims": 0, "embed": embed})
    if importlib.util.find_spec("langchain") is not None:
        return  # LangChain's init_embeddings is there: the model string would be used
    with pytest.raises(ImportError, match="init_embeddings"):
        SqliteStore(sqlite3.connect(":memory:"), index={"dims": 3, "embed": "openai:text-embedding-3-small"})


def test_reopening_with_other_dims_is_refused_and_keeps_the_data(tmp_path: Path) -> None:
    from plait.store.base import EmbeddingDimensionError

    with SqliteStore.from_conn_string(tmp_path / "d.db", index={"dims": 3, "embed": embed}) as store:
        store.put(("m",), "k", {"text": "cat"})
    with SqliteStore.from_conn_string(tmp_path / "d.db", index={"dims": 4, "embed": embed}) as other:
        with pytest.raises(EmbeddingDimensionError, match="3-dimension"):
            other.get(("m",), "k")
    with SqliteStore.from_conn_string(tmp_path / "d.db", index={"dims": 3, "embed": embed}) as store:
        assert store.search(("m",), query="cat")[0].key == "k"
