"""Node timeouts (:class:`~plait.types.TimeoutPolicy`): an async attempt raced against its limits.

The attempt runs as an asyncio task beside one watchdog per limit: ``run_timeout`` sleeps, and
``idle_timeout`` sleeps until the attempt's :class:`Progress` is that old. When a watchdog wins,
the attempt is cancelled and :class:`~plait.errors.NodeTimeoutError` raised; the retry policy
then sees it like any other error. Sync functions cannot be cancelled, so they take no timeout.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from datetime import timedelta
from typing import Any, Literal, TypeVar

from plait.errors import GraphBuildError, NodeCancelledError, NodeTimeoutError
from plait.types import TimeoutPolicy

__all__ = ["Progress", "cancelled_by_node", "sync_timeout_error", "timed"]

T = TypeVar("T")
W = TypeVar("W")


def sync_timeout_error(name: str, *, kind: Literal["Node", "Task"] = "Node") -> GraphBuildError:
    """LangGraph's error for a timeout on a sync function (a ``ValueError``)."""
    return GraphBuildError(
        "Node timeouts are only supported for async nodes because sync Python execution cannot be "
        f"safely cancelled in-process. {kind} {name!r} is sync. Make it `async def`, or drop `timeout=`."
    )


class Progress:
    """When a timed attempt last made progress, and whether it still may write.

    ``runtime.heartbeat()`` always counts; a ``custom`` stream event counts with
    ``refresh_on="auto"``. Once the attempt timed out, its stream events are dropped.
    """

    __slots__ = ("active", "auto", "last")

    def __init__(self, policy: TimeoutPolicy) -> None:
        self.last = time.monotonic()
        self.active = True
        self.auto = policy.refresh_on == "auto"

    def beat(self) -> None:
        """``runtime.heartbeat()``: the attempt is alive."""
        self.last = time.monotonic()

    def guard(self, writer: Callable[[W], None]) -> Callable[[W], None]:
        """``writer``, dropping events after the timeout; each event is progress under ``"auto"``."""

        def write(chunk: W) -> None:
            if not self.active:
                return
            if self.auto:
                self.last = time.monotonic()
            writer(chunk)

        return write


def _secs(value: float | timedelta | None) -> float | None:
    return value.total_seconds() if isinstance(value, timedelta) else value


async def _idle(progress: Progress, limit: float) -> None:
    while (remaining := progress.last + limit - time.monotonic()) > 0:
        await asyncio.sleep(remaining)


def _drain(task: asyncio.Future[Any]) -> None:
    with suppress(asyncio.CancelledError, Exception):
        task.exception()  # retrieved: asyncio does not log the abandoned attempt's end


async def timed(name: str, body: Awaitable[T], policy: TimeoutPolicy, progress: Progress) -> T:
    """Await ``body`` within ``policy``'s limits (seconds, as :meth:`TimeoutPolicy.coerce` leaves them).

    Raises:
        NodeTimeoutError: a limit passed first; ``body`` is cancelled and its events dropped.
    """
    start = time.monotonic()
    attempt = asyncio.ensure_future(body)
    watchdogs: dict[asyncio.Future[Any], Literal["idle", "run"]] = {}
    run, idle = _secs(policy.run_timeout), _secs(policy.idle_timeout)
    if run is not None:
        watchdogs[asyncio.ensure_future(asyncio.sleep(run))] = "run"
    if idle is not None:
        watchdogs[asyncio.ensure_future(_idle(progress, idle))] = "idle"
    try:
        done, _ = await asyncio.wait({attempt, *watchdogs}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:  # the run was cancelled: so is the attempt
        attempt.cancel()
        attempt.add_done_callback(_drain)
        raise
    finally:
        progress.active = False
        for watchdog in watchdogs:
            watchdog.cancel()
    if attempt in done:
        return attempt.result()
    attempt.cancel()
    attempt.add_done_callback(_drain)
    kind: Literal["idle", "run"] = "run" if any(watchdogs[w] == "run" for w in done) else "idle"
    raise NodeTimeoutError(
        name,
        time.monotonic() - start,
        kind=kind,
        idle_timeout=idle,
        run_timeout=run,
    )


def cancelled_by_node(name: str, exc: asyncio.CancelledError) -> NodeCancelledError | None:
    """A :class:`NodeCancelledError` when the node raised ``CancelledError`` itself (nobody cancelled
    the running asyncio task), else ``None``: the run is being cancelled, let it through."""
    current = asyncio.current_task()
    cancelling: Callable[[], int] | None = getattr(current, "cancelling", None)  # Python 3.11+
    if cancelling is None or cancelling():  # cannot tell (3.10), or the run is being cancelled
        return None
    err = NodeCancelledError(name)
    err.__cause__ = exc
    return err
