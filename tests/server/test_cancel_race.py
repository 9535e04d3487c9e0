"""Runs cancelled at any moment by a newer run (``multitask_strategy`` interrupt / rollback) never wedge a thread.

A chat UI sends a second run when the user types again; the first may not have begun, may be
mid-step or may be saving. Every run must end in a terminal status, every thread must go back to
idle, and fresh runs must still complete (a leaked job slot would stop them).
"""

from __future__ import annotations

import asyncio
import time

import pytest
from _serve_proc import Server
from langgraph_sdk import get_client
from langgraph_sdk.errors import NotFoundError

TERMINAL = {"success", "error", "interrupted", "timeout", "deleted"}  # a rolled-back run is deleted
THREADS = 12
HANG_GUARD = 120.0  # seconds: only so a wedged server fails the test instead of hanging it


def _msg(text: str) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": text}]}


async def _status(runs: object, thread_id: str, run_id: str) -> str:
    try:
        run = await runs.get(thread_id, run_id)  # type: ignore[attr-defined]
    except NotFoundError:
        return "deleted"
    return str(run["status"])


async def _settled(client: object, thread_id: str, run_ids: list[str]) -> list[str]:
    runs = client.runs  # type: ignore[attr-defined]
    deadline = time.monotonic() + HANG_GUARD
    while True:
        statuses = [await _status(runs, thread_id, run_id) for run_id in run_ids]
        thread = await client.threads.get(thread_id)  # type: ignore[attr-defined]
        if all(s in TERMINAL for s in statuses) and thread["status"] != "busy":
            return statuses
        assert time.monotonic() < deadline, (
            f"thread {thread_id} never settled: runs {statuses}, {thread['status']}"
        )
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("strategy", ["interrupt", "rollback"])
async def test_back_to_back_runs_all_settle_and_fresh_runs_complete(
    server_on_both: Server, strategy: str
) -> None:
    client = get_client(url=server_on_both.url)
    threads = [(await client.threads.create())["thread_id"] for _ in range(THREADS)]

    async def burst(thread_id: str) -> list[str]:
        ids: list[str] = []
        for i in range(3):  # the second cancels the first before or while it runs, the third the second
            run = await client.runs.create(
                thread_id, "agent", input=_msg(f"m{i}"), multitask_strategy=strategy
            )
            ids.append(run["run_id"])
        return ids

    bursts = await asyncio.gather(*(burst(t) for t in threads))
    for thread_id, run_ids in zip(threads, bursts, strict=True):
        statuses = await _settled(client, thread_id, run_ids)
        assert statuses[-1] == "success", statuses  # the last one is never cancelled
    # every slot came back: a run on each thread completes
    done = await asyncio.gather(*(client.runs.wait(t, "agent", input=_msg("fresh")) for t in threads))
    assert all(isinstance(out, dict) and out["messages"][-1]["content"] == "you said: fresh" for out in done)
