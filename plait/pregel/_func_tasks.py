"""Functional-API tasks: calls made from inside a running node, replayed on resume.

A ``@task`` called inside an entrypoint (or any node) runs in parallel with its
caller and returns a future. Each call gets a deterministic id below its
caller's (``<caller id>/<name>:<n>``, ``n`` counting the caller's calls), so a
resumed run finds what the call did last time in the loop's saved writes:

* a call that returned is replayed from its ``__return__`` write (not run again);
* a call that paused on ``interrupt()`` gets its resume values under its own id.

When the step stops (interrupt or error) the settled calls' writes are saved
with it (:attr:`~plait.pregel._loop.Loop.task_writes`). A caller waits for every
call it started before it finishes, and an interrupt of any of them pauses it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import inspect
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from contextvars import copy_context
from dataclasses import dataclass, field
from typing import Any, cast

from plait._internal._io_primitives import asettle_all, settle_all
from plait.checkpoint.base import INTERRUPT, RESUME
from plait.errors import GraphInterrupt
from plait.pregel._cache import cache_key
from plait.pregel._callable import injected, run_coroutine
from plait.pregel._context import TaskContext, running_task, task_scope
from plait.pregel._pool import shared_pool
from plait.pregel._task import Task
from plait.pregel._timeout import Progress, timed
from plait.types import CachePolicy, Interrupt, RetryPolicies, TimeoutPolicy, retry_delay

__all__ = [
    "RETURN",
    "Calls",
    "TaskFuture",
    "TaskSpec",
    "afinish",
    "awaited",
    "call_task",
    "finish",
    "merge_interrupts",
    "settled",
    "start_calls",
]

RETURN = "__return__"
"""The saved write that holds what a task call returned."""
_ON_LOOP = True  # start_calls' is_async in the async code (its calls return asyncio futures) ...
_IN_THREAD = False  # ... and in the sync code made from it (tools/unasync_gen.py maps the name)
_EXTRAS = ("config", "runtime", "store", "writer")


class TaskFuture(concurrent.futures.Future[object]):
    """The result of a task call made from synchronous code.

    ``result()`` on a call no worker has picked up yet runs it in the waiting
    thread, so nested calls never wait for a busy thread pool.
    """

    def __init__(self, work: Callable[[], object] | None = None) -> None:
        super().__init__()
        self._work = work
        self._claim = threading.Lock()

    def run(self) -> None:
        """Run the call here unless it has started (or finished) elsewhere."""
        work = self._work
        if work is None or not self._claim.acquire(blocking=False):
            return
        self._work = None
        if not self.set_running_or_notify_cancel():
            return
        try:
            value = work()
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits on the future
            self.set_exception(exc)
        else:
            self.set_result(value)

    def result(self, timeout: float | None = None) -> object:
        """The call's return value (raises what it raised; an interrupt pauses the caller)."""
        self.run()
        return super().result(timeout)


_Future = asyncio.Future[object] | TaskFuture  # a task call's: on the event loop, or from sync code


@dataclass(frozen=True, slots=True)
class TaskSpec:
    """A ``@task`` function and its options, fixed when it is declared.

    Attributes:
        fn: The function.
        name: The task name (stream events, ids).
        retry: Retry policy, if any.
        cache_policy: Cache policy (used when the entrypoint has a cache), if any.
        cache_ns: The cache namespace of its entries.
        extras: Injectable parameters it declares (``config``, ``store``, ``writer``, ``runtime``).
    """

    fn: Callable[..., Any]  # (returns an awaitable when is_async)
    name: str
    retry: RetryPolicies | None = None
    cache_policy: CachePolicy[Callable[..., str | bytes]] | None = None
    cache_ns: tuple[str, ...] = ()
    extras: tuple[str, ...] = ()
    is_async: bool = False
    signature: inspect.Signature | None = None
    timeout: TimeoutPolicy | None = None  # limits on each attempt (async tasks only)


@dataclass(slots=True)
class Calls:
    """The task calls one running task made (kept on its ``TaskContext.calls``).

    Attributes:
        is_async: The caller is a coroutine: calls return asyncio futures.
        count: Calls made so far (numbers the next call's id).
        started: Their futures, in call order.
    """

    is_async: bool
    count: int = 0
    # the factory is cast once, here, to its element type (it stays the builtin list: no call per Calls)
    started: list[_Future] = field(default_factory=cast("Callable[[], list[_Future]]", list))
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(slots=True)
class _Call:
    spec: TaskSpec
    args: tuple[object, ...]
    kwargs: dict[str, object]
    ctx: TaskContext  # the call's own context (id, resume values)
    key: tuple[tuple[str, ...], str] | None = None  # the cache key, when cached


def start_calls(ctx: TaskContext, is_async: bool) -> Calls:
    """Begin (again) numbering the calls ``ctx``'s task makes (each attempt starts from 0)."""
    calls = ctx.calls = Calls(is_async)
    return calls


def _calls_of(ctx: TaskContext) -> Calls:
    calls = ctx.calls
    if calls is None:  # a task called from a graph node: async only if called on an event loop
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return start_calls(ctx, False)
        return start_calls(ctx, True)
    found: Calls = calls  # (TaskContext.calls holds a Calls)
    return found


def call_task(spec: TaskSpec, args: tuple[object, ...], kwargs: dict[str, object]) -> _Future:
    """Start a task call from the running node; return its future.

    Raises:
        RuntimeError: called outside a running entrypoint, task or graph node.
    """
    parent = running_task()
    if parent is None:
        raise RuntimeError(
            f"Task {spec.name!r} was called outside a running workflow: call @task functions from "
            "inside an @entrypoint (or a graph node), or call the undecorated function directly"
        )
    calls = _calls_of(parent)
    with calls.lock:
        index = calls.count
        calls.count += 1
    tid = f"{parent.task_id}/{spec.name}:{index}"
    loop = parent.loop
    done = loop.done_writes.get(tid) if loop is not None and loop.done_writes else None
    if done is not None and any(k == RETURN for k, _ in done):  # finished before this resume
        value = next(v for k, v in done if k == RETURN)
        future = _resolved(value, calls.is_async)
    else:
        resume = loop.resumes.get(tid) if loop is not None else None
        # a pushed task of its own in the metadata of what runs inside (LangGraph's names)
        own = Task(spec.name, cast("Any", getattr(parent.task, "node", None)), None, push=index)
        lc = (
            None
            if parent.lc_config is None or loop is None
            else loop.sink.child_config(own, loop.run.step, tid)
        )
        ctx = dataclasses.replace(
            parent,
            node=spec.name,
            task_id=tid,
            resume=list(resume or ()),
            calls=None,
            subgraph_calls=0,
            _calls=0,
            task=own,
            lc_config=lc,
        )
        call = _Call(spec, args, _inject(spec, args, kwargs, parent), ctx)
        future = _astart(call) if calls.is_async else _start(call)
    calls.started.append(future)
    return future


def _resolved(value: object, is_async: bool) -> _Future:
    done: _Future = asyncio.get_running_loop().create_future() if is_async else TaskFuture()
    done.set_result(value)
    return done


def _inject(
    spec: TaskSpec, args: tuple[object, ...], kwargs: dict[str, object], ctx: TaskContext
) -> dict[str, object]:
    """``kwargs`` plus the injectable arguments the task declares and the call did not pass."""
    if not spec.extras or spec.signature is None:
        return kwargs
    given = spec.signature.bind_partial(*args, **kwargs).arguments
    return {**kwargs, **injected([name for name in spec.extras if name not in given], ctx)}


# -- settling -------------------------------------------------------------------------------------


def _own(tid: str, interrupts: Sequence[Interrupt]) -> list[Interrupt]:
    """The interrupts a task raised itself (its own tasks' are saved under their ids)."""
    return [i for i in interrupts if not str(getattr(i, "id", "")).startswith(tid + "/")]


def merge_interrupts(first: Sequence[Interrupt], more: Sequence[Interrupt]) -> tuple[Interrupt, ...]:
    seen: dict[str, Interrupt] = {}
    for item in (*first, *more):
        seen.setdefault(str(getattr(item, "id", id(item))), item)
    return tuple(seen.values())


def _interrupts_of(outcomes: Sequence[BaseException | None]) -> list[Interrupt]:
    found: list[Interrupt] = []
    for exc in outcomes:
        if isinstance(exc, GraphInterrupt):
            found.extend(exc.interrupts)
    return found


# -- recording ------------------------------------------------------------------------------------


def _record(call: _Call, writes: list[tuple[str, object]]) -> None:
    loop = call.ctx.loop
    if loop is not None and loop.settings.saver is not None:
        loop.task_writes.append((call.ctx.task_id, writes))


def _returned(call: _Call, value: object, cached: bool = False) -> None:
    _record(call, [(RETURN, value)])
    loop = call.ctx.loop
    sink = loop.sink if loop is not None else None
    if sink is not None and "updates" in sink.modes:
        update: dict[str, object] = {call.spec.name: value}
        if cached:
            update["__metadata__"] = {"cached": True}
        sink.events.append(("updates", update))
        if sink.notify is not None:
            sink.notify()


def _paused(call: _Call, exc: GraphInterrupt) -> None:
    ctx = call.ctx
    loop = ctx.loop
    earlier: list[Interrupt] = loop.interrupted.get(ctx.task_id, []) if loop is not None else []
    known = {getattr(i, "id", None) for i in earlier}
    own = [i for i in _own(ctx.task_id, exc.interrupts) if getattr(i, "id", None) not in known]
    if own:  # the same question asked again (not answered yet) is stored once
        _record(call, [(INTERRUPT, own)])
    resumes = loop.resumes.get(ctx.task_id) if loop is not None else None
    if resumes:
        _record(call, [(RESUME, list(resumes))])


def _cache_of(call: _Call) -> Any:
    policy = call.spec.cache_policy
    loop = call.ctx.loop
    cache = loop.settings.plan.cache if loop is not None and policy is not None else None
    if cache is not None and policy is not None and call.key is None:
        call.key = (call.spec.cache_ns, cache_key(policy, *call.args, **call.kwargs))
    return cache


def _fresh(call: _Call) -> TaskContext:
    return dataclasses.replace(call.ctx, calls=None, subgraph_calls=0, _calls=0)


# -- running from synchronous code ------------------------------------------------------------------


def _start(call: _Call) -> TaskFuture:
    future = TaskFuture(lambda: _run_call(call))
    shared_pool().submit(copy_context().run, future.run)
    return future


def _call(call: _Call, ctx: TaskContext) -> object:
    """The task function's answer, in this thread (an async function's is run to its end here)."""
    policy = call.spec.timeout
    if policy is not None:
        ctx.progress = Progress(policy)
    value = call.spec.fn(*call.args, **call.kwargs)
    if not inspect.isawaitable(value):
        return value
    return run_coroutine(value if ctx.progress is None else _timed(call, value, ctx.progress))


def _timed(call: _Call, body: Awaitable[object], progress: Progress) -> Awaitable[object]:
    policy = call.spec.timeout
    return body if policy is None else timed(call.spec.name, body, policy, progress)


# -- running on the event loop ----------------------------------------------------------------------


def _astart(call: _Call) -> asyncio.Task[object]:
    return asyncio.ensure_future(_arun_call(call))


def _acall(call: _Call, ctx: TaskContext) -> Awaitable[object]:
    """The task function's answer, to await on the event loop."""
    if call.spec.timeout is not None:
        ctx.progress = Progress(call.spec.timeout)
    body = call.spec.fn(*call.args, **call.kwargs)
    return body if ctx.progress is None else _timed(call, body, ctx.progress)


# >>> async source
async def awaited(ctx: TaskContext) -> list[Interrupt]:
    """Wait for every call ``ctx``'s task made; the interrupts they paused on."""
    calls: Calls | None = ctx.calls
    if calls is None or not calls.started:
        return []
    return _interrupts_of(await asettle_all(calls.started))


async def _aattempt_call(call: _Call, ctx: TaskContext) -> object:
    """One attempt at the call, its own calls made like it: sync, in this thread; async, on the
    event loop (a plain function: in a worker thread)."""
    # >>> async only
    if not call.spec.is_async:
        return await asyncio.to_thread(_attempt_call, call, ctx)
    # <<< async only
    start_calls(ctx, _ON_LOOP)
    with task_scope(ctx):
        return await afinish(ctx, lambda: _acall(call, ctx))


async def afinish(ctx: TaskContext, body: Callable[[], Awaitable[object]]) -> object:
    """``body()`` (awaited when async), then wait for the calls it made; an interrupt of any of
    them pauses the caller.

    Raises:
        GraphInterrupt: ``body`` or one of its calls paused (all their interrupts, once each).
    """
    try:
        value = await body()
    except GraphInterrupt as exc:
        raise GraphInterrupt(merge_interrupts(exc.interrupts, await awaited(ctx))) from None
    except BaseException:
        await awaited(ctx)
        raise
    await awaited(ctx)
    return value


async def _arun_call(call: _Call) -> object:
    cache = _cache_of(call)
    if cache is not None and call.key is not None:
        found = await cache.aget([call.key])
        if call.key in found:
            _returned(call, found[call.key], cached=True)
            return found[call.key]
    attempt = 0
    while True:
        attempt += 1
        try:
            value = await _aattempt_call(call, _fresh(call))
        except GraphInterrupt as exc:
            _paused(call, exc)
            raise
        except Exception as exc:
            delay = retry_delay(call.spec.retry, exc, attempt)
            if delay is None:
                raise
            await asyncio.sleep(delay)
            continue
        _returned(call, value)
        if cache is not None and call.key is not None and call.spec.cache_policy is not None:
            await cache.aset({call.key: (value, call.spec.cache_policy.ttl)})
        return value


# <<< async source


# >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
def settled(ctx: TaskContext) -> list[Interrupt]:
    """Wait for every call ``ctx``'s task made; the interrupts they paused on."""
    calls: Calls | None = ctx.calls
    if calls is None or not calls.started:
        return []
    return _interrupts_of(settle_all(calls.started))


def _attempt_call(call: _Call, ctx: TaskContext) -> object:
    """One attempt at the call, its own calls made like it: sync, in this thread; async, on the
    event loop (a plain function: in a worker thread)."""
    start_calls(ctx, _IN_THREAD)
    with task_scope(ctx):
        return finish(ctx, lambda: _call(call, ctx))


def finish(ctx: TaskContext, body: Callable[[], object]) -> object:
    """``body()`` (awaited when async), then wait for the calls it made; an interrupt of any of
    them pauses the caller.

    Raises:
        GraphInterrupt: ``body`` or one of its calls paused (all their interrupts, once each).
    """
    try:
        value = body()
    except GraphInterrupt as exc:
        raise GraphInterrupt(merge_interrupts(exc.interrupts, settled(ctx))) from None
    except BaseException:
        settled(ctx)
        raise
    settled(ctx)
    return value


def _run_call(call: _Call) -> object:
    cache = _cache_of(call)
    if cache is not None and call.key is not None:
        found = cache.get([call.key])
        if call.key in found:
            _returned(call, found[call.key], cached=True)
            return found[call.key]
    attempt = 0
    while True:
        attempt += 1
        try:
            value = _attempt_call(call, _fresh(call))
        except GraphInterrupt as exc:
            _paused(call, exc)
            raise
        except Exception as exc:
            delay = retry_delay(call.spec.retry, exc, attempt)
            if delay is None:
                raise
            time.sleep(delay)
            continue
        _returned(call, value)
        if cache is not None and call.key is not None and call.spec.cache_policy is not None:
            cache.set({call.key: (value, call.spec.cache_policy.ttl)})
        return value


# <<< generated sync
