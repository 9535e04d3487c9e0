"""Threads for the sync driver: one shared pool for parallel nodes, and fresh stacks for deep nesting."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Sized
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import copy_context
from queue import Empty, SimpleQueue
from typing import TypeVar

__all__ = ["POOL_SIZE", "on_fresh_thread", "on_runner", "shared_pool", "stack_is_deep", "with_helpers"]

_T = TypeVar("_T")

POOL_SIZE = 64
_pool: list[ThreadPoolExecutor] = []
_pool_lock = threading.Lock()


def shared_pool() -> ThreadPoolExecutor:
    """One process-wide pool for parallel nodes (threads are reused across runs)."""
    if not _pool:
        with _pool_lock:
            if not _pool:
                _pool.append(ThreadPoolExecutor(max_workers=POOL_SIZE, thread_name_prefix="plait-node"))
    return _pool[0]


def with_helpers(work: Callable[[], None], queue: Sized, most: int, deep: bool = False) -> None:
    """Run ``work`` (which takes items from ``queue`` until it is empty) on this thread and on up to
    ``most`` helpers of the :func:`shared_pool`, in copies of this thread's context.

    Helpers start one by one: each (this thread first) asks for the next as it starts, while
    ``queue`` holds items. Quick items are all done by this thread (its helper finds the queue
    empty, or is cancelled before it starts), and blocking ones still all run at once. Helpers
    that have not started when the queue runs dry are cancelled, so work running inside a pool
    thread never waits on a starved pool. ``deep``: this thread's part runs on a fresh thread.
    """
    pool, context = shared_pool(), copy_context()
    tickets: list[None] = [None] * most  # (list.pop is atomic)
    helpers: list[Future[None]] = []

    def spawn() -> None:
        if queue and tickets:
            try:
                tickets.pop()
            except IndexError:  # another thread took the last one
                return
            helpers.append(pool.submit(context.copy().run, helper))

    def helper() -> None:
        spawn()
        work()

    spawn()
    if deep:
        on_fresh_thread(work)
    else:
        work()
    done = 0
    while done < len(helpers):  # a helper that started appended the one it asked for before working
        if not helpers[done].cancel():
            helpers[done].result()
        done += 1


_DEEP = 1000
"""Frames a thread's stack may hold (at most half the recursion limit) before a task moves to a new thread."""


def stack_is_deep() -> bool:
    """Whether this thread's stack is so deep that the next nested run should start on a fresh one.

    Python's recursion limit counts the frames of each thread separately, and
    every level of subgraph nesting adds about ten of them; past half the limit
    (or :data:`_DEEP` frames) nested runs continue on a new thread, so that
    LangGraph-style chains of hundreds of nested graphs never hit ``RecursionError``.
    """
    try:
        # sys._getframe is CPython's documented frame accessor, the cheap way to probe the depth
        sys._getframe(min(sys.getrecursionlimit() // 2, _DEEP))  # pyright: ignore[reportPrivateUsage]
    except ValueError:  # the stack is not that deep
        return False
    return True


def on_fresh_thread(fn: Callable[..., _T], *args: object) -> _T:
    """``fn(*args)`` on a new thread (with an empty stack) in a copy of this context; its result or error."""
    context = copy_context()
    results: list[_T] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            results.append(context.run(fn, *args))
        except BaseException as exc:  # noqa: BLE001 - re-raised unchanged in the waiting thread
            errors.append(exc)

    worker = threading.Thread(target=target, name="plait-nested")
    worker.start()
    worker.join()
    if errors:
        raise errors.pop()
    return results.pop()


_IDLE_FOR = 60.0
"""Seconds an idle runner thread waits for work before it ends."""
_idle: list[_Runner] = []
_idle_lock = threading.Lock()


class _Runner:
    """A long-lived thread that runs one job at a time; it waits in :data:`_idle` between jobs."""

    __slots__ = ("jobs",)

    def __init__(self) -> None:
        self.jobs: SimpleQueue[tuple[Callable[[], None], Callable[[], None]]] = SimpleQueue()
        threading.Thread(target=self._serve, name="plait-step", daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                job, done = self.jobs.get(timeout=_IDLE_FOR)
            except Empty:
                with _idle_lock:
                    if self in _idle:  # nobody took it meanwhile: it ends
                        _idle.remove(self)
                        return
                continue  # taken just now: its job is on the way
            try:
                job()
            finally:
                with _idle_lock:
                    _idle.append(self)  # idle before ``done``: the caller's next step finds it
                done()


def _forked() -> None:
    """In a forked child: the parent's threads (and any lock they held) are not here."""
    global _idle_lock, _pool_lock  # noqa: PLW0603 - replaced in the child only
    _idle.clear()
    _pool.clear()
    _idle_lock, _pool_lock = threading.Lock(), threading.Lock()


os.register_at_fork(after_in_child=_forked)


def on_runner(job: Callable[[], None], done: Callable[[], None]) -> None:
    """Run ``job()`` on an idle runner thread (a new one when none is idle), then call ``done()``
    there; ``job`` must not raise.

    Unlike :func:`shared_pool`, this never queues behind busy threads, so a job may wait for
    another job (a streamed subgraph inside a streamed step) without starving; and unlike a
    thread per job, its threads (each with an empty stack) are reused.
    """
    with _idle_lock:
        runner = _idle.pop() if _idle else None
    (runner or _Runner()).jobs.put((job, done))
