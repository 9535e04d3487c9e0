"""``threads.search`` / ``threads.count`` answered by the database: typed metadata matches, order and pages."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from _serve_proc import Server
from langgraph_sdk import get_sync_client


@pytest.fixture(scope="module")
def server(server_on_both: Server) -> Server:
    return server_on_both


def test_metadata_matches_each_key_by_equal_value(server: Server) -> None:
    client = get_sync_client(url=server.url)
    tag = uuid.uuid4().hex
    kinds: dict[str, Any] = {
        "int": 1,
        "float": 1.0,
        "true": True,
        "text": "1",
        "null": None,
        "object": {"a": 1, "b": [1, 2]},
        "array": [1, 2],
    }
    made = {
        name: client.threads.create(metadata={"tag": tag, "n": v})["thread_id"] for name, v in kinds.items()
    }
    made["missing"] = client.threads.create(metadata={"tag": tag})["thread_id"]

    def found(n: Any) -> set[str]:
        ids = {t["thread_id"] for t in client.threads.search(metadata={"tag": tag, "n": n}, limit=100)}
        assert client.threads.count(metadata={"tag": tag, "n": n}) == len(ids)
        return ids

    assert found(1) == found(1.0) == {made["int"], made["float"]}  # numbers by value, not booleans
    assert found(True) == {made["true"]}
    assert found("1") == {made["text"]}
    assert found(None) == {made["null"]}  # a null value, not a missing key
    assert found({"b": [1, 2], "a": 1}) == {made["object"]}  # key order aside
    assert found({"a": 1}) == found([1]) == set()  # equal values, not containment
    assert found([1, 2]) == {made["array"]}
    assert client.threads.count(metadata={"tag": tag}) == len(made)
    by_ids = client.threads.search(metadata={"tag": tag}, ids=[made["int"], made["text"], made["int"]])
    assert sorted(t["thread_id"] for t in by_ids) == sorted([made["int"], made["text"]])
    assert client.threads.count(metadata={"tag": tag}, status="busy") == 0
    client.threads.update(made["int"], metadata={"n": 2})  # a changed metadata is found by its new value
    assert found(1) == {made["float"]} and found(2) == {made["int"]}
    client.threads.delete(made["float"])
    assert found(1) == set()


def test_sorted_and_paged_with_pagination_headers(server: Server) -> None:
    client = get_sync_client(url=server.url)
    tag = uuid.uuid4().hex
    ids = [client.threads.create(metadata={"tag": tag, "i": i})["thread_id"] for i in range(5)]
    client.threads.update(ids[1], metadata={"touched": True})  # newest updated_at

    def page(**query: Any) -> httpx.Response:
        answer = httpx.post(f"{server.url}/threads/search", json={"metadata": {"tag": tag}, **query})
        answer.raise_for_status()
        return answer

    first = page(sort_by="created_at", sort_order="asc", limit=2)
    assert [t["thread_id"] for t in first.json()] == ids[:2]
    assert first.headers["X-Pagination-Total"] == "5" and first.headers["X-Pagination-Next"] == "2"
    last = page(sort_by="created_at", sort_order="asc", limit=2, offset=4)
    assert [t["thread_id"] for t in last.json()] == ids[4:]
    assert last.headers["X-Pagination-Total"] == "5" and "X-Pagination-Next" not in last.headers
    beyond = page(limit=2, offset=9)
    assert beyond.json() == [] and beyond.headers["X-Pagination-Total"] == "5"
    assert [t["thread_id"] for t in page(limit=10).json()] == ids[::-1]  # newest first by default
    assert page(sort_by="updated_at", limit=1).json()[0]["thread_id"] == ids[1]
    assert [t["thread_id"] for t in page(sort_by="thread_id", sort_order="asc").json()] == sorted(ids)
    picked = page(
        sort_by="state_updated_at", sort_order="asc", limit=1, select=["thread_id", "metadata"]
    ).json()
    assert picked == [{"thread_id": ids[0], "metadata": {"tag": tag, "i": 0}}]
    assert httpx.post(f"{server.url}/threads/search", json={"sort_by": "nope"}).status_code == 422
