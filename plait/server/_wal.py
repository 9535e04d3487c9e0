"""Folds a SQLite server's write-ahead logs back into their files, off the event loop.

A SQLite connection checkpoints its WAL itself when a commit finds it longer than
``wal_autocheckpoint`` pages: that commit copies the pages and waits for the disk. ``plait
serve`` runs its SQLite statements on the event loop, and the library's saver checkpoints
every 32 pages (to keep a file small), so nearly every commit stalled every request and run
of the process. The server's connections instead checkpoint only far behind
(:data:`BACKSTOP_PAGES`); a connection of this module's own, in a thread, checkpoints every
:data:`EVERY` seconds: a ``PASSIVE`` pass (it waits for no one) copies what was written,
then a ``TRUNCATE`` pass, which holds writers back only for the few pages written since,
empties the log (given up after 20 ms when a transaction is under way; next time, then).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager

__all__ = ["BACKSTOP_PAGES", "EVERY", "keep_wal"]

EVERY = 0.25
"""Seconds between two background checkpoints."""
BACKSTOP_PAGES = 8192
"""A connection of the server checkpoints by itself (on the event loop) past this many WAL pages (32 MiB)."""

_log = logging.getLogger("plait.server")


def _wal_bytes(path: str) -> int:
    try:
        return os.path.getsize(path + "-wal")
    except OSError:
        return 0


def _fold(conns: Sequence[tuple[str, sqlite3.Connection]]) -> None:
    for path, conn in conns:
        if not _wal_bytes(path):  # nothing written since the last pass
            continue
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()  # (a passive pass waits for no one)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()


@asynccontextmanager
async def keep_wal(
    paths: Sequence[str], connections: Sequence[sqlite3.Connection]
) -> AsyncGenerator[None, None]:
    """While open, checkpoint the WAL of each file in ``paths`` in a thread every :data:`EVERY` seconds
    (on a connection of this module's own per file, opened once).

    ``connections`` (the server's own, on those files) checkpoint by themselves only past
    :data:`BACKSTOP_PAGES`. On exit the logs are folded back once more.
    """
    for conn in connections:
        conn.execute(f"PRAGMA wal_autocheckpoint={BACKSTOP_PAGES}")
    # TRUNCATE gives up after 20 ms when a transaction is under way; the thread alone uses them
    files = [(p, sqlite3.connect(p, timeout=0.02, check_same_thread=False)) for p in paths if p != ":memory:"]

    async def loop() -> None:
        while True:
            await asyncio.sleep(EVERY)
            try:
                await asyncio.to_thread(_fold, files)
            except sqlite3.Error as exc:  # a busy or locked file: next time
                _log.debug("WAL checkpoint skipped: %s", exc)

    task = asyncio.create_task(loop(), name="plait-wal-keeper")
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        try:
            await asyncio.to_thread(_fold, files)
        except sqlite3.Error as exc:
            _log.warning("Could not fold the write-ahead log back at shutdown: %s", exc)
        for _, conn in files:
            conn.close()
