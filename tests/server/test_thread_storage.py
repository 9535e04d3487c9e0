"""``GET /threads/{thread_id}/storage`` (the bytes a thread's checkpoints take) against a real ``plait serve``,
on both databases."""

from __future__ import annotations

import asyncio
import uuid

import httpx
from _serve_proc import Server
from langgraph_sdk import get_client

GUARD = 60.0
"""Seconds a test may take before it is taken as hung."""


async def _finished_thread(server: Server) -> str:
    """A thread with one run done."""
    client = get_client(url=server.url)
    thread = await client.threads.create()
    await client.runs.wait(
        thread["thread_id"], "agent", input={"messages": [{"role": "user", "content": "hi"}]}
    )
    return thread["thread_id"]


async def test_thread_storage(server_on_both: Server) -> None:
    async with asyncio.timeout(GUARD):
        await _storage(server_on_both)


async def _storage(server: Server) -> None:
    client = get_client(url=server.url)
    empty = await client.threads.create()
    assert await client.http.get(f"/threads/{empty['thread_id']}/storage") == {
        "thread_id": empty["thread_id"],
        "total_bytes": 0,
        "checkpoints": {"count": 0, "bytes": 0},
        "channel_values": {"count": 0, "bytes": 0, "by_channel": {}},
        "pending_writes": {"count": 0, "bytes": 0},
    }
    thread_id = await _finished_thread(server)
    report = await client.http.get(f"/threads/{thread_id}/storage")
    history = await client.threads.get_history(thread_id)
    assert report["checkpoints"]["count"] == len(history)
    assert report["checkpoints"]["bytes"] > 0
    channels = report["channel_values"]["by_channel"]
    assert {"messages", "turns"} <= set(channels)
    assert report["channel_values"]["count"] == sum(c["versions"] for c in channels.values())
    parts = (
        report["checkpoints"]["bytes"] + report["channel_values"]["bytes"] + report["pending_writes"]["bytes"]
    )
    assert report["total_bytes"] == parts
    async with httpx.AsyncClient(base_url=server.url) as http:
        missing = await http.get(f"/threads/{uuid.uuid4()}/storage")
        malformed = await http.get("/threads/nope/storage")
    assert missing.status_code == 404
    assert (malformed.status_code, malformed.json()["detail"]) == (
        422,
        "Invalid thread ID: must be a UUID, got 'nope'",
    )
