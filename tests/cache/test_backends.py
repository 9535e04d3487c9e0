"""InMemoryCache and SqliteCache: namespaces, ttl, clear, sync and async (a real SQLite file)."""

from __future__ import annotations

import asyncio
import pathlib
import time
from collections.abc import Iterator
from typing import Any

import pytest

from plait.cache.base import BaseCache
from plait.cache.memory import InMemoryCache
from plait.cache.sqlite import SqliteCache

A = ("__pregel_ns_writes", "mod.fn", "a")
B = ("__pregel_ns_writes", "mod.fn", "b")


@pytest.fixture(params=["memory", "sqlite"])
def cache(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[BaseCache[Any]]:
    if request.param == "memory":
        yield InMemoryCache()
        return
    with SqliteCache(path=str(tmp_path / "cache.db")) as made:
        yield made


def test_set_get_by_namespace_and_key(cache: BaseCache[Any]) -> None:
    cache.set({(A, "k1"): ({"x": [1, 2]}, None), (B, "k1"): ("other", None)})
    assert cache.get([(A, "k1"), (B, "k1"), (A, "missing")]) == {(A, "k1"): {"x": [1, 2]}, (B, "k1"): "other"}
    assert cache.get([]) == {}


def test_values_are_copies(cache: BaseCache[Any]) -> None:
    value = {"items": [1]}
    cache.set({(A, "k"): (value, None)})
    value["items"].append(2)
    got = cache.get([(A, "k")])[(A, "k")]
    assert got == {"items": [1]}
    got["items"].append(3)
    assert cache.get([(A, "k")])[(A, "k")] == {"items": [1]}


def test_ttl_expires_entries(cache: BaseCache[Any]) -> None:
    started = time.monotonic()
    cache.set({(A, "short"): (1, 1), (A, "forever"): (2, None)})
    written = time.monotonic()
    got = cache.get([(A, "short")])
    if time.monotonic() - started < 1:  # still within its second (by the test's clock, started first)
        assert got == {(A, "short"): 1}
    time.sleep(max(0.0, written + 1.1 - time.monotonic()))  # past it: expiry is a lower bound
    assert cache.get([(A, "short"), (A, "forever")]) == {(A, "forever"): 2}


def test_bad_ttl_is_refused(cache: BaseCache[Any]) -> None:
    with pytest.raises(ValueError, match="ttl"):
        cache.set({(A, "k"): (1, -5)})
    assert cache.get([(A, "k")]) == {}


def test_clear_namespaces_or_everything(cache: BaseCache[Any]) -> None:
    cache.set({(A, "k"): (1, None), (B, "k"): (2, None)})
    cache.clear([A])
    assert cache.get([(A, "k"), (B, "k")]) == {(B, "k"): 2}
    cache.clear()
    assert cache.get([(B, "k")]) == {}


def test_async_twins(cache: BaseCache[Any]) -> None:
    async def scenario() -> None:
        await cache.aset({(A, "k"): ("v", None), (B, "k"): ("w", None)})
        assert await cache.aget([(A, "k")]) == {(A, "k"): "v"}
        await cache.aclear([A])
        assert await cache.aget([(A, "k"), (B, "k")]) == {(B, "k"): "w"}
        await cache.aclear()
        assert await cache.aget([(B, "k")]) == {}

    asyncio.run(scenario())


def test_sqlite_cache_outlives_its_connection(tmp_path: pathlib.Path) -> None:
    path = str(tmp_path / "shared.db")
    with SqliteCache(path=path) as first:
        first.set({(A, "k"): ([1, "two"], None)})
    with SqliteCache(path=path) as second:
        assert second.get([(A, "k")]) == {(A, "k"): [1, "two"]}
