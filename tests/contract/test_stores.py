"""One behaviour contract for every long-term store: memory, SQLite, PostgreSQL; sync and async APIs.

Semantic search runs on memory, SQLite, a private pgvector server (HNSW) and the
shared PostgreSQL server, which has no pgvector (the exact-scan fallback).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from _stores import open_store
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plait.store._filter import matches
from plait.store.base import (
    EmbeddingDimensionError,
    GetOp,
    InvalidNamespaceError,
    InvalidValueError,
    PutOp,
    SearchOp,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore::plait.store._rank.ExactScanWarning"
)  # asserted in tests/store


@pytest.fixture
def make(kind: str, mode: str, tmp_path: Any) -> Iterator[Any]:
    with ExitStack() as exits:
        yield lambda **kw: open_store(kind, mode, tmp_path, exits, **kw)


def keys(hits: list[Any]) -> set[str]:
    return {h.key for h in hits}


# -- items ---------------------------------------------------------------------------------------------


def test_put_get_overwrite_delete(make: Any) -> None:
    store = make()
    assert store.get(("users", "u1"), "profile") is None
    store.put(("users", "u1"), "profile", {"name": "Ann", "tags": ["a", "b"], "n": {"x": 1.5, "y": None}})
    first = store.get(("users", "u1"), "profile")
    assert first.value == {"name": "Ann", "tags": ["a", "b"], "n": {"x": 1.5, "y": None}}
    assert first.namespace == ("users", "u1") and first.key == "profile"
    assert first.created_at.tzinfo is not None and first.created_at == first.updated_at
    time.sleep(0.01)
    store.put(("users", "u1"), "profile", {"name": "Bo"})
    second = store.get(("users", "u1"), "profile")
    assert second.value == {"name": "Bo"} and second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    store.delete(("users", "u1"), "profile")
    store.delete(("users", "u1"), "missing")
    assert store.get(("users", "u1"), "profile") is None


def test_batch_runs_in_order_and_answers_each_op(make: Any) -> None:
    store = make()
    results = store.batch(
        [
            PutOp(("a",), "k", {"v": 1}),
            GetOp(("a",), "k"),
            PutOp(("a",), "k", {"v": 2}),
            PutOp(("a",), "k", {"v": 3}),
            SearchOp(("a",)),
            PutOp(("a",), "k", None),
            GetOp(("a",), "k"),
        ]
    )
    assert results[0] is None and results[1].value == {"v": 1}
    assert [h.value for h in results[4]] == [{"v": 3}]
    assert results[6] is None


def test_search_prefix_limit_offset(make: Any) -> None:
    store = make()
    for i in range(7):
        store.put(("docs", "a" if i < 5 else "b"), f"k{i}", {"i": i})
    store.put(("docsx",), "other", {"i": 99})
    assert len(store.search(("docs",), limit=100)) == 7
    assert keys(store.search(("docs", "b"))) == {"k5", "k6"}
    pages = [store.search(("docs",), limit=3, offset=o) for o in (0, 3, 6)]
    assert [len(p) for p in pages] == [3, 3, 1]
    assert set().union(*(keys(p) for p in pages)) == {f"k{i}" for i in range(7)}
    assert len(store.search((), limit=100)) == 8
    assert all(h.score is None for h in store.search(("docs",)))


def test_search_filters(make: Any) -> None:
    store = make()
    store.put(("f",), "a", {"n": 1, "s": "apple", "b": True, "z": None, "o": {"x": 1, "y": 2}})
    store.put(("f",), "b", {"n": 2.5, "s": "banana", "b": False, "l": [1, 2]})
    store.put(("f",), "c", {"n": "3", "s": "cherry"})

    def find(f: dict[str, Any]) -> set[str]:
        return keys(store.search(("f",), filter=f))

    assert find({"n": 1}) == {"a"} and find({"n": {"$eq": 1.0}}) == {"a"}
    assert find({"n": {"$gt": 1}}) == {"b"} and find({"n": {"$gte": 1, "$lt": 3}}) == {"a", "b"}
    assert find({"n": {"$ne": 1}}) == {"b", "c"} and find({"n": {"$lte": "3"}}) == {"c"}
    assert find({"s": {"$gt": "b"}}) == {"b", "c"} and find({"s": "cherry"}) == {"c"}
    assert find({"b": True}) == {"a"} and find({"b": 1}) == set()
    assert find({"z": None}) == {"b", "c", "a"} and find({"missing": {"$ne": 5}}) == {"a", "b", "c"}
    assert find({"o": {"x": 1}}) == {"a"} and find({"l": [1, 2]}) == {"b"}
    with pytest.raises(ValueError, match="Unsupported filter operator"):
        store.search(("f",), filter={"n": {"$in": [1]}})


def test_list_namespaces(make: Any) -> None:
    store = make()
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("b", "b", "c"), ("a", "b", "c", "d")]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces() == sorted(
        [("a", "b", "c"), ("a", "b", "c", "d"), ("a", "b", "d"), ("a", "x"), ("b", "b", "c")]
    )
    assert store.list_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "c", "d"),
        ("a", "b", "d"),
    ]
    assert store.list_namespaces(suffix=("c",)) == [("a", "b", "c"), ("b", "b", "c")]
    assert store.list_namespaces(prefix=("*", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "c", "d"),
        ("a", "b", "d"),
        ("b", "b", "c"),
    ]
    assert store.list_namespaces(max_depth=2) == [("a", "b"), ("a", "x"), ("b", "b")]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "c", "d"), ("a", "b", "d")]
    store.delete(("a", "x"), "k")
    assert ("a", "x") not in store.list_namespaces()


# -- bad input ------------------------------------------------------------------------------------------


def test_bad_input_raises_typed_errors_and_loses_nothing(make: Any) -> None:
    store = make()
    store.put(("keep",), "k", {"v": 1})
    for ns in [(), ("",), ("a.b",), ("langgraph", "x")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(ns, "k", {"v": 2})
    with pytest.raises(InvalidValueError, match="not JSON"):
        store.put(("keep",), "k", {"v": object()})
    with pytest.raises(InvalidValueError, match="JSON cannot hold"):
        store.batch([PutOp(("keep",), "k", None), PutOp(("keep",), "j", {"v": float("nan")})])
    with pytest.raises(InvalidValueError, match="keys are strings"):
        store.put(("keep",), "k", {"v": {1: 2}})
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("keep",), "k", None), PutOp(("bad.label",), "x", {"v": 1})])
    assert store.get(("keep",), "k").value == {"v": 1}
    assert len(store.search(())) == 1


# -- TTL -----------------------------------------------------------------------------------------------

TICK = 1.5 / 60  # minutes: 1.5 s
TICK_S = 1.5


def _sleep_until(moment: float) -> None:
    """Sleep until ``time.monotonic()`` reaches ``moment`` (an expiry is a lower bound: load only adds)."""
    time.sleep(max(0.0, moment - time.monotonic()))


def test_ttl_expiry_refresh_and_sweep(make: Any) -> None:
    """What must have expired is asserted after its time; what must still be there only while the
    test's own clock proves it (measured from before the write or read that set its expiry)."""
    store = make(ttl={"default_ttl": TICK, "refresh_on_read": True})
    start = time.monotonic()
    store.put(("t",), "default", {"v": 1})
    store.put(("t",), "forever", {"v": 2}, ttl=None)
    store.put(("t",), "read", {"v": 3})
    store.put(("u",), "gone", {"v": 4}, ttl=TICK)
    written = time.monotonic()  # the expiries were set before this
    _sleep_until(start + 0.9)
    refreshed = time.monotonic()
    read = store.get(("t",), "read")  # refreshed: 1.5 s from now
    default = store.get(("t",), "default", refresh_ttl=False)
    read_until = time.monotonic()  # the refresh happened before this
    if time.monotonic() - start < TICK_S:
        assert read is not None and default is not None
    _sleep_until(written + TICK_S + 0.1)
    assert store.get(("t",), "default") is None and store.get(("u",), "gone") is None
    found = keys(store.search(("t",), refresh_ttl=False))
    if read is not None and time.monotonic() - refreshed < TICK_S:
        assert found == {"forever", "read"}
    else:
        assert found in ({"forever", "read"}, {"forever"})
    assert store.list_namespaces() == [("t",)]
    _sleep_until(read_until + TICK_S + 0.1)
    assert store.sweep_ttl() >= 0
    assert keys(store.search((), refresh_ttl=False)) == {"forever"}
    store.put(("t",), "default", {"v": 5}, ttl=10)
    assert store.get(("t",), "default").value == {"v": 5}


def test_omit_expired_false_is_refused_by_name(make: Any) -> None:
    """LangGraph's stores return expired items until swept when asked to; plait never returns them,
    so the setting is refused rather than ignored."""
    with pytest.raises(NotImplementedError, match="omit_expired"):
        make(ttl={"default_ttl": TICK, "omit_expired": False})
    assert make(ttl={"default_ttl": TICK, "omit_expired": True}).get(("t",), "k") is None


# -- semantic search ------------------------------------------------------------------------------------

WORDS = ["cat", "dog", "fish", "bird"]


def embed(texts: list[str]) -> list[list[float]]:
    return [[float(w in t.lower()) for w in WORDS] + [0.1] for t in texts]


@pytest.fixture(params=["memory", "sqlite", "pgvector", "postgres"])
def vkind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def vmake(vkind: str, mode: str, tmp_path: Any) -> Iterator[Any]:
    with ExitStack() as exits:
        yield lambda **kw: open_store(vkind, mode, tmp_path, exits, **kw)


def test_semantic_search_ranks_scores_and_keeps_unindexed(vmake: Any) -> None:
    store = vmake(index={"dims": 5, "embed": embed, "fields": ["text"]})
    store.put(("m",), "cat", {"text": "my cat", "n": 1})
    store.put(("m",), "dog", {"text": "a dog", "n": 2})
    store.put(("m",), "both", {"text": "cat and dog", "n": 3})
    store.put(("m",), "raw", {"text": "dog dog"}, index=False)
    store.put(
        ("m",),
        "fields",
        {"text": "nothing", "pets": [{"kind": "fish"}, {"kind": "bird"}]},
        index=["pets[*].kind"],
    )
    hits = store.search(("m",), query="dog")
    assert [h.key for h in hits][:2] == ["dog", "both"] and hits[0].score == pytest.approx(1.0, abs=1e-3)
    assert hits[-1].key == "raw" and hits[-1].score is None and len(hits) == 5
    assert [h.key for h in store.search(("m",), query="bird", limit=1)] == ["fields"]
    assert [h.key for h in store.search(("m",), query="dog", filter={"n": {"$gte": 2}})] == ["dog", "both"]
    tail = store.search(("m",), query="dog", offset=3, limit=5)
    assert [h.key for h in tail][-1] == "raw" and len(tail) == 2
    store.put(("m",), "dog", {"text": "a cat now", "n": 2})
    assert store.search(("m",), query="cat", limit=1)[0].key in {"cat", "dog"}
    store.delete(("m",), "dog")
    assert "dog" not in keys(store.search(("m",), query="dog"))


def test_wrong_dimensions_store_nothing(vmake: Any) -> None:
    store = vmake(index={"dims": 3, "embed": embed})
    with pytest.raises(EmbeddingDimensionError, match="dims"):
        store.put(("m",), "k", {"text": "cat"})
    assert store.search(()) == []


# -- filters agree with the reference matcher (hypothesis) ------------------------------------------------

scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.sampled_from([0.5, -1.5, 2.0]),
    st.sampled_from(["", "a", "b", "ab", "é"]),
)
OPS = ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("mode", ["sync"])
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    values=st.lists(st.dictionaries(st.sampled_from(["x", "y"]), scalar, max_size=2), min_size=1, max_size=6),
    key=st.sampled_from(["x", "y"]),
    op=st.sampled_from([*OPS, "plain"]),
    arg=scalar,
)
def test_filters_match_the_reference(make: Any, values: list[Any], key: str, op: str, arg: Any) -> None:
    store = make()
    ns = ("h", uuid.uuid4().hex)  # one store serves every example
    store.batch([PutOp(ns, str(i), v) for i, v in enumerate(values)])
    condition = {key: arg if op == "plain" else {op: arg}}
    expected = {str(i) for i, v in enumerate(values) if matches(v, condition)}
    assert keys(store.search(ns, filter=condition, limit=100)) == expected
