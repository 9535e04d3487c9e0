"""The asynchronous driver: runs a :class:`Loop` on the event loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from typing import Any

from plait.errors import ParentCommand, SerializationError
from plait.pregel._context import TaskContext, task_scope
from plait.pregel._loop import Loop
from plait.pregel._run import claim, make_context, run_task, stack_is_deep
from plait.pregel._task import Task, collect, from_child
from plait.pregel._thread import found

__all__ = ["run_async"]

Event = tuple[str, Any]


async def _run_async_task(task: Task, ctx: TaskContext) -> None:
    attempt = 0
    with task_scope(ctx):
        while True:
            attempt += 1
            try:
                try:
                    value = await task.node.call(task.input, ctx)
                except ParentCommand as exc:  # a subgraph inside this node addressed this graph
                    value = from_child(exc)
                collect(task, value)
                return
            except Exception as exc:  # noqa: BLE001 - recorded on the task, re-raised by the driver
                delay = task.failed(exc, attempt)
            if delay is None:
                return
            await asyncio.sleep(delay)


def _one(loop: Loop, task: Task, store: Any, context: Any) -> Any:
    ctx = make_context(loop, task, store, context)
    if task.node.is_async:
        return _run_async_task(task, ctx)
    return asyncio.to_thread(run_task, task, ctx)


async def _execute(loop: Loop, tasks: Sequence[Task], store: Any, context: Any, deep: bool = False) -> None:
    todo = [t for t in tasks if not t.done]
    if len(todo) == 1:
        one = _one(loop, todo[0], store, context)
        # deeply nested subgraphs: a new asyncio task starts on the event loop's short stack
        await (asyncio.ensure_future(one) if deep else one)
    elif todo:
        await asyncio.gather(*(_one(loop, t, store, context) for t in todo))


async def _flush(loop: Loop) -> None:
    saver = loop.saver
    try:
        for name, args, kwargs in loop.drain_saves():
            await getattr(saver, "a" + name)(*args, **kwargs)
    except SerializationError as err:
        raise loop.blame(err) from None


async def run_async(loop: Loop, input: Any, store: Any = None, context: Any = None,  # noqa: A002
                    result: list[Loop] | None = None) -> AsyncGenerator[Event, None]:
    """Drive ``loop`` to the end, yielding its stream events; append the loop to ``result``."""
    saver = loop.saver
    claim(loop)
    if saver is None:
        loop.load(None)
        async for event in _drive(loop, input, store, context):
            yield event
    else:
        thread = loop.thread
        assert thread is not None  # noqa: S101 - set whenever there is a saver
        async with await saver.alease(thread.thread_id, thread.checkpoint_ns, wait=loop.multitask != "reject",
                                      timeout=loop.lease_timeout):
            loop.load(found(await saver.aget_tuple(thread.config()), thread))
            async for event in _drive(loop, input, store, context):
                yield event
    if result is not None:
        result.append(loop)


async def _drive(loop: Loop, input: Any, store: Any, context: Any) -> AsyncGenerator[Event, None]:  # noqa: A002
    saver = loop.saver
    loop.begin(input)
    deep = stack_is_deep()  # every step runs at this depth
    while True:
        if saver is not None:
            await _flush(loop)
        for event in loop.events:
            yield event
        loop.events.clear()
        tasks = loop.tick()
        if tasks is None:
            break
        await _execute(loop, tasks, store, context, deep)
        if loop.plan.async_branches:  # async routing functions need a thread without a running loop
            error = await asyncio.to_thread(loop.finish, tasks)
        else:
            error = loop.finish(tasks)
        if error is not None:
            if saver is not None:
                await _flush(loop)
            raise error
        if loop.interrupts:
            if saver is not None:
                await _flush(loop)
            break
    for event in loop.events:  # e.g. the interrupt chunk of interrupt_before
        yield event
    loop.events.clear()
