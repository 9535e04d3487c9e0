"""One step's tasks as asyncio tasks: the first failure, or the step timeout, cancels the rest.

As in LangGraph, a task that fails the step (an error that no error handler takes over; interrupts
and other :class:`~plait.errors.GraphBubbleUp` do not count) cancels its siblings still running,
and ``step_timeout`` seconds after the step started the tasks still running are cancelled and the
step raises ``TimeoutError``. When the step itself is cancelled (the caller is), so are its tasks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from plait.pregel._task import Task

__all__ = ["run_concurrently"]


async def run_concurrently(
    tasks: Sequence[Task],
    run_one: Callable[[Task], Awaitable[bool]],
    limit: int | None = None,
    timeout: float | None = None,
) -> None:
    """Run ``run_one(task)`` for every task at once (at most ``limit`` at a time), until all end.

    ``run_one`` records the task's outcome on it and returns whether it failed the step: the
    tasks still running are then cancelled (left unfinished, they run again on resume). A task
    cancelled because the step timed out or was cancelled records ``CancelledError()`` as its error.

    Raises:
        TimeoutError: ``timeout`` seconds passed before every task ended.
        BaseException: what the driver code around a task raised (never a node's own error).
    """
    gate = asyncio.Semaphore(limit) if limit is not None and limit < len(tasks) else None
    stop: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    left = len(tasks)

    async def gated(task: Task) -> bool:
        assert gate is not None  # noqa: S101 - only used with a gate
        async with gate:
            return await run_one(task)

    def settled(fut: asyncio.Future[bool]) -> None:
        nonlocal left
        left -= 1
        if not stop.done() and (left == 0 or fut.cancelled() or fut.exception() is not None or fut.result()):
            stop.set_result(None)

    running: dict[asyncio.Future[bool], Task] = {}
    for task in tasks:
        fut = asyncio.ensure_future(run_one(task) if gate is None else gated(task))
        fut.add_done_callback(settled)
        running[fut] = task
    ended = timed_out = False
    try:
        if timeout is None:
            await stop
        else:
            timed_out = not (await asyncio.wait((stop,), timeout=timeout))[0]
        ended = not timed_out  # all done, or one failed: its siblings are cancelled unmarked
    finally:
        await _cancel(running, mark=not ended)
    for ended_task in running:
        if not ended_task.cancelled() and ended_task.exception() is not None:
            raise ended_task.exception()  # type: ignore[misc]  # checked just above
    if timed_out:
        raise asyncio.TimeoutError  # the builtin TimeoutError from Python 3.11


async def _cancel(running: dict[asyncio.Future[bool], Task], mark: bool) -> None:
    """Cancel the tasks still running and wait for them to end; ``mark``: record the cancellation."""
    pending = [fut for fut in running if not fut.done()]
    if not pending:
        return
    for fut in pending:
        fut.cancel()
    try:
        await asyncio.wait(pending)
    finally:
        if mark:
            for fut in pending:
                task = running[fut]
                if fut.cancelled() and not task.done and task.error is None and not task.interrupts:
                    task.error = asyncio.CancelledError()
