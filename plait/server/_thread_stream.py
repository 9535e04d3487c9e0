"""``GET /threads/{thread_id}/stream`` (the SDK's ``threads.join_stream``): the events of the thread's runs.

As LangGraph's server: it follows each run of the thread that is in flight or starts after the
client joined, one after the other, and never ends by itself.  A run's events start with its
``metadata`` (``{"run_id", "attempt"}``) and end with ``metadata`` ``{"status": "run_done",
"run_id"}``.  ``stream_modes`` (LangGraph's query parameter; the SDK's ``stream_mode`` is not read,
as there) picks ``run_modes`` (every event the runs publish, the default; a run made with
``runs.wait`` publishes only its end) or ``lifecycle`` (the two ``metadata`` events only).
LangGraph's third mode, ``state_update`` (an event per ``threads.update_state``), is refused by
name: plait serve does not publish it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Annotated

from pydantic import Field
from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.responses import Response

from plait.server._api import Api, Query, check
from plait.server._data import runs
from plait.server._state import ServerState, state_of
from plait.server._stream import END
from plait.server._threads import found_thread
from plait.server._wire import dumps, now_iso

__all__ = ["api", "routes"]

_MODES = ("run_modes", "lifecycle")
_RECHECK = 1.0
"""Seconds between two looks at the thread's runs when nothing announced a change."""

api = Api("Threads")


def _modes(raw: str | None) -> set[str]:
    modes = {m.strip() for m in raw.split(",")} if raw else {"run_modes"}
    for mode in modes:
        if mode == "state_update":
            raise ValueError(
                "stream_modes=state_update is not implemented by plait serve; use run_modes or lifecycle"
            )
        if mode not in _MODES:
            raise ValueError(f"Invalid stream mode: {mode!r}; expected run_modes or lifecycle")
    return modes


class ThreadStreamQuery(Query):
    """Which events of the thread's runs to send."""

    stream_modes: Annotated[str, check(lambda v: _modes(v) and v)] | None = Field(
        None, description="``run_modes`` (every event, the default) and/or ``lifecycle``, comma-separated."
    )


def _wanted(modes: set[str], event: str) -> bool:
    return "run_modes" in modes or ("lifecycle" in modes and event == "metadata")


async def _next_run(state: ServerState, thread_id: str, since: str, seen: set[str]) -> str | None:
    """The thread's oldest run not followed yet that has started (in flight or begun after ``since``)."""
    for row in await runs.since_on_thread(state.db, thread_id, since):
        if row["run_id"] in seen:
            continue
        return None if row["status"] == "pending" else str(row["run_id"])  # in order: wait for it
    return None


async def _follow(
    state: ServerState, thread_id: str, modes: set[str], since: str
) -> AsyncIterator[dict[str, object]]:
    """The events of the thread's runs in flight or created from ``since`` (when the client joined) on."""
    seen: set[str] = set()
    while True:
        stir = state.broker.stir()  # taken first: a run starting during the look wakes the wait
        run_id = await _next_run(state, thread_id, since, seen)
        if run_id is None:
            # woken when a run starts or ends in this process or another worker announces one; the
            # timeout covers what none announces (a run another worker started without events yet)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stir.wait(), _RECHECK)
            continue
        seen.add(run_id)
        if _wanted(modes, "metadata"):
            yield {"event": "metadata", "data": dumps({"run_id": run_id, "attempt": 1}).decode()}
        async for _seq, event, data in state.broker.follow(run_id, 0):
            if event == END:
                break
            if _wanted(modes, event.split("|")[0]):
                yield {"event": event, "data": data.decode()}
        if _wanted(modes, "metadata"):
            yield {"event": "metadata", "data": dumps({"status": "run_done", "run_id": run_id}).decode()}


@api.get("/threads/{thread_id}/stream", "Join Thread Stream", query=ThreadStreamQuery, stream=True)
async def join_thread_stream(request: Request, query: ThreadStreamQuery) -> Response:
    """The events of the thread's runs in flight or started after the client joined, one run
    after the other, until the client leaves."""
    state = state_of(request)
    thread = await found_thread(request)
    modes, since = _modes(query.stream_modes), now_iso()
    return EventSourceResponse(
        _follow(state, thread["thread_id"], modes, since), headers={"Cache-Control": "no-store"}, ping=15
    )


routes = api.routes()
