"""The asynchronous driver: executes a :class:`Loop`'s effects on the caller's event loop."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncGenerator, Generator, Sequence
from contextlib import aclosing
from functools import partial
from typing import Any, TypeVar

from plait.errors import GraphBubbleUp, ParentCommand, is_invalid_resume
from plait.pregel._astep import run_concurrently
from plait.pregel._cache import acache_task, arecall_task
from plait.pregel._concurrency import max_concurrency
from plait.pregel._context import TaskContext, task_scope
from plait.pregel._effects import CallRouters, Effect, Emit, RunTasks, Save, asave
from plait.pregel._held import AsyncHeldSaves, held_for
from plait.pregel._loop import Loop
from plait.pregel._pause import abandoned_saves
from plait.pregel._pool import stack_is_deep
from plait.pregel._recover import hand_over
from plait.pregel._router_args import remember
from plait.pregel._run import claim, make_context, run_task
from plait.pregel._task import Task, collect, from_child
from plait.pregel._timeout import Progress, cancelled_by_node, timed
from plait.pregel._travel import aload_run

__all__ = ["acall_routers", "afinish", "run_async"]

Event = tuple[object, ...]
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
            delay = await _attempt(task, ctx, call, attempt)
            if delay is None:
                return
            await asyncio.sleep(delay)


async def _attempt(task: Task, ctx: TaskContext, call: Any, attempt: int) -> float | None:
    """Run one attempt of ``task``: ``None`` when it settled, else the seconds before the next."""
    try:
        try:
            policy = task.node.timeout
            if policy is None:
                value = await call(task.input, ctx)
            else:
                ctx.progress = progress = Progress(policy)
                value = await timed(task.name, call(task.input, ctx), policy, progress)
        except ParentCommand as exc:  # a subgraph inside this node addressed this graph
            value = from_child(exc)
        collect(task, value)
        if ctx.pushed:  # written while it ran (push_message): first
            task.writes[:0] = ctx.pushed
        if task.node.cache_policy is not None:
            await acache_task(task, ctx)
        return None
    except asyncio.CancelledError as exc:
        error = cancelled_by_node(task.name, exc)
        if error is None:  # the run is being cancelled
            raise
        return task.failed(error, attempt, ctx.task_id)
    except Exception as exc:  # noqa: BLE001 - recorded on the task, re-raised by the driver
        return task.failed(exc, attempt, ctx.task_id)


async def _one(loop: Loop, task: Task | None, store: object, context: object) -> bool:
    """Run ``task`` and stream how it ended; when its error handler takes over, run the handler.

    Returns whether it failed the step (an error no handler took over; interrupts do not count).
    """
    while task is not None:
        ctx = make_context(loop, task, store, context)
        if task.node.is_async or task.node.acall is not None:
            await _run_async_task(task, ctx)
        else:
            await asyncio.to_thread(run_task, task, ctx)
        loop.sink.settled(task, ctx.task_id, loop.run.step)
        recovery = hand_over(loop.settings.plan, task)
        if recovery is None:
            error = task.error
            return error is not None and not isinstance(error, GraphBubbleUp) and not is_invalid_resume(error)
        task = recovery
    return False


async def _execute(
    loop: Loop, tasks: Sequence[Task], store: object, context: object, deep: bool = False
) -> None:
    """Run the step's tasks: one is awaited here, several run concurrently (:func:`run_concurrently`);
    a step that times out saves what its finished tasks wrote (:func:`_abandon`)."""
    todo = [t for t in tasks if not t.done]
    settings = loop.settings
    timeout = settings.step_timeout
    if len(todo) == 1 and timeout is None:
        one = _one(loop, todo[0], store, context)
        # deeply nested subgraphs: a new asyncio task starts on the event loop's short stack
        await (asyncio.ensure_future(one) if deep else one)
    elif todo:
        limit = max_concurrency(settings.config)
        try:
            await run_concurrently(todo, partial(_one, loop, store=store, context=context), limit, timeout)
        except asyncio.TimeoutError:  # step_timeout (a node's own errors are recorded on its task)
            await _abandon(loop, tasks)
            raise


async def acall_routers(effect: CallRouters) -> list[object]:
    """The routers' answers; async routers are awaited here, on the caller's event loop."""
    answers = [route(effect.state) for route in effect.routers]
    return [await a if inspect.isawaitable(a) else a for a in answers]


async def afinish(steps: Generator[CallRouters, list[object], T]) -> T:
    """Async :func:`~plait.pregel._run.finish_sync`."""
    answer: list[object] | None = None
    while True:
        try:
            effect = steps.send(answer)  # type: ignore[arg-type]
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        answer = await acall_routers(effect)


async def run_async(
    loop: Loop,
    input: object,
    store: object = None,
    context: object = None,  # noqa: A002
) -> AsyncGenerator[Event, None]:
    """Drive ``loop`` to the end, yielding its stream events."""
    claim(loop)
    remember(loop, store, context)  # for routers that declare them
    settings = loop.settings
    saver = settings.saver
    if saver is None:
        loop.load(None)
        async with aclosing(_drive(loop, input, store, context)) as events:
            async for event in events:
                yield event
        return
    thread = settings.thread
    assert thread is not None  # noqa: S101 - set whenever there is a saver
    wait, timeout = settings.multitask != "reject", settings.lease_timeout
    async with await saver.alease(thread.thread_id, thread.checkpoint_ns, wait=wait, timeout=timeout):
        await aload_run(loop, saver, input)
        async with aclosing(_drive(loop, input, store, context)) as events:  # closed before the lease
            async for event in events:
                yield event


async def _drive(loop: Loop, input: object, store: object, context: object) -> AsyncGenerator[Event, None]:  # noqa: A002
    """Execute the loop's effects on this event loop; an effect's error is thrown back into the loop.

    A step cut short (the caller cancelled, the stream closed, ``step_timeout``) still saves what
    its finished tasks wrote (:func:`_abandon`) before the run ends with that.
    """
    effects = loop.effects(input)
    deep = stack_is_deep()  # every step runs at this depth
    answer: object = None
    error: Exception | None = None
    sink = loop.sink
    running: Sequence[Task] = ()  # the tasks of the step under way
    held_for(loop, AsyncHeldSaves)
    try:
        while True:
            try:
                effect = effects.send(answer) if error is None else effects.throw(error)
            except StopIteration:
                if loop.holding is not None:
                    await loop.holding.finish()
                return
            answer, error = None, None
            if type(effect) is Emit:
                for event in effect.events:
                    yield event
                continue
            if type(effect) is not RunTasks:
                try:
                    answer = await _perform(loop, effect)
                except Exception as exc:  # noqa: BLE001 - the loop decides what it means
                    error = exc
                continue
            running = effect.tasks
            try:
                if sink.live or (sink.per_task and len(running) > 1):  # events as the tasks settle
                    async with aclosing(_execute_live(loop, running, store, context)) as events:
                        async for live_event in events:
                            yield live_event
                else:
                    await _execute(loop, running, store, context, deep)
            except Exception as exc:  # noqa: BLE001 - the loop decides what it means
                error = exc
            running = ()
    except BaseException as exc:
        await _cut_short(loop, running, exc)
        raise
    finally:
        effects.close()


async def _cut_short(loop: Loop, running: Sequence[Task], exc: BaseException) -> None:
    """The run ends with ``exc``: cancelled, or its stream closed (what its step did is saved,
    :func:`_abandon`), or an error (what it held back is sent)."""
    if not isinstance(exc, Exception):
        await _abandon(loop, running)  # (held saves first)
    elif loop.holding is not None:
        await loop.holding.finish_quietly()


async def _abandon(loop: Loop, tasks: Sequence[Task]) -> None:
    """Save the pending writes of a step cut short and the checkpoint ``durability="exit"`` held
    back; shielded, so cancelling the run does not cancel its last saves."""
    if loop.holding is not None:
        try:
            await loop.holding.finish_quietly()  # first: the checkpoint the writes belong to
        except asyncio.CancelledError:  # cancelled again (anyio does): the writes still go out below
            pass
    settings = loop.settings
    ops = abandoned_saves(loop, tasks) if settings.saver is not None else ()
    if not ops:
        return
    thread = settings.thread
    saving = asave(
        settings.saver, Save(ops), None if thread is None else (thread.thread_id, thread.checkpoint_ns)
    )
    await asyncio.shield(saving)


async def _execute_live(
    loop: Loop, tasks: Sequence[Task], store: object, context: object
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


async def _perform(loop: Loop, effect: Effect) -> object:
    """Run a routing or saving effect (a step's tasks are run by the driver itself); a save goes
    to the run's held saves, if it holds them (``loop.holding``)."""
    if type(effect) is CallRouters:
        return await acall_routers(effect)
    if type(effect) is Save:
        if loop.holding is not None:
            await loop.holding.save(effect)
        else:
            thread = loop.settings.thread
            await asave(
                loop.settings.saver,
                effect,
                None if thread is None else (thread.thread_id, thread.checkpoint_ns),
            )
    return None
