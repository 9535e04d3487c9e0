"""The synchronous driver: runs a :class:`Loop`, executing tasks in threads."""

from __future__ import annotations

import random
import time
from collections.abc import Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import copy_context
from typing import Any

from plait.errors import GraphInterrupt
from plait.pregel._callable import run_coroutine
from plait.pregel._context import TaskContext, task_scope
from plait.pregel._loop import Loop, task_id
from plait.pregel._step import Task, collect
from plait.types import RetryPolicy

__all__ = ["run_sync", "run_task"]

Event = tuple[str, Any]


def backoff(policy: RetryPolicy, attempt: int) -> float:
    """Seconds to wait before retry number ``attempt`` (1-based)."""
    delay = min(policy.max_interval, policy.initial_interval * policy.backoff_factor ** (attempt - 1))
    return delay + (random.random() if policy.jitter else 0.0)  # noqa: S311 - jitter, not crypto


def make_context(loop: Loop, task: Task, store: Any, context: Any) -> TaskContext:
    """The context object a task runs with."""
    tid = task_id(loop.checkpoint_id, task)
    resume = loop.resumes.get(tid) if loop.resumes else None
    return TaskContext(config=loop.config, store=store, writer=loop.write_custom, context=context,
                       node=task.name, task_id=tid, resume=list(resume) if resume else [])


def run_task(task: Task, ctx: TaskContext) -> None:
    """Run one task to completion, recording its result, error or interrupt on it."""
    policy = task.node.retry
    attempt = 0
    with task_scope(ctx):
        while True:
            attempt += 1
            try:
                value = task.node.call(task.input, ctx)
                collect(task, run_coroutine(value) if task.node.is_async else value)
                return
            except GraphInterrupt as exc:
                task.interrupts = tuple(exc.interrupts)
                return
            except Exception as exc:  # noqa: BLE001 - recorded and re-raised by the driver
                if policy is None or attempt >= policy.max_attempts or not policy.should_retry(exc):
                    task.error = exc
                    return
                task.writes.clear()
                task.goto.clear()
            time.sleep(backoff(policy, attempt))


def _execute(loop: Loop, tasks: Sequence[Task], pool: list[ThreadPoolExecutor], store: Any, context: Any) -> None:
    todo = [t for t in tasks if not t.done]
    if len(todo) == 1:
        run_task(todo[0], make_context(loop, todo[0], store, context))
        return
    if not todo:
        return
    if not pool:
        pool.append(ThreadPoolExecutor(max_workers=min(32, len(todo)), thread_name_prefix="plait"))
    futures = [pool[0].submit(copy_context().run, run_task, t, make_context(loop, t, store, context))
               for t in todo[1:]]
    run_task(todo[0], make_context(loop, todo[0], store, context))
    for future in futures:
        future.result()


def _flush(loop: Loop) -> None:
    saver = loop.saver
    for op in loop.saves:
        if op[0] == "put":
            if saver.supports_head_check and op[5] is not ...:
                saver.put(op[1], op[2], op[3], op[4], expected_head=op[5])
            else:
                saver.put(op[1], op[2], op[3], op[4])
        else:
            saver.put_writes(op[1], op[2], op[3])
    loop.saves.clear()


def run_sync(loop: Loop, input: Any, store: Any = None, context: Any = None) -> Generator[Event, None, Loop]:  # noqa: A002
    """Drive ``loop`` to the end, yielding its stream events; return the loop."""
    saver = loop.saver
    if saver is None:
        loop.load(None)
        return (yield from _drive(loop, input, store, context))
    thread = loop.thread
    assert thread is not None  # noqa: S101 - set whenever there is a saver
    with saver.lease(thread.thread_id, thread.checkpoint_ns, wait=loop.multitask != "reject"):
        loop.load(saver.get_tuple(thread.config()))
        return (yield from _drive(loop, input, store, context))


def _drive(loop: Loop, input: Any, store: Any, context: Any) -> Generator[Event, None, Loop]:  # noqa: A002
    saver = loop.saver
    loop.begin(input)
    pool: list[ThreadPoolExecutor] = []
    try:
        while True:
            if saver is not None:
                _flush(loop)
            if loop.events:
                yield from loop.events
                loop.events.clear()
            tasks = loop.tick()
            if tasks is None:
                break
            _execute(loop, tasks, pool, store, context)
            error = loop.finish(tasks)
            if error is not None:
                if saver is not None:
                    _flush(loop)
                raise error
            if loop.interrupts:
                if saver is not None:
                    _flush(loop)
                if loop.events:
                    yield from loop.events
                    loop.events.clear()
                break
    finally:
        if pool:
            pool[0].shutdown(wait=False)
    return loop
