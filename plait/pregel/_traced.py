"""Chain runs for a graph's nodes and conditional edges, when its run has callbacks (or LangSmith tracing).

Reported as LangGraph reports them:

* a node's run (:func:`traced_call`) is the parent of what the node calls, which LangGraph tags
  ``seq:step:1`` (the node is the first step of its sequence);
* a node with conditional edges keeps its run open until its routers ran (:class:`HeldRun`): each
  router reports a run inside it, tagged ``seq:step:3``, ``seq:step:4``… (after the node and its
  writes), then the node's run streams its output and ends;
* conditional edges from ``START`` report their runs inside a hidden ``__start__`` run (step 0).

Without callbacks a node pays for one ``dict`` lookup; routers pay nothing.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextvars import Token
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from langchain_core.callbacks.base import BaseCallbackManager
from langchain_core.callbacks.manager import (
    AsyncCallbackManager,
    AsyncCallbackManagerForChainRun,
    CallbackManager,
    CallbackManagerForChainRun,
)
from langchain_core.runnables.config import RunnableConfig, var_child_runnable_config

from plait._trace import TracePolicy, recorded
from plait.pregel._callbacks import configure, root_manager, streamer

if TYPE_CHECKING:
    from plait.pregel._context import TaskContext

__all__ = [
    "HeldRun",
    "arelease",
    "configure",
    "release",
    "root_manager",
    "route_name",
    "start_routes",
    "streamer",
    "traced_call",
]

_AS_IS = TracePolicy()
_NODE_STEP = "seq:step:1"
_ROUTE_BASE = 3  # a node's routers follow the node (1) and its writes (2)
_START_BASE = 2  # START has no node of its own: its writes (1), then its routers
_HIDDEN = "langsmith:hidden"

_M = TypeVar("_M", CallbackManager, AsyncCallbackManager)
_B = TypeVar("_B", bound=BaseCallbackManager)
_Run = CallbackManagerForChainRun | AsyncCallbackManagerForChainRun
_In = TypeVar("_In")
_Node = Callable[[_In, "TaskContext"], object]  # a node's ``call(input, ctx)``
_How = tuple[bool, TracePolicy, int]  # traced_call's inner, policy and routes


def route_name(path: object, in_loop: bool) -> str | None:
    """The name of a router's run, as LangGraph names it: its function's; a lambda's is
    ``RunnableCallable`` in a sync run, none (``Unnamed``) in an async one (``in_loop``)."""
    name = getattr(path, "__name__", None)
    if name is None or name == "<lambda>":
        return None if in_loop else "RunnableCallable"
    return str(name)


def _in_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


# -- held runs: a node's run stays open while its routers run ------------------------------------

_OPEN: dict[UUID | None, list[HeldRun]] = {}
_LOCK = threading.Lock()


class HeldRun:
    """A node's run, open until its routers ran (they report runs inside it), then ended.

    Attributes:
        run: The node's run (a sync or async run manager).
        out: The node's output, streamed and recorded when the run ends.
        routes: How many routers run in it.
    """

    __slots__ = ("base", "namespace", "out", "policy", "routes", "run", "stream", "tags")

    def __init__(  # noqa: PLR0913 - what ending the run needs
        self, run: _Run, out: object, policy: TracePolicy, routes: int, stream: bool, base: int = _ROUTE_BASE
    ) -> None:
        self.run, self.out, self.policy, self.routes, self.stream = run, out, policy, routes, stream
        self.base = base
        self.namespace: str | None = None
        """The task's ``checkpoint_ns``, which Runnable routers record."""
        self.tags: list[str] = []
        """Tags of the router runs, after their step tag."""
        with _LOCK:
            _OPEN.setdefault(run.parent_run_id, []).append(self)

    def _child(self, child: _B) -> _B:
        """``child`` (a child manager of the node's run, for a router) with the routers' tags."""
        if self.tags:
            child.add_tags(self.tags)
        return child

    def router_config(self, config: Mapping[str, object], index: int) -> dict[str, object]:
        """The config a router that is a Runnable gets: its run goes inside the node's."""
        child = self._child(self.run.get_child(f"seq:step:{self.base + index}"))
        if self.namespace is not None:
            child.add_metadata({"checkpoint_ns": self.namespace})
        return {**config, "callbacks": child}

    def route(self, call: Callable[[_In], object], path: object, index: int) -> Callable[[_In], object]:
        """``call`` (router number ``index``) reporting a run inside the node's; the last one ends it."""
        own = getattr(path, "runnable", None) is None  # a Runnable router reports its own run
        name = route_name(path, _in_loop()) if own else None
        run = self.run
        if isinstance(run, AsyncCallbackManagerForChainRun):
            return lambda state: self._aroute(run, call, state, own, name, index)
        return lambda state: self._route(run, call, state, own, name, index)

    def _forget(self) -> bool:
        with _LOCK:
            held = _OPEN.get(self.run.parent_run_id, [])
            if self not in held:
                return False  # already ended
            held.remove(self)
            if not held:
                del _OPEN[self.run.parent_run_id]
        return True

    # -- the sync methods are generated from the async ones --------------------------------------

    # >>> async source
    async def _aroute(  # noqa: PLR0913 - the node's run, then what the router's needs
        self,
        node: AsyncCallbackManagerForChainRun,
        call: Callable[[_In], object],
        state: _In,
        own: bool,
        name: str | None,
        index: int,
    ) -> object:
        run: AsyncCallbackManagerForChainRun | None = None
        try:
            if own:
                child = self._child(node.get_child(f"seq:step:{self.base + index}"))
                run = await child.on_chain_start(None, state, name=name)
            answer = call(state)
            if inspect.isawaitable(answer):
                answer = await answer
        except BaseException as exc:
            if run is not None:
                await run.on_chain_error(exc)
            await self.afail(node, exc)
            raise
        if run is not None:
            await run.on_chain_end(answer)
        if index == self.routes - 1:
            await self.aend(node)
        return answer

    async def aend(self, run: AsyncCallbackManagerForChainRun) -> None:
        """Stream the node's output and end its run (``run``: this one's ``run``)."""
        if self._forget():
            if self.stream:
                await _atap(run, self.out)
            await run.on_chain_end(recorded(self.out, self.policy.process_outputs))

    async def afail(self, run: AsyncCallbackManagerForChainRun, exc: BaseException) -> None:
        """End the node's run (``run``: this one's ``run``) with a router's error."""
        if self._forget():
            await run.on_chain_error(exc)

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def _route(  # noqa: PLR0913 - the node's run, then what the router's needs
        self,
        node: CallbackManagerForChainRun,
        call: Callable[[_In], object],
        state: _In,
        own: bool,
        name: str | None,
        index: int,
    ) -> object:
        run: CallbackManagerForChainRun | None = None
        try:
            if own:
                child = self._child(node.get_child(f"seq:step:{self.base + index}"))
                run = child.on_chain_start(None, state, name=name)
            answer = call(state)
        except BaseException as exc:
            if run is not None:
                run.on_chain_error(exc)
            self.fail(node, exc)
            raise
        if run is not None:
            run.on_chain_end(answer)
        if index == self.routes - 1:
            self.end(node)
        return answer

    def end(self, run: CallbackManagerForChainRun) -> None:
        """Stream the node's output and end its run (``run``: this one's ``run``)."""
        if self._forget():
            if self.stream:
                _tap(run, self.out)
            run.on_chain_end(recorded(self.out, self.policy.process_outputs))

    def fail(self, run: CallbackManagerForChainRun, exc: BaseException) -> None:
        """End the node's run (``run``: this one's ``run``) with a router's error."""
        if self._forget():
            run.on_chain_error(exc)

    # <<< generated sync


def release(parent: UUID) -> list[tuple[HeldRun, AsyncCallbackManagerForChainRun]]:
    """Node runs under the run ``parent`` still open (their routers never ran: the step stopped):
    end them, sync ones here; the async ones are returned (with their run), for the caller to ``aend``."""
    with _LOCK:
        held = list(_OPEN.get(parent, ()))
    pending: list[tuple[HeldRun, AsyncCallbackManagerForChainRun]] = []
    for one in held:
        run = one.run
        if isinstance(run, AsyncCallbackManagerForChainRun):
            pending.append((one, run))
        else:
            one.end(run)
    return pending


async def arelease(parent: UUID) -> None:
    """Async :func:`release`."""
    for held, run in release(parent):
        await held.aend(run)


def start_routes(config: Mapping[str, Any], routes: int, step: int, values: object) -> HeldRun:
    """The hidden ``__start__`` run LangGraph reports for conditional edges from ``START``
    (``values``: the state the input made, its input and output)."""
    given: dict[str, object] = config.get("metadata") or {}
    metadata: dict[str, object] = {
        **given,
        "langgraph_step": step,
        "langgraph_node": "__start__",
        "langgraph_triggers": ["__start__"],
        "langgraph_path": ("__pregel_pull", "__start__"),
    }
    manager = configure(CallbackManager, config, config.get("callbacks"), [f"graph:step:{step}"], metadata)
    manager.add_tags([_HIDDEN], inherit=False)
    run = manager.on_chain_start(None, values, name="__start__")
    held = HeldRun(run, values, _AS_IS, routes, stream=True, base=_START_BASE)
    held.tags = [_HIDDEN]
    return held


# -- nodes -------------------------------------------------------------------------


def _node_metadata(lc: Mapping[str, Any]) -> dict[str, object]:
    """A node run's metadata: the task's, without the ``checkpoint_ns`` only runnables inside see."""
    metadata: dict[str, object] = lc.get("metadata") or {}
    if "checkpoint_ns" in metadata and metadata["checkpoint_ns"] == metadata.get("langgraph_checkpoint_ns"):
        return {k: v for k, v in metadata.items() if k != "checkpoint_ns"}
    return metadata


def _enter(
    ctx: TaskContext, lc: Mapping[str, Any], run: _Run, tag: str | None
) -> tuple[dict[str, Any], Token[RunnableConfig | None]]:
    """Make ``run`` the parent of what the node calls: its ``config`` and LangChain's child config.

    Runs inside see the task's ``checkpoint_ns`` (which LangChain's runnables copy from the task's
    config in LangGraph), though the node's run does not."""
    child = run.get_child(tag)
    given: Mapping[str, object] = lc.get("metadata") or {}
    namespace = given.get("checkpoint_ns")
    if namespace is not None and "checkpoint_ns" not in child.inheritable_metadata:
        child.add_metadata({"checkpoint_ns": namespace})
    saved = ctx.config
    ctx.config = {**saved, "callbacks": child}
    token = var_child_runnable_config.set(cast("RunnableConfig", {**lc, "callbacks": child}))
    return saved, token


def traced_call(  # noqa: PLR0913 - how the node's run is reported
    call: _Node[_In],
    name: str,
    is_async: bool,
    *,
    inner: bool = False,
    policy: TracePolicy | None = None,
    routes: int = 0,
) -> Callable[[_In, TaskContext], Any]:
    """Wrap a node's ``call(input, ctx)`` so that, when the run has callbacks, it reports a chain run.

    ``inner``: the run of a subgraph node's graph, under its node's run (no step tag, no output stream).
    ``policy``: what the run records of the node's input and output.
    ``routes``: the node's conditional edges (its run stays open for their runs, see :class:`HeldRun`).
    """
    how = (inner, policy or _AS_IS, routes)
    if is_async:  # then ``call`` returns an awaitable
        node = cast("Callable[[_In, TaskContext], Awaitable[object]]", call)

        async def acall(state: _In, ctx: TaskContext) -> object:
            lc = ctx.lc_config
            if lc is None or not ctx.config.get("callbacks"):
                return await node(state, ctx)
            return await _atraced(node, name, state, ctx, lc, how)

        return acall

    def sync_call(state: _In, ctx: TaskContext) -> object:
        lc = ctx.lc_config
        if lc is None or not ctx.config.get("callbacks"):
            return call(state, ctx)
        return _traced(call, name, state, ctx, lc, how)

    return sync_call


def _manager(kind: type[_M], ctx: TaskContext, lc: Mapping[str, Any], inner: bool) -> _M:
    if inner:  # under the node's run, which the outer wrapper made ctx.config's parent
        return configure(kind, lc, ctx.config.get("callbacks"), None, _node_metadata(lc))
    metadata: Mapping[str, object] = lc.get("metadata") or {}
    tags = [f"graph:step:{metadata.get('langgraph_step', 0)}"]
    return configure(kind, lc, lc.get("callbacks"), tags, _node_metadata(lc))


def _held(ctx: TaskContext, lc: Mapping[str, Any], run: _Run, out: object, how: _How) -> bool:
    """Keep the node's run open for its routers (see :class:`HeldRun`), if it has any."""
    inner, policy, routes = how
    task = getattr(ctx, "task", None)
    if inner or not routes or task is None:
        return False
    held = HeldRun(run, out, policy, routes, stream=True)
    given: Mapping[str, object] = lc.get("metadata") or {}
    namespace = given.get("checkpoint_ns")
    held.namespace = None if namespace is None else str(namespace)
    task.trace = held
    return True


# -- reporting a node's run (the sync code is generated from the async code) ---------------------


# >>> async source
async def _atraced(  # noqa: PLR0913 - the node's call and what its run reports
    call: Callable[[_In, TaskContext], Awaitable[object]],
    name: str,
    state: _In,
    ctx: TaskContext,
    lc: Mapping[str, Any],
    how: _How,
) -> object:
    inner, policy, _ = how
    manager = _manager(AsyncCallbackManager, ctx, lc, inner)
    run: AsyncCallbackManagerForChainRun = await manager.on_chain_start(
        None, recorded(state, policy.process_inputs), name=name
    )
    saved, token = _enter(ctx, lc, run, None if inner else _NODE_STEP)
    try:
        out = await call(state, ctx)
    except BaseException as exc:
        if inner:
            await arelease(run.run_id)
        await run.on_chain_error(exc)
        raise
    finally:
        ctx.config = saved
        var_child_runnable_config.reset(token)
    if inner:
        await arelease(run.run_id)
    elif _held(ctx, lc, run, out, how):
        return out
    else:
        await _atap(run, out)
    await run.on_chain_end(recorded(out, policy.process_outputs))
    return out


async def _atap(run: AsyncCallbackManagerForChainRun, output: object) -> None:
    """Stream ``output`` as ``run``'s (``astream_events``), when a handler streams it."""
    found = streamer(run)
    if found is not None:
        async for _ in found.tap_output_aiter(run.run_id, _aone(output)):
            pass


async def _aone(item: object) -> AsyncIterator[object]:
    yield item


# <<< async source


# >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
def _traced(  # noqa: PLR0913 - the node's call and what its run reports
    call: Callable[[_In, TaskContext], object],
    name: str,
    state: _In,
    ctx: TaskContext,
    lc: Mapping[str, Any],
    how: _How,
) -> object:
    inner, policy, _ = how
    manager = _manager(CallbackManager, ctx, lc, inner)
    run: CallbackManagerForChainRun = manager.on_chain_start(
        None, recorded(state, policy.process_inputs), name=name
    )
    saved, token = _enter(ctx, lc, run, None if inner else _NODE_STEP)
    try:
        out = call(state, ctx)
    except BaseException as exc:
        if inner:
            release(run.run_id)
        run.on_chain_error(exc)
        raise
    finally:
        ctx.config = saved
        var_child_runnable_config.reset(token)
    if inner:
        release(run.run_id)
    elif _held(ctx, lc, run, out, how):
        return out
    else:
        _tap(run, out)
    run.on_chain_end(recorded(out, policy.process_outputs))
    return out


def _tap(run: CallbackManagerForChainRun, output: object) -> None:
    """Stream ``output`` as ``run``'s (``astream_events``), when a handler streams it."""
    found = streamer(run)
    if found is not None:
        for _ in found.tap_output_iter(run.run_id, _one(output)):
            pass


def _one(item: object) -> Iterator[object]:
    yield item


# <<< generated sync
