"""The synchronous driver: runs a :class:`Loop`, executing tasks in threads."""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from collections.abc import Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import copy_context
from typing import Any

from plait.checkpoint.base import reentered
from plait.errors import ParentCommand, SerializationError
from plait.pregel._callable import run_coroutine
from plait.pregel._context import TaskContext, running_task, task_scope
from plait.pregel._loop import Loop, task_id
from plait.pregel._task import Task, collect, from_child
from plait.pregel._thread import found

__all__ = ["claim", "on_fresh_thread", "run_sync", "run_task", "stack_is_deep"]

Event = tuple[str, Any]


def make_context(loop: Loop, task: Task, store: Any, context: Any) -> TaskContext:
    """The context object a task runs with."""
    tid = task_id(loop.checkpoint_id, task)
    resume = loop.resumes.get(tid) if loop.resumes else None
    sink = loop.sink
    return TaskContext(config=loop.config, store=store, writer=sink.custom, context=context,
                       node=task.name, task_id=tid, resume=list(resume) if resume else [],
                       lc_config=sink.child_config(task, loop.run.step) if sink.lc_child else None,
                       saver=loop.saver, checkpoint_ns=loop.thread.checkpoint_ns if loop.thread else "",
                       held=loop.held)


def run_task(task: Task, ctx: TaskContext) -> None:
    """Run one task to completion, recording its result, error or interrupt on it."""
    attempt = 0
    with task_scope(ctx):
        while True:
            attempt += 1
            try:
                try:
                    value = task.node.call(task.input, ctx)
                    value = run_coroutine(value) if task.node.is_async else value
                except ParentCommand as exc:  # a subgraph inside this node addressed this graph
                    value = from_child(exc)
                collect(task, value)
                return
            except Exception as exc:  # noqa: BLE001 - recorded on the task, re-raised by the driver
                delay = task.failed(exc, attempt)
            if delay is None:
                return
            time.sleep(delay)


_POOL_SIZE = 64
_pool: list[ThreadPoolExecutor] = []
_pool_lock = threading.Lock()


def _shared_pool() -> ThreadPoolExecutor:
    """One process-wide pool for parallel nodes (threads are reused across runs)."""
    if not _pool:
        with _pool_lock:
            if not _pool:
                _pool.append(ThreadPoolExecutor(max_workers=_POOL_SIZE, thread_name_prefix="plait-node"))
    return _pool[0]


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
        sys._getframe(min(sys.getrecursionlimit() // 2, _DEEP))
    except ValueError:  # the stack is not that deep
        return False
    return True


def on_fresh_thread(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` on a new thread (with an empty stack) in a copy of this context; its result or error."""
    context = copy_context()
    outcome: list[tuple[bool, Any]] = []

    def target() -> None:
        try:
            outcome.append((True, context.run(fn, *args)))
        except BaseException as exc:  # noqa: BLE001 - re-raised unchanged in the waiting thread
            outcome.append((False, exc))

    worker = threading.Thread(target=target, name="plait-nested")
    worker.start()
    worker.join()
    ok, value = outcome.pop()
    if not ok:
        raise value
    return value


def _execute(loop: Loop, tasks: Sequence[Task], store: Any, context: Any, deep: bool = False) -> None:
    """Run the step's tasks: the calling thread works the queue together with pool helpers.

    Helpers that have not started when the queue runs dry are cancelled, so a
    subgraph running inside a pool thread can never wait on a starved pool.
    ``deep`` (see :func:`stack_is_deep`): this thread's part of the work runs on a new thread.
    """
    todo = [t for t in tasks if not t.done]
    if len(todo) == 1:
        ctx = make_context(loop, todo[0], store, context)
        if deep:  # deeply nested subgraphs go on with an empty stack
            on_fresh_thread(run_task, todo[0], ctx)
        else:
            run_task(todo[0], ctx)
        return
    queue = deque((t, make_context(loop, t, store, context)) for t in todo)

    def work() -> None:
        while True:
            try:
                task, ctx = queue.popleft()
            except IndexError:
                return
            run_task(task, ctx)

    pool = _shared_pool()
    helpers = [pool.submit(copy_context().run, work) for _ in range(min(len(todo) - 1, _POOL_SIZE))]
    if deep:
        on_fresh_thread(work)
    else:
        work()
    for helper in helpers:
        if not helper.cancel():
            helper.result()


def _flush(loop: Loop) -> None:
    saver = loop.saver
    try:
        for name, args, kwargs in loop.drain_saves():
            getattr(saver, name)(*args, **kwargs)
    except SerializationError as err:
        raise loop.blame(err) from None


def claim(loop: Loop) -> None:
    """Record the lease this run is about to take among those its enclosing runs hold.

    Raises:
        ThreadBusyError: an enclosing run holds that very lease (the run would wait for itself).
    """
    outer = running_task()
    held = outer.held if outer is not None else frozenset()
    if loop.saver is not None and loop.thread is not None:
        key = loop.saver.lease_id(loop.thread.thread_id, loop.thread.checkpoint_ns)
        if key in held:
            raise reentered(loop.thread.thread_id)
        held = held | {key}
    loop.held = held


def run_sync(loop: Loop, input: Any, store: Any = None, context: Any = None) -> Generator[Event, None, Loop]:  # noqa: A002
    """Drive ``loop`` to the end, yielding its stream events; return the loop."""
    saver = loop.saver
    claim(loop)
    if saver is None:
        loop.load(None)
        return (yield from _drive(loop, input, store, context))
    thread = loop.thread
    assert thread is not None  # noqa: S101 - set whenever there is a saver
    with saver.lease(thread.thread_id, thread.checkpoint_ns, wait=loop.multitask != "reject",
                     timeout=loop.lease_timeout):
        loop.load(found(saver.get_tuple(thread.config()), thread))
        return (yield from _drive(loop, input, store, context))


def _drive(loop: Loop, input: Any, store: Any, context: Any) -> Generator[Event, None, Loop]:  # noqa: A002
    saver = loop.saver
    loop.begin(input)
    deep = stack_is_deep()  # every step runs at this depth
    while True:
        if saver is not None:
            _flush(loop)
        if loop.events:
            yield from loop.events
            loop.events.clear()
        tasks = loop.tick()
        if tasks is None:
            break
        _execute(loop, tasks, store, context, deep)
        error = loop.finish(tasks)
        if error is not None:
            if saver is not None:
                _flush(loop)
            raise error
        if loop.interrupts:
            if saver is not None:
                _flush(loop)
            break
    if loop.events:  # e.g. the interrupt chunk of interrupt_before
        yield from loop.events
        loop.events.clear()
    return loop
