"""Tests for ``plait.store.base`` and ``plait.store.memory``."""

from __future__ import annotations

import inspect
import pickle
import threading
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from plait.store import memory
from plait.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from plait.store.memory import InMemoryStore

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


class Clock:
    """A settable replacement for ``plait.store.memory._now``."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, minutes: float) -> None:
        self.now += timedelta(minutes=minutes)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(memory, "_now", fake)
    return fake


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore()


def _keys(items: Iterable[Item]) -> list[tuple[tuple[str, ...], str]]:
    return [(item.namespace, item.key) for item in items]


# ---------------------------------------------------------------- items


def test_item_dict_equality_hash_and_repr() -> None:
    item = Item(value={"a": 1}, key="k", namespace=("x", "y"), created_at=T0, updated_at=T0.isoformat())
    assert item.updated_at == T0
    assert item.dict() == {
        "namespace": ["x", "y"],
        "key": "k",
        "value": {"a": 1},
        "created_at": T0.isoformat(),
        "updated_at": T0.isoformat(),
    }
    same = Item(value={"a": 1}, key="k", namespace=["x", "y"], created_at=T0, updated_at=T0)  # type: ignore[arg-type]
    assert item == same and hash(item) == hash(same) and same.namespace == ("x", "y")
    assert item != Item(value={"a": 2}, key="k", namespace=("x", "y"), created_at=T0, updated_at=T0)
    assert item != "not an item"
    assert repr(item).startswith("Item(namespace=['x', 'y'], key='k'")
    assert pickle.loads(pickle.dumps(item)) == item


def test_search_item_has_score() -> None:
    hit = SearchItem(("x",), "k", {"a": 1}, T0, T0, score=0.5)
    assert hit.score == 0.5 and hit.dict()["score"] == 0.5
    assert SearchItem(("x",), "k", {}, T0, T0).score is None
    assert isinstance(hit, Item)


def test_op_defaults_match_langgraph() -> None:
    assert GetOp(("a",), "k") == (("a",), "k", True)
    assert SearchOp(("a",)) == (("a",), None, 10, 0, None, True)
    assert PutOp(("a",), "k", {}) == (("a",), "k", {}, None, None)
    assert ListNamespacesOp() == (None, None, 100, 0)
    assert MatchCondition("prefix", ("a",)).match_type == "prefix"


def test_public_signatures() -> None:
    def shape(name: str) -> list[tuple[str, Any, Any]]:
        params = list(inspect.signature(getattr(BaseStore, name)).parameters.values())[1:]
        return [(p.name, p.kind.name, p.default) for p in params]

    for prefix in ("", "a"):
        assert [p[0] for p in shape(prefix + "get")] == ["namespace", "key", "refresh_ttl"]
        assert shape(prefix + "search")[0][:2] == ("namespace_prefix", "POSITIONAL_ONLY")
        assert [(n, d) for n, _, d in shape(prefix + "search")[1:]] == [
            ("query", None),
            ("filter", None),
            ("limit", 10),
            ("offset", 0),
            ("refresh_ttl", None),
        ]
        assert [p[0] for p in shape(prefix + "put")] == ["namespace", "key", "value", "index", "ttl"]
        assert [p[0] for p in shape(prefix + "delete")] == ["namespace", "key"]
        assert [(n, d) for n, _, d in shape(prefix + "list_namespaces")] == [
            ("prefix", None),
            ("suffix", None),
            ("max_depth", None),
            ("limit", 100),
            ("offset", 0),
        ]


# ---------------------------------------------------------------- put / get / delete


def test_new_instance_is_empty(store: InMemoryStore) -> None:
    store.put(("a",), "k", {"v": 1})
    fresh = InMemoryStore()
    assert fresh.get(("a",), "k") is None and fresh.list_namespaces() == []


def test_put_and_get(store: InMemoryStore, clock: Clock) -> None:
    store.put(("users", "u1"), "prefs", {"theme": "dark"})
    item = store.get(("users", "u1"), "prefs")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (("users", "u1"), "prefs", {"theme": "dark"})
    assert item.created_at == item.updated_at == T0
    assert store.get(("users", "u1"), "other") is None
    assert store.get(("users",), "prefs") is None


def test_overwrite_replaces_value_and_keeps_created_at(store: InMemoryStore, clock: Clock) -> None:
    store.put(("a",), "k", {"v": 1, "old": True})
    clock.advance(5)
    store.put(("a",), "k", {"v": 2})
    item = store.get(("a",), "k")
    assert item is not None and item.value == {"v": 2}
    assert item.created_at == T0 and item.updated_at == T0 + timedelta(minutes=5)


def test_values_are_copied(store: InMemoryStore) -> None:
    value = {"v": 1}
    store.put(("a",), "k", value)
    value["v"] = 99
    got = store.get(("a",), "k")
    assert got is not None and got.value == {"v": 1}
    got.value["v"] = 42
    assert store.get(("a",), "k").value == {"v": 1}  # type: ignore[union-attr]


def test_key_is_stringified(store: InMemoryStore) -> None:
    store.put(("a",), 7, {"v": 1})  # type: ignore[arg-type]
    assert store.get(("a",), "7") is not None


def test_delete(store: InMemoryStore) -> None:
    store.put(("a",), "k", {"v": 1})
    store.put(("a",), "j", {"v": 2})
    store.delete(("a",), "k")
    assert store.get(("a",), "k") is None and store.get(("a",), "j") is not None
    store.delete(("a",), "missing")
    store.delete(("nowhere",), "k")
    store.delete(("a",), "j")
    assert store.list_namespaces() == []


# ---------------------------------------------------------------- search


@pytest.fixture
def filled(store: InMemoryStore) -> InMemoryStore:
    store.put(("docs",), "d0", {"n": 0, "kind": "a", "meta": {"lang": "en"}, "tags": ["x", "y"]})
    store.put(("docs", "u1"), "d1", {"n": 1, "kind": "b", "meta": {"lang": "fr"}})
    store.put(("docs", "u1"), "d2", {"n": 2, "kind": "a"})
    store.put(("docs", "u2"), "d3", {"n": 3, "kind": "b", "title": "z"})
    store.put(("other",), "o1", {"n": 4, "kind": "a"})
    return store


def test_search_by_prefix(filled: InMemoryStore) -> None:
    assert _keys(filled.search(("docs", "u1"))) == [(("docs", "u1"), "d1"), (("docs", "u1"), "d2")]
    assert [i.key for i in filled.search(("docs",))] == ["d0", "d1", "d2", "d3"]
    assert [i.key for i in filled.search(())] == ["d0", "d1", "d2", "d3", "o1"]
    assert filled.search(("doc",)) == []
    assert filled.search(("docs", "u1", "deeper")) == []


def test_search_returns_search_items_and_ignores_query(filled: InMemoryStore) -> None:
    hits = filled.search(("docs",), query="totally unrelated")
    assert [i.key for i in hits] == ["d0", "d1", "d2", "d3"]
    assert all(isinstance(h, SearchItem) and h.score is None for h in hits)


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"kind": "a"}, ["d0", "d2"]),
        ({"kind": "a", "n": 2}, ["d2"]),
        ({"meta": {"lang": "fr"}}, ["d1"]),
        ({"tags": ["x", "y"]}, ["d0"]),
        ({"tags": ["x"]}, []),
        ({"title": None}, ["d0", "d1", "d2"]),
        ({"n": {"$eq": 1}}, ["d1"]),
        ({"n": {"$ne": 1}}, ["d0", "d2", "d3"]),
        ({"n": {"$gt": 1}}, ["d2", "d3"]),
        ({"n": {"$gte": 1}}, ["d1", "d2", "d3"]),
        ({"n": {"$lt": 1}}, ["d0"]),
        ({"n": {"$lte": 1}}, ["d0", "d1"]),
        ({"n": {"$gt": 0, "$lt": 3}}, ["d1", "d2"]),
        ({"title": {"$gt": 1}}, []),
        ({"kind": {"$gt": 1}}, []),
        ({"title": {"$ne": "z"}}, ["d0", "d1", "d2"]),
    ],
)
def test_search_filter(filled: InMemoryStore, flt: dict[str, Any], expected: list[str]) -> None:
    assert [i.key for i in filled.search(("docs",), filter=flt)] == expected


@pytest.mark.parametrize("flt", [{"n": {"$regex": "x"}}, {"n": {"$gt": 1, "plain": 2}}])
def test_search_bad_filter_raises(filled: InMemoryStore, flt: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        filled.search(("docs",), filter=flt)


def test_search_limit_and_offset(filled: InMemoryStore) -> None:
    assert [i.key for i in filled.search(("docs",), limit=2)] == ["d0", "d1"]
    assert [i.key for i in filled.search(("docs",), limit=2, offset=1)] == ["d1", "d2"]
    assert [i.key for i in filled.search(("docs",), offset=3)] == ["d3"]
    assert filled.search(("docs",), offset=10) == []
    assert filled.search(("docs",), limit=0) == []
    assert [i.key for i in filled.search(("docs",), filter={"kind": "a"}, limit=1, offset=1)] == ["d2"]


def test_default_search_limit_is_ten(store: InMemoryStore) -> None:
    for n in range(15):
        store.put(("many",), f"k{n:02}", {"n": n})
    assert len(store.search(("many",))) == 10


# ---------------------------------------------------------------- list_namespaces


@pytest.fixture
def tree(store: InMemoryStore) -> InMemoryStore:
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "e"), ("x", "b", "c"), ("x",)]:
        store.put(ns, "k", {"v": 1})
    return store


def test_list_namespaces_sorted(tree: InMemoryStore) -> None:
    assert tree.list_namespaces() == [("a", "b", "c"), ("a", "b", "d"), ("a", "e"), ("x",), ("x", "b", "c")]


def test_list_namespaces_prefix_suffix_and_wildcards(tree: InMemoryStore) -> None:
    assert tree.list_namespaces(prefix=("a", "b")) == [("a", "b", "c"), ("a", "b", "d")]
    assert tree.list_namespaces(suffix=("c",)) == [("a", "b", "c"), ("x", "b", "c")]
    assert tree.list_namespaces(prefix=("*", "b")) == [("a", "b", "c"), ("a", "b", "d"), ("x", "b", "c")]
    assert tree.list_namespaces(prefix=("a",), suffix=("d",)) == [("a", "b", "d")]
    assert tree.list_namespaces(suffix=("b", "*")) == [("a", "b", "c"), ("a", "b", "d"), ("x", "b", "c")]
    assert tree.list_namespaces(prefix=("a", "b", "c", "d")) == []


def test_list_namespaces_max_depth_limit_offset(tree: InMemoryStore) -> None:
    assert tree.list_namespaces(max_depth=1) == [("a",), ("x",)]
    assert tree.list_namespaces(max_depth=2) == [("a", "b"), ("a", "e"), ("x",), ("x", "b")]
    assert tree.list_namespaces(prefix=("a",), max_depth=2) == [("a", "b"), ("a", "e")]
    assert tree.list_namespaces(limit=2) == [("a", "b", "c"), ("a", "b", "d")]
    assert tree.list_namespaces(limit=2, offset=3) == [("x",), ("x", "b", "c")]


def test_list_namespaces_drops_emptied_namespace(tree: InMemoryStore) -> None:
    tree.delete(("a", "e"), "k")
    assert ("a", "e") not in tree.list_namespaces()
    tree.get(("never", "written"), "k")
    assert ("never", "written") not in tree.list_namespaces()


# ---------------------------------------------------------------- namespace validation


@pytest.mark.parametrize(
    ("namespace", "needle"),
    [
        (("a", "b.c"), "'b.c'"),
        (("a", ""), "''"),
        (("a", 3), "3"),
        (("a", "x\x00y"), "NUL"),
        (["a"], "tuple"),
        ((), "empty"),
        (("langgraph", "x"), "langgraph"),
    ],
)
def test_put_rejects_bad_namespace(store: InMemoryStore, namespace: Any, needle: str) -> None:
    with pytest.raises(InvalidNamespaceError, match=needle) as info:
        store.put(namespace, "k", {"v": 1})
    assert isinstance(info.value, ValueError)
    assert store.list_namespaces() == []


@pytest.mark.parametrize("namespace", [("a", "b.c"), ("",), ("a", None), "a"])
def test_reads_and_deletes_reject_bad_labels(store: InMemoryStore, namespace: Any) -> None:
    calls: list[Any] = [
        lambda: store.get(namespace, "k"),
        lambda: store.delete(namespace, "k"),
        lambda: store.search(namespace),
    ]
    if not isinstance(namespace, str):  # a str pattern is a sequence of labels, as in LangGraph
        calls += [
            lambda: store.list_namespaces(prefix=namespace),
            lambda: store.list_namespaces(suffix=namespace),
        ]
    for call in calls:
        with pytest.raises(InvalidNamespaceError):
            call()


def test_empty_prefix_is_allowed_for_reads(store: InMemoryStore) -> None:
    assert store.get((), "k") is None
    assert store.search(()) == []


def test_batch_validates_ops_before_running_any(store: InMemoryStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("ok",), "k", {"v": 1}), PutOp(("bad.ns",), "k", {"v": 1})])
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp((), "k", {"v": 1})])
    with pytest.raises(ValueError, match="Unknown operation type"):
        store.batch([PutOp(("ok",), "k", {"v": 1}), "not an op"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="mappings"):
        store.batch([PutOp(("ok",), "k", ["not", "a", "dict"])])  # type: ignore[arg-type]
    assert store.get(("ok",), "k") is None


# ---------------------------------------------------------------- batch semantics


def test_batch_runs_ops_in_order(store: InMemoryStore) -> None:
    results = store.batch(
        [
            GetOp(("a",), "k"),
            PutOp(("a",), "k", {"v": 1}),
            GetOp(("a",), "k"),
            SearchOp(("a",)),
            ListNamespacesOp(),
            PutOp(("a",), "k", None),
            GetOp(("a",), "k"),
        ]
    )
    assert results[0] is None and results[1] is None and results[5] is None and results[6] is None
    assert isinstance(results[2], Item) and results[2].value == {"v": 1}
    assert _keys(results[3]) == [(("a",), "k")]  # type: ignore[arg-type]
    assert results[4] == [("a",)]


# ---------------------------------------------------------------- async twins


async def test_async_twins(store: InMemoryStore) -> None:
    await store.aput(("a", "b"), "k", {"v": 1})
    await store.aput(("a", "c"), "j", {"v": 2})
    item = await store.aget(("a", "b"), "k")
    assert item is not None and item.value == {"v": 1}
    assert [i.key for i in await store.asearch(("a",), filter={"v": 2})] == ["j"]
    assert await store.alist_namespaces(prefix=("a",), max_depth=2) == [("a", "b"), ("a", "c")]
    await store.adelete(("a", "b"), "k")
    assert await store.aget(("a", "b"), "k") is None
    assert (await store.abatch([GetOp(("a", "c"), "j")]))[0] is not None
    with pytest.raises(InvalidNamespaceError):
        await store.aput((), "k", {})


# ---------------------------------------------------------------- TTL and index


def test_index_ranks_a_query_and_scores_hits() -> None:
    store = InMemoryStore(index={"dims": 2, "embed": lambda texts: [[float("cat" in t), 1.0] for t in texts]})
    store.put(("a",), "dog", {"text": "dog"})
    store.put(("a",), "cat", {"text": "cat"})
    hits = store.search(("a",), query="cat")
    assert [h.key for h in hits] == ["cat", "dog"]
    assert hits[0].score == pytest.approx(1.0) and hits[1].score == pytest.approx(0.7071, abs=1e-3)
    assert all(h.score is None for h in store.search(("a",)))


def test_put_index_argument_without_an_index_has_no_effect(store: InMemoryStore) -> None:
    store.put(("a",), "k", {"v": 1}, index=False)
    store.put(("a",), "j", {"v": 1}, index=["v"])
    assert len(store.search(("a",))) == 2


def test_ttl_expires_items(store: InMemoryStore, clock: Clock) -> None:
    store.put(("a",), "short", {"v": 1}, ttl=1)
    store.put(("a",), "forever", {"v": 2})
    clock.advance(0.5)
    assert store.get(("a",), "short", refresh_ttl=False) is not None
    clock.advance(0.6)
    assert store.get(("a",), "short") is None
    assert [i.key for i in store.search(("a",))] == ["forever"]
    store.delete(("a",), "forever")
    assert store.list_namespaces() == []


def test_reads_refresh_ttl(store: InMemoryStore, clock: Clock) -> None:
    store.put(("a",), "k", {"v": 1}, ttl=1)
    for _ in range(5):
        clock.advance(0.8)
        assert store.get(("a",), "k") is not None
    clock.advance(0.8)
    assert store.search(("a",))  # refreshes too
    clock.advance(0.8)
    assert store.get(("a",), "k", refresh_ttl=False) is not None
    clock.advance(0.3)
    assert store.get(("a",), "k") is None


def test_ttl_config_defaults(clock: Clock) -> None:
    store = InMemoryStore(ttl={"default_ttl": 2, "refresh_on_read": False})
    store.put(("a",), "k", {"v": 1})
    store.put(("a",), "never", {"v": 1}, ttl=None)
    clock.advance(1.5)
    assert store.get(("a",), "k") is not None  # not refreshed: refresh_on_read is False
    clock.advance(1)
    assert store.get(("a",), "k") is None
    assert store.get(("a",), "never") is not None


def test_put_without_ttl_clears_it(store: InMemoryStore, clock: Clock) -> None:
    store.put(("a",), "k", {"v": 1}, ttl=1)
    store.put(("a",), "k", {"v": 2})
    clock.advance(10)
    assert store.get(("a",), "k") is not None


def test_many_refreshes_keep_heap_bounded(store: InMemoryStore, clock: Clock) -> None:
    store.put(("a",), "k", {"v": 1}, ttl=1)
    for _ in range(500):
        store.get(("a",), "k")
    assert len(store._heap) < 100


class _NoTTLStore(BaseStore):
    def __init__(self) -> None:
        self.ops: list[Op] = []

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        self.ops.extend(ops)
        return [None]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return self.batch(ops)


def test_ttl_on_store_without_support_raises() -> None:
    custom = _NoTTLStore()
    with pytest.raises(NotImplementedError, match="TTL is not supported by _NoTTLStore"):
        custom.put(("a",), "k", {}, ttl=5)
    custom.put(("a",), "k", {}, ttl=None)
    custom.delete(("a",), "k")
    assert custom.ops == [PutOp(("a",), "k", {}), PutOp(("a",), "k", None)]


# ---------------------------------------------------------------- threads


def test_concurrent_writers(store: InMemoryStore) -> None:
    def writer(worker: int) -> None:
        for n in range(200):
            store.put(("w", str(worker)), str(n), {"n": n})
            store.search(("w",), limit=5)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(store.list_namespaces()) == 8
    assert sum(len(store.search(("w", str(w)), limit=1000)) for w in range(8)) == 1600
