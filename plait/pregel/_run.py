"""The synchronous driver: executes a :class:`Loop`'s effects, running parallel tasks in threads."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections import deque
from collections.abc import Callable, Generator, Hashable, Sequence
from functools import partial
from typing import TypeVar

from plait._context import TASK_CONTEXT
from plait.checkpoint._locks import reentered
from plait.errors import NodeCancelledError, ParentCommand
from plait.pregel._cache import cache_task, recall_task
from plait.pregel._callable import run_coroutine
from plait.pregel._concurrency import max_concurrency
from plait.pregel._context import TaskContext, running_task, task_scope
from plait.pregel._effects import CallRouters, Effect, Emit, RunTasks, Save, save
from plait.pregel._held import HeldSaves, held_for
from plait.pregel._live import stream_threaded
from plait.pregel._loop import Loop, Steps
from plait.pregel._pause import abandoned_saves, task_id
from plait.pregel._pool import POOL_SIZE, on_fresh_thread, stack_is_deep, with_helpers
from plait.pregel._recover import hand_over
from plait.pregel._router_args import remember
from plait.pregel._task import Task, collect, from_child
from plait.pregel._timeout import Progress, sync_timeout_error, timed
from plait.pregel._travel import load_run

__all__ = ["call_routers", "claim", "finish_sync", "go_on", "make_context", "run_sync", "run_task"]

Event = tuple[object, ...]
T = TypeVar("T")


def make_context(loop: Loop, task: Task, store: object, context: object) -> TaskContext:
    """The context object a task runs with."""
    tid = task_id(loop.checkpoint_id, task)
    resume = loop.resumes.get(tid) if loop.resumes else None
    sink = loop.sink
    return TaskContext(
        loop.settings.config,
        store,
        context,
        loop,
        task.name,
        tid,
        list(resume) if resume else [],
        sink.child_config(task, loop.run.step, tid) if sink.lc_child else None,
        tid in loop.interrupted if loop.interrupted else False,
        time.time(),
        task.failure,
        task=task,
    )


def run_task(task: Task, ctx: TaskContext, first: Callable[[], object] | None = None) -> None:
    """Run one task to completion, recording its result, error or interrupt on it.

    ``ctx`` is fresh (:func:`make_context`): its first attempt needs no reset. ``first``: the
    outcome of a first attempt made already (the fast path's), returned or raised again.
    """
    if task.node.cache_policy is not None and first is None and recall_task(task, ctx):
        return
    if ctx.lc_config is not None:  # runnables the node calls get the task's LangChain config too
        with task_scope(ctx):
            _attempts(task, ctx, first)
        return
    token = TASK_CONTEXT.set(ctx)  # task_scope's work, inline: every task of every step
    try:
        _attempts(task, ctx, first)
    finally:
        TASK_CONTEXT.reset(token)


def _attempts(task: Task, ctx: TaskContext, first: Callable[[], object] | None) -> None:
    """Call the node until it settles: a result, an interrupt, or an error its retry policy gives up on."""
    node = task.node
    attempt = 1
    while True:
        try:
            try:
                value = _call(task, ctx) if first is None else first()
            except ParentCommand as exc:  # a subgraph inside this node addressed this graph
                value = from_child(exc)
            collect(task, value)
            if ctx.pushed:  # written while it ran (push_message): first
                task.writes[:0] = ctx.pushed
            if node.cache_policy is not None:
                cache_task(task, ctx)
            return
        except asyncio.CancelledError as exc:  # raised by the node itself: no run is cancelled here
            error = NodeCancelledError(task.name)
            error.__cause__ = exc
            delay = task.failed(error, attempt, ctx.task_id)
        except Exception as exc:  # noqa: BLE001 - recorded on the task, re-raised by the driver
            delay = task.failed(exc, attempt, ctx.task_id)
        if delay is None:
            return
        time.sleep(delay)
        attempt, first = attempt + 1, None
        ctx.begin_attempt(attempt)


def _call(task: Task, ctx: TaskContext) -> object:
    """Call the node once; an async node's coroutine runs to its end here, within its ``timeout``."""
    node = task.node
    policy = node.timeout
    if policy is not None and not node.is_async:  # a runnable with a sync path: it cannot be cancelled
        raise sync_timeout_error(task.name)
    if policy is None:
        value = node.call(task.input, ctx)
        return run_coroutine(value) if node.is_async else value
    ctx.progress = progress = Progress(policy)
    value = node.call(task.input, ctx)
    return run_coroutine(timed(task.name, value, policy, progress) if inspect.isawaitable(value) else value)


def _settle(
    loop: Loop,
    task: Task,
    ctx: TaskContext,
    store: object,
    context: object,
    first: Callable[[], object] | None = None,
) -> None:
    """Run ``task`` and stream how it ended; when its error handler takes over, run the handler."""
    while True:
        run_task(task, ctx, first)
        first = None
        if loop.sink.per_task or task.interrupts:
            loop.sink.settled(task, ctx.task_id, loop.run.step)
        if task.error is None:
            return
        recovery = hand_over(loop.settings.plan, task)
        if recovery is None:
            return
        task, ctx = recovery, make_context(loop, recovery, store, context)


def _execute(loop: Loop, tasks: Sequence[Task], store: object, context: object, deep: bool = False) -> None:
    """Run the step's tasks: the calling thread works the queue together with pool helpers
    (:func:`with_helpers`: they start one by one, as long as tasks are left).

    ``deep`` (see :func:`stack_is_deep`): this thread's part of the work runs on a new thread.
    """
    todo = tasks if len(tasks) == 1 and not tasks[0].done else [t for t in tasks if not t.done]
    if len(todo) == 1:
        ctx = make_context(loop, todo[0], store, context)
        if deep:  # deeply nested subgraphs go on with an empty stack
            on_fresh_thread(_settle, loop, todo[0], ctx, store, context)
        else:
            _settle(loop, todo[0], ctx, store, context)
        return
    queue = deque((t, make_context(loop, t, store, context)) for t in todo)

    def work() -> None:
        while True:
            try:
                task, ctx = queue.popleft()
            except IndexError:
                return
            _settle(loop, task, ctx, store, context)

    limit = max_concurrency(loop.settings.config) or POOL_SIZE + 1  # this thread works too: one less helper
    with_helpers(work, queue, min(len(todo), POOL_SIZE + 1, limit) - 1, deep)


def claim(loop: Loop) -> None:
    """Record the lease this run is about to take among those its enclosing runs hold.

    Raises:
        ThreadBusyError: an enclosing run holds that very lease (the run would wait for itself).
    """
    outer = running_task()
    held: frozenset[Hashable] = outer.held if outer is not None else frozenset()
    saver, thread = loop.settings.saver, loop.settings.thread
    if saver is not None and thread is not None:
        key = saver.lease_id(thread.thread_id, thread.checkpoint_ns)
        if key in held:
            raise reentered(thread.thread_id)
        held = held | {key}
    loop.held = held


def call_routers(effect: CallRouters) -> list[object]:
    """The routers' answers (an async router runs to completion on a loop of its own: no caller loop here)."""
    return [run_coroutine(route(effect.state)) for route in effect.routers]


def finish_sync(steps: Generator[CallRouters, list[object], T]) -> T:
    """Run a routing-only generator (``update_state``) to its result."""
    answer: list[object] | None = None
    while True:
        try:
            effect = steps.send(answer)  # type: ignore[arg-type]
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        answer = call_routers(effect)


def run_sync(
    loop: Loop, input: object, store: object = None, context: object = None
) -> Generator[Event, None, Loop]:  # noqa: A002
    """Drive ``loop`` to the end, yielding its stream events; return the loop."""
    claim(loop)
    remember(loop, store, context)  # for routers that declare them
    settings = loop.settings
    saver = settings.saver
    if saver is None:
        loop.load(None)
        yield from _drive(loop, loop.effects(input), store, context)
        return loop
    thread = settings.thread
    assert thread is not None  # noqa: S101 - set whenever there is a saver
    wait, timeout = settings.multitask != "reject", settings.lease_timeout
    with saver.lease(thread.thread_id, thread.checkpoint_ns, wait=wait, timeout=timeout):
        load_run(loop, saver, input)
        yield from _drive(loop, loop.effects(input), store, context)
    return loop


def go_on(
    loop: Loop,
    ran: tuple[Task, TaskContext, Callable[[], object]] | None,
    store: object,
    context: object,
) -> None:
    """Drive a run the fast path began (:mod:`plait.pregel._fast`, no saver, no stream) to its end:
    from the step it reached, or — ``ran`` — after that step's one task, whose node was called already
    (``(task, its context, its outcome)``)."""
    claim(loop)
    remember(loop, store, context)
    if ran is None:
        effects = loop.steps()
    else:
        task, ctx, first = ran
        _settle(loop, task, ctx, store, context, first)
        effects = loop.steps([task])
    for _ in _drive(loop, effects, store, context):
        pass


def _drive(loop: Loop, effects: Steps, store: object, context: object) -> Generator[Event, None, None]:
    """Execute the loop's effects; an effect's error is thrown back into the loop."""
    # every step runs at this depth; only graphs run inside nodes nest deeply (a run's own stack is shallow)
    deep = running_task() is not None and stack_is_deep()
    answer: object = None
    error: Exception | None = None
    running: Sequence[Task] = ()  # the tasks of the step under way
    step_timeout = loop.settings.step_timeout
    held_for(loop, HeldSaves)
    try:
        while True:
            try:
                effect = effects.send(answer) if error is None else effects.throw(error)
            except StopIteration:
                if loop.holding is not None:
                    loop.holding.finish()
                return
            answer, error = None, None
            if type(effect) is Emit:
                yield from effect.events
                continue
            try:
                if type(effect) is not RunTasks:
                    answer = _perform(loop, effect)
                else:
                    started, running = time.monotonic(), effect.tasks
                    if loop.sink.live:
                        yield from _execute_live(loop, running, store, context)
                    else:
                        _execute(loop, running, store, context, deep)
                    if step_timeout is not None and time.monotonic() - started > step_timeout:
                        _abandon(loop, running)
                        raise TimeoutError(
                            f"Step {loop.run.step} ran longer than step_timeout ({step_timeout} s)"
                        )
                    running = ()
            except Exception as exc:  # noqa: BLE001 - the loop decides what it means
                error = exc
    except GeneratorExit:  # the caller closed the stream: what the run did so far is kept
        _abandon(loop, running)
        raise
    except BaseException:
        if loop.holding is not None:
            loop.holding.finish_quietly()
        raise
    finally:
        effects.close()


def _abandon(loop: Loop, tasks: Sequence[Task]) -> None:
    """Save what a run stopped in the middle keeps: the checkpoint ``durability="exit"`` held back and
    the writes of the step's ``tasks`` (``step_timeout``, or the caller closed the stream).

    Threads cannot be stopped, so a sync run notices a timeout once the step has ended (as
    LangGraph's do), and a stream closed mid-step waits for the step's tasks first.
    """
    if loop.holding is not None:  # first: the checkpoint the writes belong to
        loop.holding.finish_quietly()
    settings = loop.settings
    ops = abandoned_saves(loop, tasks) if settings.saver is not None else ()
    if ops:
        thread = settings.thread
        save(settings.saver, Save(ops), None if thread is None else (thread.thread_id, thread.checkpoint_ns))


def _execute_live(
    loop: Loop, tasks: Sequence[Task], store: object, context: object
) -> Generator[Event, None, None]:
    """Run the step on a runner thread and stream the events its tasks emit as they come."""
    return stream_threaded(partial(_execute, loop, tasks, store, context), loop.sink)


def _perform(loop: Loop, effect: Effect) -> object:
    """Run a routing or saving effect (a step's tasks are run by the driver itself); a save goes
    to the run's held saves, if it holds them (``loop.holding``)."""
    if type(effect) is CallRouters:
        return call_routers(effect)
    if type(effect) is Save:
        if loop.holding is not None:
            loop.holding.save(effect)
        else:
            thread = loop.settings.thread
            save(
                loop.settings.saver,
                effect,
                None if thread is None else (thread.thread_id, thread.checkpoint_ns),
            )
    return None
