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
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any, cast

from langchain_core.callbacks.base import BaseCallbackManager
from langchain_core.callbacks.manager import (
    AsyncCallbackManager,
    AsyncCallbackManagerForChainRun,
    CallbackManager,
    CallbackManagerForChainRun,
)
from langchain_core.runnables.config import var_child_runnable_config
from langchain_core.tracers._streaming import _StreamingCallbackHandler  # pyright: ignore[reportPrivateUsage]

from plait._trace import TracePolicy, recorded

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


def configure(  # noqa: PLR0913 - LangChain's configure, with a list of handlers understood
    manager: type[Any],
    config: Mapping[str, Any],
    callbacks: Any,
    tags: list[str] | None = None,
    metadata: dict[str, Any] | None = None,
    tracer: dict[str, Any] | None = None,
) -> Any:
    """A callback manager of ``config`` (its tags and metadata, or ``metadata``) over ``callbacks``,
    which may be a list holding a parent run's manager and more handlers; ``tracer``: metadata
    only LangSmith's tracer records (langchain-core 1.x)."""
    handlers: list[Any] = []
    if isinstance(callbacks, (list, tuple)):  # a list may hold a parent run's manager (see _node_config)
        items = cast("Sequence[Any]", callbacks)
        parents = [c for c in items if isinstance(c, BaseCallbackManager)]
        handlers = [c for c in items if not isinstance(c, BaseCallbackManager)]
        callbacks = parents[0] if parents else handlers
        handlers = handlers if parents else []
    out = manager.configure(
        callbacks,
        None,
        inheritable_tags=config.get("tags"),
        local_tags=tags,
        inheritable_metadata=config.get("metadata") if metadata is None else metadata,
        **({"langsmith_inheritable_metadata": tracer} if tracer else {}),
    )
    for handler in handlers:
        out.add_handler(handler, inherit=True)
    return out


_PROPAGATED = ("thread_id", "checkpoint_id", "checkpoint_ns", "task_id", "run_id", "assistant_id", "graph_id")
"""``configurable`` keys a graph's run records in its metadata (when set and not there already)."""
_SECRET = ("key", "token", "secret", "password", "auth")
_TRACER_METADATA = "langsmith_inheritable_metadata" in inspect.signature(CallbackManager.configure).parameters


def _tracer_metadata(configurable: dict[str, Any]) -> dict[str, Any] | None:
    """The ``configurable`` values LangSmith's tracer records as metadata: scalars, not private
    (``__``), not named like a secret."""
    if not _TRACER_METADATA:
        return None
    out = {
        k: v
        for k, v in configurable.items()
        if not k.startswith("__")
        and isinstance(v, (str, int, float, bool))
        and not any(word in k.casefold() for word in _SECRET)
    }
    return out or None


def root_manager(manager: type[Any], config: dict[str, Any], callbacks: Any) -> Any:
    """The callback manager of a graph's run, with LangGraph's metadata: the thread's keys of
    ``configurable`` (``thread_id``…), ``ls_integration``, and the other ``configurable``
    values for LangSmith's tracer (so it groups a thread's traces)."""
    configurable: dict[str, Any] = config.get("configurable") or {}
    metadata = dict(config.get("metadata") or {})
    for key in _PROPAGATED:
        value = configurable.get(key)
        if value and key not in metadata:
            metadata[key] = value
    out = configure(manager, config, callbacks, None, metadata, _tracer_metadata(configurable))
    if "ls_integration" not in out.metadata:
        out.add_metadata({"ls_integration": "langgraph"})
    return out


def streamer(run: Any) -> Any:
    """The handler that streams a run's output (``astream_events``), if any."""
    for handler in cast("list[Any]", run.handlers):
        if isinstance(handler, _StreamingCallbackHandler):
            return cast("Any", handler)
    return None


def route_name(path: Any, in_loop: bool) -> str | None:
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

_OPEN: dict[Any, list[HeldRun]] = {}
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
        self, run: Any, out: Any, policy: TracePolicy, routes: int, stream: bool, base: int = _ROUTE_BASE
    ) -> None:
        self.run, self.out, self.policy, self.routes, self.stream = run, out, policy, routes, stream
        self.base = base
        self.namespace: str | None = None
        """The task's ``checkpoint_ns``, which Runnable routers record."""
        self.tags: list[str] = []
        """Tags of the router runs, after their step tag."""
        with _LOCK:
            _OPEN.setdefault(run.parent_run_id, []).append(self)

    def _child(self, index: int) -> Any:
        child = self.run.get_child(f"seq:step:{self.base + index}")
        if self.tags:
            child.add_tags(self.tags)
        return child

    def router_config(self, config: Mapping[str, Any], index: int) -> dict[str, Any]:
        """The config a router that is a Runnable gets: its run goes inside the node's."""
        child = self._child(index)
        if self.namespace is not None:
            child.add_metadata({"checkpoint_ns": self.namespace})
        return {**config, "callbacks": child}

    def route(self, call: Callable[[Any], Any], path: Any, index: int) -> Callable[[Any], Any]:
        """``call`` (router number ``index``) reporting a run inside the node's; the last one ends it."""
        own = getattr(path, "runnable", None) is None  # a Runnable router reports its own run
        name = route_name(path, _in_loop()) if own else None
        if isinstance(self.run, AsyncCallbackManagerForChainRun):
            return lambda state: self._aroute(call, state, own, name, index)
        return lambda state: self._route(call, state, own, name, index)

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
    async def _aroute(
        self, call: Callable[[Any], Any], state: Any, own: bool, name: str | None, index: int
    ) -> Any:
        run: AsyncCallbackManagerForChainRun | None = None
        try:
            if own:
                run = await self._child(index).on_chain_start(None, state, name=name)
            answer = call(state)
            if inspect.isawaitable(answer):
                answer = await answer
        except BaseException as exc:
            if run is not None:
                await run.on_chain_error(exc)
            await self.afail(exc)
            raise
        if run is not None:
            await run.on_chain_end(answer)
        if index == self.routes - 1:
            await self.aend()
        return answer

    async def aend(self) -> None:
        """Stream the node's output and end its run."""
        if self._forget():
            if self.stream:
                await _atap(self.run, self.out)
            await self.run.on_chain_end(recorded(self.out, self.policy.process_outputs))

    async def afail(self, exc: BaseException) -> None:
        """End the node's run with a router's error."""
        if self._forget():
            await self.run.on_chain_error(exc)

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def _route(self, call: Callable[[Any], Any], state: Any, own: bool, name: str | None, index: int) -> Any:
        run: CallbackManagerForChainRun | None = None
        try:
            if own:
                run = self._child(index).on_chain_start(None, state, name=name)
            answer = call(state)
        except BaseException as exc:
            if run is not None:
                run.on_chain_error(exc)
            self.fail(exc)
            raise
        if run is not None:
            run.on_chain_end(answer)
        if index == self.routes - 1:
            self.end()
        return answer

    def end(self) -> None:
        """Stream the node's output and end its run."""
        if self._forget():
            if self.stream:
                _tap(self.run, self.out)
            self.run.on_chain_end(recorded(self.out, self.policy.process_outputs))

    def fail(self, exc: BaseException) -> None:
        """End the node's run with a router's error."""
        if self._forget():
            self.run.on_chain_error(exc)

    # <<< generated sync


def release(parent: Any) -> list[HeldRun]:
    """Node runs under the run ``parent`` still open (their routers never ran: the step stopped):
    end them, sync ones here; the async ones are returned, for the caller to ``aend``."""
    with _LOCK:
        held = list(_OPEN.get(parent, ()))
    pending: list[HeldRun] = []
    for run in held:
        if isinstance(run.run, AsyncCallbackManagerForChainRun):
            pending.append(run)
        else:
            run.end()
    return pending


async def arelease(parent: Any) -> None:
    """Async :func:`release`."""
    for run in release(parent):
        await run.aend()


def start_routes(config: Mapping[str, Any], routes: int, step: int, values: Any) -> HeldRun:
    """The hidden ``__start__`` run LangGraph reports for conditional edges from ``START``
    (``values``: the state the input made, its input and output)."""
    given: dict[str, Any] = config.get("metadata") or {}
    metadata: dict[str, Any] = {
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


def _node_metadata(lc: dict[str, Any]) -> dict[str, Any]:
    """A node run's metadata: the task's, without the ``checkpoint_ns`` only runnables inside see."""
    metadata: dict[str, Any] = lc.get("metadata") or {}
    if "checkpoint_ns" in metadata and metadata["checkpoint_ns"] == metadata.get("langgraph_checkpoint_ns"):
        return {k: v for k, v in metadata.items() if k != "checkpoint_ns"}
    return metadata


def _enter(ctx: Any, lc: dict[str, Any], run: Any, tag: str | None) -> tuple[Any, Any]:
    """Make ``run`` the parent of what the node calls: its ``config`` and LangChain's child config.

    Runs inside see the task's ``checkpoint_ns`` (which LangChain's runnables copy from the task's
    config in LangGraph), though the node's run does not."""
    child = run.get_child(tag)
    given: dict[str, Any] = lc.get("metadata") or {}
    namespace = given.get("checkpoint_ns")
    if namespace is not None and "checkpoint_ns" not in child.inheritable_metadata:
        child.add_metadata({"checkpoint_ns": namespace})
    saved = ctx.config
    ctx.config = {**saved, "callbacks": child}
    token = var_child_runnable_config.set(cast("Any", {**lc, "callbacks": child}))
    return saved, token


def traced_call(  # noqa: PLR0913 - how the node's run is reported
    call: Callable[[Any, Any], Any],
    name: str,
    is_async: bool,
    *,
    inner: bool = False,
    policy: TracePolicy | None = None,
    routes: int = 0,
) -> Callable[[Any, Any], Any]:
    """Wrap a node's ``call(input, ctx)`` so that, when the run has callbacks, it reports a chain run.

    ``inner``: the run of a subgraph node's graph, under its node's run (no step tag, no output stream).
    ``policy``: what the run records of the node's input and output.
    ``routes``: the node's conditional edges (its run stays open for their runs, see :class:`HeldRun`).
    """
    how = (inner, policy or _AS_IS, routes)
    if is_async:

        async def acall(state: Any, ctx: Any) -> Any:
            lc = ctx.lc_config
            if lc is None or not ctx.config.get("callbacks"):
                return await cast("Awaitable[Any]", call(state, ctx))
            return await _atraced(call, name, state, ctx, how)

        return acall

    def sync_call(state: Any, ctx: Any) -> Any:
        lc = ctx.lc_config
        if lc is None or not ctx.config.get("callbacks"):
            return call(state, ctx)
        return _traced(call, name, state, ctx, how)

    return sync_call


def _manager(kind: type[Any], ctx: Any, lc: dict[str, Any], inner: bool) -> Any:
    if inner:  # under the node's run, which the outer wrapper made ctx.config's parent
        return configure(kind, lc, ctx.config.get("callbacks"), None, _node_metadata(lc))
    metadata: dict[str, Any] = lc.get("metadata") or {}
    tags = [f"graph:step:{metadata.get('langgraph_step', 0)}"]
    return configure(kind, lc, lc.get("callbacks"), tags, _node_metadata(lc))


def _held(ctx: Any, run: Any, out: Any, how: tuple[bool, TracePolicy, int]) -> bool:
    """Keep the node's run open for its routers (see :class:`HeldRun`), if it has any."""
    inner, policy, routes = how
    task = getattr(ctx, "task", None)
    if inner or not routes or task is None:
        return False
    held = HeldRun(run, out, policy, routes, stream=True)
    given: dict[str, Any] = ctx.lc_config.get("metadata") or {}
    held.namespace = given.get("checkpoint_ns")
    task.trace = held
    return True


# -- reporting a node's run (the sync code is generated from the async code) ---------------------


# >>> async source
async def _atraced(
    call: Callable[[Any, Any], Any], name: str, state: Any, ctx: Any, how: tuple[bool, TracePolicy, int]
) -> Any:
    inner, policy, _ = how
    lc = ctx.lc_config
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
    elif _held(ctx, run, out, how):
        return out
    else:
        await _atap(run, out)
    await run.on_chain_end(recorded(out, policy.process_outputs))
    return out


async def _atap(run: Any, output: Any) -> None:
    """Stream ``output`` as ``run``'s (``astream_events``), when a handler streams it."""
    found = streamer(run)
    if found is not None:
        async for _ in cast("AsyncIterator[Any]", found.tap_output_aiter(run.run_id, _aone(output))):
            pass


async def _aone(item: Any) -> AsyncIterator[Any]:
    yield item


# <<< async source


# >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
def _traced(
    call: Callable[[Any, Any], Any], name: str, state: Any, ctx: Any, how: tuple[bool, TracePolicy, int]
) -> Any:
    inner, policy, _ = how
    lc = ctx.lc_config
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
    elif _held(ctx, run, out, how):
        return out
    else:
        _tap(run, out)
    run.on_chain_end(recorded(out, policy.process_outputs))
    return out


def _tap(run: Any, output: Any) -> None:
    """Stream ``output`` as ``run``'s (``astream_events``), when a handler streams it."""
    found = streamer(run)
    if found is not None:
        for _ in cast("Iterator[Any]", found.tap_output_iter(run.run_id, _one(output))):
            pass


def _one(item: Any) -> Iterator[Any]:
    yield item


# <<< generated sync
