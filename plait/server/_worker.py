"""The run queue of one server process: claim pending runs, execute them, keep their leases.

Runs wait in ``plait_server_runs`` with status ``pending``. A worker claims the oldest one
whose thread has no running run and no older pending run (PostgreSQL: ``FOR UPDATE SKIP
LOCKED``; SQLite: inside ``BEGIN IMMEDIATE``), marks it ``running`` with its id and a lease,
and renews the lease while it runs. A run whose lease expired (its worker was killed) goes
back to ``pending`` and another worker resumes it from the thread's last checkpoint.
Wake-ups and cancellations travel by ``LISTEN/NOTIFY`` on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from plait.server._execute import execute_run
from plait.server._state import ServerState
from plait.server._wire import loads, now_iso

__all__ = ["Worker"]

_log = logging.getLogger("plait.server")

_CLAIM = """SELECT r.*, a.doc AS assistant_doc FROM plait_server_runs r
LEFT JOIN plait_server_assistants a ON a.assistant_id = r.assistant_id
WHERE r.status = 'pending' AND NOT EXISTS (SELECT 1 FROM plait_server_runs o WHERE o.thread_id = r.thread_id
  AND (o.status = 'running' OR (o.status = 'pending' AND o.run_id < r.run_id)))
ORDER BY r.run_id LIMIT 1"""

CHANNELS = ("plait_server_wake", "plait_server_cancel", "plait_server_event")


class Worker:
    """Executes queued runs in this process, up to ``settings.jobs`` at once."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.ttl = state.settings.lease_ttl
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.closing = False
        self._wake = asyncio.Event()
        self._background: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Start claiming runs (and, on SQLite, requeue runs left running by a previous process)."""
        if self.state.db.dialect == "sqlite":
            await self.state.db.run(
                "UPDATE plait_server_runs SET status = 'pending', worker = NULL WHERE status = 'running'"
            )
        self.state.store.loop = asyncio.get_running_loop()
        self._background = [
            asyncio.create_task(self._loop()),
            asyncio.create_task(self._heartbeat()),
            asyncio.create_task(self.state.db.listen(CHANNELS, self._notified)),
        ]

    def wake(self) -> None:
        """Look for runs to claim now."""
        self._wake.set()

    def _notified(self, channel: str, payload: str) -> None:
        if channel == "plait_server_event":
            self.state.broker.notified(payload)
        elif channel == "plait_server_cancel":
            run_id, _, action = payload.partition(":")
            self.cancel_local(run_id, action or "interrupt")
        else:
            if not channel:
                self.state.broker.notified("")
            self.wake()

    def cancel_local(self, run_id: str, action: str) -> bool:
        """Cancel ``run_id`` if it executes in this process."""
        task = self.tasks.get(run_id)
        if task is None:
            return False
        self.state.cancels[run_id] = action
        task.cancel()
        return True

    async def _loop(self) -> None:
        poll = 1.0 if self.state.db.dialect == "postgres" else 5.0
        while not self.closing:
            self._wake.clear()
            while not self.closing and len(self.tasks) < self.state.settings.jobs:
                try:
                    claimed = await self._claim()
                except Exception:  # noqa: BLE001 - a database hiccup: try again on the next wake-up
                    _log.exception("claiming a run failed")
                    claimed = None
                if claimed is None:
                    break
                row, assistant = claimed
                self.tasks[row["run_id"]] = asyncio.create_task(self._run(row, assistant))
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=poll)

    async def _claim(self) -> tuple[dict[str, Any], dict[str, Any]] | None:
        db = self.state.db
        lock = " FOR UPDATE OF r SKIP LOCKED" if db.dialect == "postgres" else ""
        now = now_iso()
        async with db.tx() as tx:
            rows = await tx.fetch(_CLAIM + lock)
            if not rows:
                return None
            row = rows[0]
            row["attempt"] = int(row["attempt"]) + 1
            await tx.run(
                "UPDATE plait_server_runs SET status = 'running', worker = ?, lease_until = ?, attempt = ?, "
                "updated_at = ? WHERE run_id = ?",
                (self.state.worker_id, time.time() + self.ttl, row["attempt"], now, row["run_id"]),
            )
            await tx.run(
                "UPDATE plait_server_threads SET status = 'busy', updated_at = ? WHERE thread_id = ?",
                (now, row["thread_id"]),
            )
        found = row.pop("assistant_doc")
        assistant = loads(found) if found else {"assistant_id": row["assistant_id"], "graph_id": ""}
        return row, assistant

    async def _run(self, row: dict[str, Any], assistant: dict[str, Any]) -> None:
        run_id = row["run_id"]
        try:
            await execute_run(self.state, row, assistant)
        except asyncio.CancelledError:
            await self._requeue(run_id)
        except Exception:  # noqa: BLE001 - record the failure; the worker goes on
            _log.exception("run %s could not be executed", run_id)
            await self.state.db.run(
                "UPDATE plait_server_runs SET status = 'error', worker = NULL, updated_at = ? WHERE run_id = ?",
                (now_iso(), run_id),
            )
        finally:
            self.tasks.pop(run_id, None)
            self.wake()

    async def _requeue(self, run_id: str) -> None:
        with contextlib.suppress(Exception):
            await self.state.db.run(
                "UPDATE plait_server_runs SET status = 'pending', worker = NULL WHERE run_id = ? AND worker = ?",
                (run_id, self.state.worker_id),
            )
            await self.state.db.notify("plait_server_wake", run_id)

    async def _heartbeat(self) -> None:
        db = self.state.db
        while True:
            await asyncio.sleep(self.ttl / 3)
            try:
                if self.tasks:
                    await db.run(
                        "UPDATE plait_server_runs SET lease_until = ? WHERE worker = ? AND status = 'running'",
                        (time.time() + self.ttl, self.state.worker_id),
                    )
                taken = await db.run(
                    "UPDATE plait_server_runs SET status = 'pending', worker = NULL "
                    "WHERE status = 'running' AND lease_until < ?",
                    (time.time(),),
                )
                if taken:
                    _log.warning("%d run(s) of a vanished worker went back to the queue", taken)
                    await db.notify("plait_server_wake", "")
                    self.wake()
            except Exception:  # noqa: BLE001 - try again on the next beat
                _log.exception("lease heartbeat failed")

    async def stop(self, drain: float = 30.0) -> None:
        """Stop claiming; let running runs finish for up to ``drain`` seconds, requeue the rest."""
        self.closing = True
        self.wake()
        pending = list(self.tasks.values())
        if pending:
            _, still = await asyncio.wait(pending, timeout=drain)
            for task in still:
                task.cancel()
            if still:
                await asyncio.wait(still, timeout=5)
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
