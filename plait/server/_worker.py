"""The run queue of one server process: start or claim runs, execute them, keep their leases.

A new run that can start at once (its thread has no pending or running run, and this process
has a free slot) is stored as ``running`` by the process that received it, which executes it
(:meth:`Worker.reserve` / :meth:`Worker.take`). Other runs wait in ``plait_server_runs`` with
status ``pending``: a worker claims the oldest one whose thread has no running run and no
older pending run (PostgreSQL: ``FOR UPDATE SKIP LOCKED``, one statement that also marks the
thread busy and reads the assistant; SQLite: inside ``BEGIN IMMEDIATE``), marks it
``running`` with its id and a lease, and renews the lease while it runs. A run whose lease
expired (its worker was killed) goes back to ``pending`` and another worker resumes it from
the thread's last checkpoint. Wake-ups and cancellations travel by ``LISTEN/NOTIFY`` on
PostgreSQL: a run queued for want of a slot wakes the workers when it is stored, one queued
behind others of its thread when the run before it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from plait.server._crons import fire_due
from plait.server._data import runs
from plait.server._db import Row
from plait.server._execute import execute_run
from plait.server._records import AssistantDoc
from plait.server._state import ServerState
from plait.server._sweep import sweep
from plait.server._ttl import sweep_seconds
from plait.server._wire import as_int

__all__ = ["Worker"]

_log = logging.getLogger("plait.server")

CRON_POLL = 5.0
"""Seconds between two looks for due crons when none is due sooner."""

CHANNELS = ("plait_server_wake", "plait_server_cancel", "plait_server_event")


class Worker:
    """Executes queued runs in this process, up to ``settings.jobs`` at once."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.ttl = state.settings.lease_ttl
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.started: set[str] = set()
        """Runs whose task has begun executing (a task cancelled before that would skip its cleanup)."""
        self.reserved = 0
        """Slots promised to runs being created here as running, or to a claim under way."""
        self.backlog = False
        """Runs may wait in the queue for a free slot here: new runs queue behind them."""
        self.closing = False
        self._wake = asyncio.Event()
        self._crons_changed = asyncio.Event()
        self._background: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Start claiming runs (and, on SQLite, requeue runs left running by a previous process)."""
        if self.state.db.dialect == "sqlite":
            await runs.requeue_all_running(self.state.db)
        self._background = [
            asyncio.create_task(self._loop()),
            asyncio.create_task(self._heartbeat()),
            asyncio.create_task(self._crons()),
            asyncio.create_task(self._sweeps()),
            asyncio.create_task(self.state.db.listen(CHANNELS, self._notified)),
        ]

    def wake(self) -> None:
        """Look for runs to claim now."""
        self._wake.set()

    def wake_crons(self) -> None:
        """A cron was created or changed here: look again when the next one is due."""
        self._crons_changed.set()

    async def _crons(self) -> None:
        """Fire due crons; sleep until the next one is due (at most ``CRON_POLL`` seconds: crons
        made by other workers are seen then) or one is created or changed here."""
        while not self.closing:
            self._crons_changed.clear()
            due: float | None = None
            try:
                due = await fire_due(self.state)
            except Exception:  # noqa: BLE001 - a database hiccup: try again soon
                _log.exception("firing crons failed")
            pause = CRON_POLL if due is None else min(CRON_POLL, max(0.0, due - time.time()) + 0.01)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._crons_changed.wait(), timeout=pause)

    async def _sweeps(self) -> None:
        """Delete what outlived its time to live, every ``sweep_interval_minutes`` of the config (5 by default)."""
        pause = sweep_seconds(self.state.settings.thread_ttl, self.state.settings.store_ttl)
        while not self.closing:
            await asyncio.sleep(pause)
            try:
                await sweep(self.state, as_int(self.state.settings.thread_ttl.get("sweep_limit") or 1000))
            except Exception:  # noqa: BLE001 - a database hiccup: next time
                _log.exception("ttl sweep failed")

    def reserve(self) -> bool:
        """Take a slot for a run about to be stored as running by this worker (then :meth:`take` it).

        False when the worker is stopping, full, or left runs in the queue for want of a slot
        (they go first): the run is queued instead.
        """
        if self.closing or self.backlog:
            return False
        if len(self.tasks) + self.reserved >= self.state.settings.jobs:
            self.backlog = True
            return False
        self.reserved += 1
        return True

    def release(self) -> None:
        """Give back a slot :meth:`reserve` took (the run was not stored)."""
        self.reserved -= 1

    def take(self, row: Row, assistant: AssistantDoc) -> None:
        """Execute a run stored as running by this worker, in the slot :meth:`reserve` took."""
        self.reserved -= 1
        self.tasks[row["run_id"]] = asyncio.create_task(self._run(row, assistant))

    def _notified(self, channel: str, payload: str) -> None:
        if channel == "plait_server_wake" and payload == self.state.worker_id:
            return  # sent by this process, which woke its own loop already
        if channel == "plait_server_event":
            self.state.broker.notified(payload)
        elif channel == "plait_server_cancel":
            run_id, _, action = payload.partition(":")
            self.cancel_local(run_id, action or "interrupt")
        else:
            if not channel:
                self.state.broker.notified("")
            self.state.broker.stirred()  # a run was queued or ended on some thread
            self.wake()

    def cancel_local(self, run_id: str, action: str) -> bool:
        """Cancel ``run_id`` if it executes in this process."""
        task = self.tasks.get(run_id)
        if task is None:
            return False
        self.state.cancels[run_id] = action
        # a task not begun yet ends the run as cancelled when it begins; one recording its end ends as is
        if run_id in self.started and run_id not in self.state.finishing:
            task.cancel()
        return True

    async def _loop(self) -> None:
        poll = 1.0 if self.state.db.dialect == "postgres" else 5.0
        while not self.closing:
            self._wake.clear()
            while not self.closing:
                free = self.state.settings.jobs - len(self.tasks) - self.reserved
                if free <= 0:
                    break
                self.reserved += free  # new runs do not take these slots meanwhile
                try:
                    claimed = await self._claim(free)
                except Exception:  # noqa: BLE001 - a database hiccup: try again on the next wake-up
                    _log.exception("claiming a run failed")
                    claimed = None
                finally:
                    self.reserved -= free
                for row, assistant in claimed or []:
                    self.tasks[row["run_id"]] = asyncio.create_task(self._run(row, assistant))
                if claimed is None:
                    break
                if len(claimed) < free:  # the queue holds nothing more this worker may take
                    self.backlog = False
                    break
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=poll)

    async def _claim(self, limit: int) -> list[tuple[Row, AssistantDoc]]:
        """Up to ``limit`` runs marked running by this worker, each with its assistant."""
        return await runs.claim(self.state.db, self.state.worker_id, self.ttl, limit)

    async def _run(self, row: Row, assistant: AssistantDoc) -> None:
        run_id = row["run_id"]
        self.started.add(run_id)
        waiting = True  # unless the run's end says no run waits on its thread
        try:
            waiting = await execute_run(self.state, row, assistant)
        except asyncio.CancelledError:
            self.started.discard(run_id)  # (a cancel arriving now must not cut the bookkeeping short)
            await self._requeue(run_id)
        except Exception as exc:  # noqa: BLE001 - record the failure; the worker goes on
            self.started.discard(run_id)
            _log.exception("run %s could not be executed", run_id)
            await self._failed(row, exc)
        finally:
            full = len(self.tasks) + self.reserved >= self.state.settings.jobs
            self.tasks.pop(run_id, None)
            self.started.discard(run_id)
            if waiting or full or self.backlog:  # a run queued on its thread, or for want of a slot
                self.wake()

    async def _failed(self, row: Row, exc: Exception) -> None:
        """A run that could not be executed (its graph is gone, the database failed…): its row and its
        thread say so, and its followers get its end, unless the run had already ended."""
        state, run_id = self.state, row["run_id"]
        if state.metrics is not None:
            state.metrics.runs.labels("error").inc()
        await runs.fail(state.db, run_id, row["thread_id"])
        with contextlib.suppress(Exception):  # the database failing: the row above said so already
            await state.broker.end_unrun(run_id, "error", {"error": type(exc).__name__, "message": str(exc)})

    async def _requeue(self, run_id: str) -> None:
        with contextlib.suppress(Exception):
            await runs.requeue(self.state.db, run_id, self.state.worker_id)
            await self.state.db.notify("plait_server_wake", run_id)

    async def _heartbeat(self) -> None:
        db = self.state.db
        while True:
            await asyncio.sleep(self.ttl / 3)
            try:
                if self.tasks:
                    await runs.renew_leases(db, self.state.worker_id, time.time() + self.ttl)
                taken = await runs.take_over_expired(db, time.time())
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
