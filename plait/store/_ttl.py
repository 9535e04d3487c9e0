"""Background TTL sweepers: a thread for sync stores, a task for async ones.

A sweep is one ``DELETE ... WHERE expires_at <= now`` evaluated by the database,
so several processes may sweep one database at once: an item refreshed or
rewritten by another process before the sweep commits is not deleted.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Awaitable, Callable

from plait.store.base import TTLConfig

__all__ = ["AsyncSweeper", "Sweeper", "checked_ttl", "interval_seconds"]

_LOG = logging.getLogger("plait.store")
DEFAULT_SWEEP_MINUTES = 5.0


def checked_ttl(config: TTLConfig | None) -> TTLConfig | None:
    """``config``, unless it asks for what plait does not do.

    Raises:
        NotImplementedError: ``omit_expired=False`` (LangGraph's stores then return expired items
            until a sweep deletes them; plait never returns an expired item).
    """
    if config is not None and config.get("omit_expired") is False:
        raise NotImplementedError(
            "ttl={'omit_expired': False} is not implemented by plait: an expired item is never "
            "returned, swept or not. Leave omit_expired out (or set it to True)."
        )
    return config


def interval_seconds(config: TTLConfig | None, minutes: float | None) -> float:
    """The sweep interval: the argument, else ``sweep_interval_minutes``, else 5 minutes."""
    chosen = minutes if minutes is not None else (config or {}).get("sweep_interval_minutes")
    value = float(chosen if chosen is not None else DEFAULT_SWEEP_MINUTES)
    if value <= 0:
        raise ValueError(f"sweep_interval_minutes must be > 0, got {chosen!r}")
    return value * 60


class Sweeper:
    """Runs ``sweep`` every interval on a daemon thread until stopped."""

    def __init__(self, sweep: Callable[[], int]) -> None:
        """Bind the sweep function.

        Args:
            sweep: Deletes expired items and returns how many.
        """
        self.sweep = sweep
        self.stop_event = threading.Event()
        self.future: concurrent.futures.Future[None] | None = None
        self.thread: threading.Thread | None = None

    def start(self, seconds: float) -> concurrent.futures.Future[None]:
        """Start sweeping (a running sweeper is returned as is)."""
        if self.future is not None and not self.future.done():
            return self.future
        self.stop_event.clear()
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        self.future = future
        self.thread = threading.Thread(
            target=self._loop, args=(seconds, future), daemon=True, name="plait-ttl"
        )
        self.thread.start()
        return future

    def _loop(self, seconds: float, future: concurrent.futures.Future[None]) -> None:
        try:
            while not self.stop_event.is_set():
                try:
                    self.sweep()
                except Exception:  # noqa: BLE001 - a failed sweep is logged and retried next interval
                    _LOG.exception("TTL sweep failed")
                self.stop_event.wait(seconds)
        finally:
            future.set_result(None)

    def stop(self, timeout: float | None) -> bool:
        """Stop sweeping; ``True`` when the thread has ended within ``timeout``."""
        if self.thread is None:
            return True
        self.stop_event.set()
        self.thread.join(timeout)
        return not self.thread.is_alive()


class AsyncSweeper:
    """Runs an async ``sweep`` every interval in an asyncio task until stopped."""

    def __init__(self, sweep: Callable[[], Awaitable[int]]) -> None:
        """Bind the sweep coroutine function.

        Args:
            sweep: Deletes expired items and returns how many.
        """
        self.sweep = sweep
        self.task: asyncio.Task[None] | None = None

    def start(self, seconds: float) -> asyncio.Task[None]:
        """Start sweeping on the running loop (a running sweeper is returned as is)."""
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._loop(seconds))
        return self.task

    async def _loop(self, seconds: float) -> None:
        while True:
            try:
                await self.sweep()
            except Exception:  # noqa: BLE001 - a failed sweep is logged and retried next interval
                _LOG.exception("TTL sweep failed")
            await asyncio.sleep(seconds)

    async def stop(self, timeout: float | None) -> bool:
        """Cancel the task; ``True`` when it has ended within ``timeout``."""
        if self.task is None or self.task.done():
            return True
        self.task.cancel()
        done, _ = await asyncio.wait({self.task}, timeout=timeout)
        return bool(done)
