"""The ttl sweep itself, on a real server state (SQLite files), called directly: batches, strategies, store items."""

from __future__ import annotations

import asyncio
import pathlib
import time
import uuid

from plait.server._config import GraphSpec, Settings
from plait.server._state import open_state
from plait.server._sweep import sweep
from plait.server._threads import create_thread, get_thread
from plait.server._ttl import ThreadTtl
from plait.store.base import GetOp, PutOp

APP = pathlib.Path(__file__).parent / "app"
SOON = 0.0005
"""Minutes (30 ms): a ttl that has run out by the time the test sweeps."""


async def _sweeps(tmp: pathlib.Path) -> None:
    settings = Settings(
        str(APP / "plait.json"), (GraphSpec("agent", "./agent.py:graph"),), str(tmp / "s.sqlite")
    )
    state = await open_state(settings)
    try:
        doomed = [str(uuid.uuid4()) for _ in range(3)]
        for tid in doomed:
            await create_thread(state.db, tid, {}, ThreadTtl("delete", SOON))
        kept = str(uuid.uuid4())
        await create_thread(state.db, kept, {}, ThreadTtl("keep_latest", SOON))
        later = str(uuid.uuid4())
        await create_thread(state.db, later, {}, ThreadTtl("delete", 60))
        await state.store.abatch(
            [PutOp(("n",), "gone", {"v": 1}, ttl=SOON), PutOp(("n",), "stays", {"v": 2})]
        )
        first = await state.store.abatch([GetOp(("n",), "gone", refresh_ttl=False)])
        created = first[0].created_at  # type: ignore[union-attr]
        await asyncio.sleep(0.1)

        # batches of one: the sweep goes on until a batch comes back short
        assert await sweep(state, limit=1) == (4, 1)
        assert all([await get_thread(state.db, t) is None for t in doomed])
        assert (await get_thread(state.db, kept)) is not None and await get_thread(
            state.db, later
        ) is not None
        rows = await state.db.fetch(
            "SELECT thread_id, expires_at, ttl_strategy FROM plait_server_threads WHERE thread_id IN (?, ?)",
            (kept, later),
        )
        ttls = {r["thread_id"]: (r["expires_at"], r["ttl_strategy"]) for r in rows}
        assert ttls[kept] == (None, None)  # pruned once, then kept without a ttl
        assert ttls[later][1] == "delete" and ttls[later][0] > time.time() + 3000
        assert await sweep(state, limit=1) == (0, 0)

        # an expired item written again starts afresh
        await state.store.abatch([PutOp(("n",), "again", {"v": 1}, ttl=SOON)])
        old = (await state.store.abatch([GetOp(("n",), "again", refresh_ttl=False)]))[0]
        await asyncio.sleep(0.1)
        await state.store.abatch([PutOp(("n",), "again", {"v": 2})])
        new = (await state.store.abatch([GetOp(("n",), "again", refresh_ttl=False)]))[0]
        assert old is not None and new is not None and new.created_at > old.created_at
        assert created is not None
    finally:
        await state.close()


def test_the_sweep_acts_on_every_expired_thread_in_batches_and_deletes_expired_items(
    tmp_path: pathlib.Path,
) -> None:
    asyncio.run(_sweeps(tmp_path))
