"""``GET /threads/{thread_id}/storage``: the bytes a thread's checkpoints take, as LangGraph's server
reports them: its checkpoints (each with its metadata), its channel values (all versions kept, per
channel) and its pending writes, and their total.
"""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response

from plait.server._api import Api
from plait.server._data import checkpoints
from plait.server._http import json_response
from plait.server._state import ServerState, state_of
from plait.server._threads import found_thread
from plait.server._wire import ApiError

__all__ = ["ThreadStorage", "api", "routes"]

api = Api("Threads")


class Usage(BaseModel):
    """How many rows, and their bytes."""

    count: int
    bytes: int


class ChannelUsage(BaseModel):
    """A channel's stored values: how many versions, and their bytes."""

    versions: int
    bytes: int


class ChannelValues(Usage):
    """The channel values of every checkpoint, and per channel."""

    by_channel: dict[str, ChannelUsage]


class ThreadStorage(BaseModel):
    """The bytes a thread's checkpoints take."""

    thread_id: str
    total_bytes: int
    checkpoints: Usage
    channel_values: ChannelValues
    pending_writes: Usage


async def _usage(state: ServerState, thread_id: str) -> checkpoints.Usage:
    saver: Any = state.saver
    if state.settings.is_postgres:
        return await checkpoints.postgres_usage(state.db, thread_id)
    if not isinstance(getattr(saver, "conn", None), sqlite3.Connection):
        raise ApiError(
            501, "checkpoint storage is reported only for plait serve's own SQLite or PostgreSQL saver"
        )
    return await asyncio.to_thread(checkpoints.sqlite_usage, saver.conn, saver.lock, thread_id)


@api.get("/threads/{thread_id}/storage", "Get Thread Storage", response=ThreadStorage)
async def storage(request: Request) -> Response:
    """Bytes the thread's checkpoints take: checkpoints, channel values (per channel), pending writes."""
    thread = await found_thread(request)
    (count, size), channels, (writes, written) = await _usage(state_of(request), thread["thread_id"])
    by_channel = {name: {"versions": n, "bytes": b} for name, n, b in channels}
    channel_bytes = sum(b for _, _, b in channels)
    return json_response(
        {
            "thread_id": thread["thread_id"],
            "total_bytes": size + channel_bytes + written,
            "checkpoints": {"count": count, "bytes": size},
            "channel_values": {
                "count": sum(n for _, n, _ in channels),
                "bytes": channel_bytes,
                "by_channel": by_channel,
            },
            "pending_writes": {"count": writes, "bytes": written},
        }
    )


routes = api.routes()
