"""``plait serve`` on SQLite folds its write-ahead logs back in the background, so they stay short under load."""

from __future__ import annotations

import asyncio
import pathlib
import threading

from _serve_proc import running
from langgraph_sdk import get_client

WAL_LIMIT = 10 << 20
"""Well below what 400 runs write to each file (over 20 MB) and the server's own backstop (32 MiB);
above what they write in the keeper's interval (a few MB)."""


def _wal_bytes(db: pathlib.Path) -> int:
    total = 0
    for path in (db, db.with_name(f"{db.stem}.server{db.suffix}")):
        wal = path.with_name(path.name + "-wal")
        total = max(total, wal.stat().st_size if wal.exists() else 0)
    return total


async def _runs(url: str, threads: int, per_thread: int) -> None:
    client = get_client(url=url)
    ids = [(await client.threads.create())["thread_id"] for _ in range(threads)]

    async def turns(tid: str) -> None:
        for i in range(per_thread):
            await client.runs.wait(tid, "agent", input={"messages": [{"role": "user", "content": f"hi {i}"}]})

    await asyncio.gather(*(turns(t) for t in ids))
    final = await client.threads.get_state(ids[0])
    assert final["values"]["turns"] == per_thread


def test_the_write_ahead_logs_stay_short_while_runs_write(tmp_path: pathlib.Path) -> None:
    db = tmp_path / "server.sqlite"
    seen: list[int] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.append(_wal_bytes(db))
            done.wait(0.02)

    with running(str(db), tmp_path) as server:
        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            asyncio.run(_runs(server.url, threads=8, per_thread=50))
        finally:
            done.set()
            watcher.join()
    assert len(seen) > 10
    assert max(seen) < WAL_LIMIT, f"a write-ahead log grew to {max(seen)} bytes"
