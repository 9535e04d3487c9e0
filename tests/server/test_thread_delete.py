"""Deleting a thread whose checkpoints cannot be deleted: the thread stays whole, and a retry finishes it.

On a real server state (SQLite files), called directly. The checkpoint saver's writes table is
renamed away by another connection, so the saver's delete fails as a broken database would.
"""

from __future__ import annotations

import asyncio
import pathlib
import sqlite3
import time
import uuid
from typing import Any

import pytest

from plait.checkpoint.base import empty_checkpoint
from plait.server._config import GraphSpec, Settings
from plait.server._state import ServerState, open_state
from plait.server._sweep import RETRY, _one, sweep
from plait.server._threads import create_thread, delete_thread, get_thread
from plait.server._ttl import ThreadTtl

APP = pathlib.Path(__file__).parent / "app"


def _rename(db: str, old: str, new: str) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(f"ALTER TABLE {old} RENAME TO {new}")


async def _checkpointed(state: ServerState, thread_id: str, ttl: ThreadTtl | None = None) -> dict[str, Any]:
    await create_thread(state.db, thread_id, {}, ttl)
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    await state.saver.aput(config, empty_checkpoint(), {"source": "input", "step": -1, "parents": {}}, {})
    return config


async def _deletes(tmp: pathlib.Path) -> None:
    db = str(tmp / "s.sqlite")
    state = await open_state(Settings(str(APP / "plait.json"), (GraphSpec("agent", "./agent.py:graph"),), db))
    try:
        tid = str(uuid.uuid4())
        config = await _checkpointed(state, tid)
        _rename(db, "checkpoint_writes", "moved_away")
        with pytest.raises(Exception, match="checkpoint_writes"):
            await delete_thread(state, tid)
        assert await get_thread(state.db, tid) is not None  # left whole: deleting it again can retry
        _rename(db, "moved_away", "checkpoint_writes")
        assert await state.saver.aget_tuple(config) is not None
        await delete_thread(state, tid)
        assert await get_thread(state.db, tid) is None
        assert await state.saver.aget_tuple(config) is None

        # the ttl sweep: a failed deletion keeps the thread, leased, and its next turn finishes it
        expired = str(uuid.uuid4())
        config = await _checkpointed(state, expired, ThreadTtl("delete", 0.0005))
        await asyncio.sleep(0.1)
        _rename(db, "checkpoint_writes", "moved_away")
        assert await sweep(state) == (0, 0)
        row = await state.db.fetch(
            "SELECT expires_at FROM plait_server_threads WHERE thread_id = ?", (expired,)
        )
        assert row and row[0]["expires_at"] > time.time() + RETRY - 10
        _rename(db, "moved_away", "checkpoint_writes")
        assert await state.saver.aget_tuple(config) is not None
        assert await _one(state, expired, "delete", time.time() + RETRY + 1)
        assert await get_thread(state.db, expired) is None
        assert await state.saver.aget_tuple(config) is None
    finally:
        await state.close()


def test_a_thread_whose_checkpoints_cannot_be_deleted_stays_whole_until_a_retry(
    tmp_path: pathlib.Path,
) -> None:
    asyncio.run(_deletes(tmp_path))
