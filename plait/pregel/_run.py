"""The synchronous driver: runs a :class:`Loop`, executing tasks in threads."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import copy_context
from typing import Any

from plait.errors import ParentCommand, SerializationError
from plait.pregel._callable import run_coroutine
from plait.pregel._context import TaskContext, task_scope
from plait.pregel._loop import Loop, task_id
from plait.pregel._task import Task, collect, from_child
from plait.pregel._thread import found

__all__ = ["run_sync", "run_task"]

Event = tuple[str, Any]


def make_context(loop: Loop, task: Task, store: Any, context: Any) -> TaskContext:
    """The context object a task runs with."""
    tid = task_id(loop.checkpoint_id, task)
    resume = loop.resumes.get(tid) if loop.resumes else None
    sink = loop.sink
    return TaskContext(config=loop.config, store=store, writer=sink.custom, context=context,
                       node=task.name, task_id=tid, resume=list(resume) if resume else [],
                       lc_config=sink.child_config(task, loop.run.step) if sink.lc_child else None,
                       saver=loop.saver, checkpoint_ns=loop.thread.checkpoint_ns if loop.thread else "")


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


def _execute(loop: Loop, tasks: Sequence[Task], store: Any, context: Any) -> None:
    """Run the step's tasks: the calling thread works the queue together with pool helpers.

    Helpers that have not started when the queue runs dry are cancelled, so a
    subgraph running inside a pool thread can never wait on a starved pool.
    """
    todo = [t for t in tasks if not t.done]
    if len(todo) == 1:
        run_task(todo[0], make_context(loop, todo[0], store, context))
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


def run_sync(loop: Loop, input: Any, store: Any = None, context: Any = None) -> Generator[Event, None, Loop]:  # noqa: A002
    """Drive ``loop`` to the end, yielding its stream events; return the loop."""
    saver = loop.saver
    if saver is None:
        loop.load(None)
        return (yield from _drive(loop, input, store, context))
    thread = loop.thread
    assert thread is not None  # noqa: S101 - set whenever there is a saver
    with saver.lease(thread.thread_id, thread.checkpoint_ns, wait=loop.multitask != "reject"):
        loop.load(found(saver.get_tuple(thread.config()), thread))
        return (yield from _drive(loop, input, store, context))


def _drive(loop: Loop, input: Any, store: Any, context: Any) -> Generator[Event, None, Loop]:  # noqa: A002
    saver = loop.saver
    loop.begin(input)
    while True:
        if saver is not None:
            _flush(loop)
        if loop.events:
            yield from loop.events
            loop.events.clear()
        tasks = loop.tick()
        if tasks is None:
            break
        _execute(loop, tasks, store, context)
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
