"""``search_order="written"``: the SQL stores order unranked search results as ``InMemoryStore`` does
(and LangGraph's server): namespaces in the order of their oldest item, each one's items in the order
they were first written; an update keeps an item's place, a deleted and re-put item moves to the end,
and a page is cut after the filter. (Where a namespace's oldest item is deleted, the SQL stores place
the namespace by the oldest item left; ``InMemoryStore`` keeps its place: not covered here.)"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from _stores import open_store

from plait.store.memory import InMemoryStore
from plait.store.sqlite import SqliteStore

WRITES: list[tuple[tuple[str, ...], str, dict[str, Any] | None]] = [
    (("o", "b"), "k1", {"v": 1}),
    (("o", "c"), "k2", {"v": 2}),
    (("o", "b"), "k3", {"v": 3}),
    (("o", "b"), "k1", {"v": 4}),  # an update keeps its place
    (("o", "a"), "k0", {"v": 5}),  # a namespace first written last comes last, whatever its name
    (("o", "c"), "k5", {"v": 6}),
    (("o", "c"), "k6", {"v": 9}),
    (("o", "c"), "k5", None),
    (("o", "c"), "k5", {"v": 7}),  # deleted and put again: after k6
    (("p",), "x", {"v": 8}),  # outside the prefix searched
]
SEARCHES: list[dict[str, Any]] = [
    {},
    {"limit": 2, "offset": 1},
    {"filter": {"v": {"$gt": 2}}},
    {"filter": {"v": {"$gt": 2}}, "limit": 2, "offset": 1},  # the page is cut after the filter
    {"filter": {"v": {"$ne": 5}}, "limit": 3, "offset": 2},
]


@pytest.fixture(params=["sqlite", "postgres"])
def sql_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def written(sql_kind: str, mode: str, tmp_path: Any) -> Iterator[Any]:
    with ExitStack() as exits:
        yield open_store(sql_kind, mode, tmp_path, exits, search_order="written")


def _keys(store: Any, **search: Any) -> list[str]:
    return [item.key for item in store.search(("o",), **search)]


def test_written_order_is_in_memory_order(written: Any) -> None:
    reference = InMemoryStore()
    for namespace, key, value in WRITES:
        for store in (reference, written):
            if value is None:
                store.delete(namespace, key)
            else:
                store.put(namespace, key, value)
    assert _keys(reference) == ["k1", "k3", "k2", "k6", "k5", "k0"]
    for search in SEARCHES:
        assert _keys(written, **search) == _keys(reference, **search), search


def test_an_unknown_order_is_refused_by_name(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match="search_order must be one of \\['updated', 'written'\\]"):
        with SqliteStore.from_conn_string(tmp_path / "s.db", search_order="newest"):  # type: ignore[arg-type]
            pass
