"""The asynchronous driver: executes a :class:`Loop`'s effects on the caller's event loop."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncGenerator, Generator, Sequence
from typing import Any, TypeVar, cast

from plait.errors import ParentCommand
from plait.pregel._cache import acache_task, arecall_task
from plait.pregel._concurrency import max_concurrency
from plait.pregel._context import TaskContext, task_scope
from plait.pregel._effects import CallRouters, Effect, Emit, RunTasks, Save, asave
from plait.pregel._loop import Loop
from plait.pregel._pool import stack_is_deep
from plait.pregel._recover import hand_over
from plait.pregel._run import claim, make_context, run_task
from plait.pregel._task import Task, collect, from_child
from plait.pregel._travel import aload_run

__all__ = ["acall_routers", "afinish", "run_async"]

Event = tuple[str, Any]
T = TypeVar("T")


async def _run_async_task(task: Task, ctx: TaskContext) -> None:
    call = task.node.acall or task.node.call
    attempt = 0
    if task.node.cache_policy is not None and await arecall_task(task, ctx):
        return
    with task_scope(ctx):
        while True:
            attempt += 1
            ctx.begin_attempt(attempt)
            try:
                try:
                    value = await call(task.input, ctx)
                except ParentCommand as exc:  # a subgraph inside this node addressed this graph
                    value = from_child(exc)
                collect(task, value)
                if ctx.pushed:  # written while it ran (push_message): first
                    task.writes[:0] = ctx.pushed
                if task.node.cache_policy is not None:
                    await acache_task(task, ctx)
                return
            except Exception as exc:  # noqa: BLE001 - recorded on the task, re-raised by the driver
                delay = task.failed(exc, attempt)
            if delay is None:
                return
            await asyncio.sleep(delay)


async def _one(loop: Loop, task: Task | None, store: Any, context: Any) -> None:
    """Run ``task`` and stream how it ended; when its error handler takes over, run the handler."""
    while task is not None:
        ctx = make_context(loop, task, store, context)
        if task.node.is_async or task.node.acall is not None:
            await _run_async_task(task, ctx)
        else:
            await asyncio.to_thread(run_task, task, ctx)
        loop.sink.settled(task, ctx.task_id, loop.run.step)
        task = hand_over(loop.plan, task)


async def _execute(loop: Loop, tasks: Sequence[Task], store: Any, context: Any, deep: bool = False) -> None:
    todo = [t for t in tasks if not t.done]
    if len(todo) == 1:
        one = _one(loop, todo[0], store, context)
        # deeply nested subgraphs: a new asyncio task starts on the event loop's short stack
        await (asyncio.ensure_future(one) if deep else one)
    elif todo:
        limit = max_concurrency(loop.config)
        if limit is not None and limit < len(todo):
            gate = asyncio.Semaphore(limit)

            async def gated(task: Task) -> None:
                async with gate:
                    await _one(loop, task, store, context)

            await asyncio.gather(*(gated(t) for t in todo))
        else:
            await asyncio.gather(*(_one(loop, t, store, context) for t in todo))


async def acall_routers(effect: CallRouters) -> list[Any]:
    """The routers' answers; async routers are awaited here, on the caller's event loop."""
    answers = [route(effect.state) for route in effect.routers]
    return [await a if inspect.isawaitable(a) else a for a in answers]


async def afinish(steps: Generator[CallRouters, list[Any], T]) -> T:
    """Async :func:`~plait.pregel._run.finish_sync`."""
    answer: list[Any] | None = None
    while True:
        try:
            effect = steps.send(answer)  # type: ignore[arg-type]
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        answer = await acall_routers(effect)


async def run_async(
    loop: Loop,
    input: Any,
    store: Any = None,
    context: Any = None,  # noqa: A002
) -> AsyncGenerator[Event, None]:
    """Drive ``loop`` to the end, yielding its stream events."""
    claim(loop)
    saver = loop.saver
    if saver is None:
        loop.load(None)
        async for event in _drive(loop, input, store, context):
            yield event
        return
    thread = loop.thread
    assert thread is not None  # noqa: S101 - set whenever there is a saver
    async with await saver.alease(
        thread.thread_id, thread.checkpoint_ns, wait=loop.multitask != "reject", timeout=loop.lease_timeout
    ):
        await aload_run(loop, saver, input)
        async for event in _drive(loop, input, store, context):
            yield event


async def _drive(loop: Loop, input: Any, store: Any, context: Any) -> AsyncGenerator[Event, None]:  # noqa: A002
    """Execute the loop's effects on this event loop; an effect's error is thrown back into the loop."""
    effects = loop.effects(input)
    deep = stack_is_deep()  # every step runs at this depth
    answer: Any = None
    error: Exception | None = None
    try:
        while True:
            try:
                effect = effects.send(answer) if error is None else effects.throw(error)
            except StopIteration:
                return
            answer, error = None, None
            if type(effect) is Emit:
                for event in effect.events:
                    yield event
                continue
            try:
                if type(effect) is RunTasks and loop.sink.live:
                    async for event in _execute_live(loop, effect.tasks, store, context):
                        yield event
                else:
                    answer = await _perform(loop, effect, store, context, deep)
            except Exception as exc:  # noqa: BLE001 - the loop decides what it means
                error = exc
    finally:
        effects.close()


async def _execute_live(
    loop: Loop, tasks: Sequence[Task], store: Any, context: Any
) -> AsyncGenerator[Event, None]:
    """Run the step as an asyncio task and stream the events its tasks emit as they come."""
    sink, events = loop.sink, loop.sink.events
    ready = asyncio.Event()
    here = asyncio.get_running_loop()

    def notify() -> None:
        here.call_soon_threadsafe(ready.set)

    sink.notify = notify
    step = asyncio.ensure_future(_execute(loop, tasks, store, context))
    try:
        while True:
            count = len(events)
            if count:
                batch = events[:count]
                del events[:count]  # nodes only append: the events after ``count`` stay
                for event in batch:
                    yield event
                continue
            if step.done():
                break
            ready.clear()
            if events:
                continue
            waiter = asyncio.ensure_future(ready.wait())
            await asyncio.wait((step, waiter), return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
    finally:
        sink.notify = None
        if not step.done():
            step.cancel()
        await asyncio.gather(step, return_exceptions=True)
    step.result()


async def _perform(loop: Loop, effect: Effect, store: Any, context: Any, deep: bool) -> Any:  # noqa: PLR0913
    kind = type(effect)
    if kind is RunTasks:
        await _execute(loop, effect.tasks, store, context, deep)  # type: ignore[union-attr]
    elif kind is CallRouters:
        return await acall_routers(effect)  # type: ignore[arg-type]
    elif kind is Save:
        thread = loop.thread
        # kind is Save (type() held in a local does not narrow)
        await asave(
            loop.saver,
            cast(Save, effect),
            None if thread is None else (thread.thread_id, thread.checkpoint_ns),
        )
    return None
