"""Assistants' and crons' searches are filtered, sorted and paged by the database: page by page,
every sort field both ways, they answer what sorting the selected documents in Python answers."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from _serve_proc import Server
from langgraph_sdk import get_sync_client

_ASSISTANT_SORTS = ("assistant_id", "graph_id", "name", "created_at", "updated_at")
_CRON_SORTS = ("cron_id", "assistant_id", "thread_id", "created_at", "updated_at")


def _pages(url: str, body: dict[str, Any], size: int) -> tuple[list[dict[str, Any]], set[str]]:
    """Every page of a search (``size`` each), and the X-Pagination-Total headers they answered."""
    found: list[dict[str, Any]] = []
    totals: set[str] = set()
    offset = 0
    while True:
        got = httpx.post(url, json={**body, "limit": size, "offset": offset}, timeout=60)
        assert got.status_code == 200, got.text
        found += got.json()
        totals.add(got.headers["X-Pagination-Total"])
        if "X-Pagination-Next" not in got.headers:
            assert len(got.json()) <= size
            return found, totals
        offset = int(got.headers["X-Pagination-Next"])
        assert offset == len(found)


def _assistant_order(docs: list[dict[str, Any]], sort_by: str, order: str) -> list[str]:
    """The Python search's order: the newest first, then stably by ``sort_by``."""
    ranked = sorted(docs, key=lambda d: d["assistant_id"])
    ranked.sort(key=lambda d: d["created_at"], reverse=True)
    ranked.sort(key=lambda d: d[sort_by], reverse=order == "desc")
    return [d["assistant_id"] for d in ranked]


def test_assistant_search_pages_in_sql(server_on_both: Server) -> None:
    client = get_sync_client(url=server_on_both.url)
    tag = uuid.uuid4().hex
    made = [
        client.assistants.create(
            "agent",
            name=f"{'Bot' if i % 2 else 'bOT'} {i % 7:02d}",  # (names repeat: ties by created_at)
            metadata={"tag": tag, "odd": i % 2 == 1, "i": i},
        )
        for i in range(23)
    ]
    client.assistants.create("agent", name="Bot 01", metadata={"tag": uuid.uuid4().hex, "odd": True})
    url = f"{server_on_both.url}/assistants/search"
    odd = [d for d in made if d["metadata"]["odd"]]
    named = [d for d in made if d["name"].lower() == "bot 01"]
    cases: list[tuple[dict[str, Any], list[dict[str, Any]]]] = [
        ({"metadata": {"tag": tag}}, made),
        ({"metadata": {"tag": tag, "odd": True}, "graph_id": "agent"}, odd),
        ({"metadata": {"tag": tag, "absent": None}}, made),  # (a None value: the key absent)
        ({"metadata": {"tag": tag}, "name": "bot 01"}, named),
        ({"metadata": {"tag": tag}, "graph_id": "nope"}, []),
    ]
    for body, expected in cases:
        count = httpx.post(f"{server_on_both.url}/assistants/count", json=body, timeout=60)
        assert count.json() == len(expected)
        for sort_by in _ASSISTANT_SORTS:
            for order in ("asc", "desc"):
                wanted = {**body, "sort_by": sort_by, "sort_order": order}
                found, totals = _pages(url, wanted, 4)
                assert [d["assistant_id"] for d in found] == _assistant_order(expected, sort_by, order)
                assert totals == {str(len(expected))}
    picked = httpx.post(url, json={"metadata": {"tag": tag}, "limit": 2, "offset": 21, "select": ["name"]})
    assert picked.json() == [
        {"name": d["name"]} for d in sorted(made, key=lambda d: d["created_at"])[:2][::-1]
    ]
    assert picked.headers["X-Pagination-Total"] == "23" and "X-Pagination-Next" not in picked.headers
    beyond = httpx.post(url, json={"metadata": {"tag": tag}, "offset": 40})
    assert beyond.json() == [] and beyond.headers["X-Pagination-Total"] == "23"


def _cron_order(crons: list[dict[str, Any]], sort_by: str, order: str) -> list[str]:
    """The Python search's order: no value first ascending (last descending), ties by id."""
    ranked = sorted(crons, key=lambda c: c["cron_id"])
    ranked.sort(key=lambda c: (c[sort_by] is not None, c[sort_by] or ""), reverse=order == "desc")
    return [c["cron_id"] for c in ranked]


def test_cron_search_pages_in_sql(server_on_both: Server) -> None:
    client = get_sync_client(url=server_on_both.url)
    tag = uuid.uuid4().hex
    for i in range(9):
        extra = {"metadata": {"tag": tag, "odd": i % 2 == 1}, "input": {"messages": []}}
        if i % 3:
            client.crons.create("agent", schedule="0 9 * * *", **extra)
        else:
            thread = client.threads.create()["thread_id"]
            client.crons.create_for_thread(thread, "agent", schedule="0 9 * * *", **extra)
    url = f"{server_on_both.url}/runs/crons/search"
    every = client.crons.search(metadata={"tag": tag}, limit=100)
    assert len(every) == 9 and client.crons.count(metadata={"tag": tag}) == 9
    odd = [c for c in every if c["metadata"]["odd"]]
    assert client.crons.count(metadata={"tag": tag, "odd": True}) == len(odd) == 4
    for body, expected in (
        ({"metadata": {"tag": tag}}, every),
        ({"metadata": {"tag": tag, "odd": True}}, odd),
    ):
        for sort_by in _CRON_SORTS:
            for order in ("asc", "desc"):
                wanted = {**body, "sort_by": sort_by, "sort_order": order}
                found, totals = _pages(url, wanted, 2)
                assert [c["cron_id"] for c in found] == _cron_order(expected, sort_by, order)
                assert totals == {str(len(expected))}
