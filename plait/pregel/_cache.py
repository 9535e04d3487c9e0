"""Node and task caching: a cached call is not made again; its stored writes are replayed.

A node with a ``cache_policy`` (on a graph compiled with ``cache=``) looks its
input's key up before it runs; on a hit its writes and routing come from the
cache and the task is marked ``cached`` (``stream_mode="updates"`` says so). A
call that finished (no error, no interrupt) is stored with the policy's ttl.
Functional-API tasks use the same keys over their arguments.

Nothing here runs unless a node has a policy and the plan has a cache.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from typing import Any

from plait.pregel._context import TaskContext
from plait.pregel._plan import Plan
from plait.pregel._task import Task
from plait.types import CachePolicy

__all__ = [
    "CACHE_NS",
    "acache_task",
    "arecall_task",
    "cache_key",
    "cache_task",
    "identifier",
    "namespaces",
    "node_namespace",
    "recall_task",
    "task_namespace",
]

CACHE_NS = "__pregel_ns_writes"
"""First part of every namespace plait caches writes under."""

FullKey = tuple[tuple[str, ...], str]


def identifier(fn: object) -> str:
    """``module.qualname`` of a function or callable object (``"__dynamic__"`` when it has none)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    target = getattr(fn, "__func__", fn)  # bound methods: the function
    module = getattr(target, "__module__", None)
    name = getattr(target, "__qualname__", None)
    if not isinstance(name, str):
        kind: object = getattr(target, "__class__", None)  # a callable object: named after its class
        name, module = getattr(kind, "__qualname__", None), getattr(kind, "__module__", None)
    if not isinstance(module, str) or not isinstance(name, str):
        return "__dynamic__"
    return f"{module}.{name}"


def node_namespace(action: object, node: str) -> tuple[str, ...]:
    """The namespace of a graph node's cache entries."""
    return (CACHE_NS, identifier(action), node)


def task_namespace(fn: object) -> tuple[str, ...]:
    """The namespace of a functional task's cache entries."""
    return (CACHE_NS, identifier(fn))


def cache_key(policy: CachePolicy[Any], *args: object, **kwargs: object) -> str:
    """The key of a call: a hash of what the policy's ``key_func`` makes of the arguments.

    Raises:
        TypeError: ``key_func`` returned neither ``str`` nor ``bytes``.
    """
    raw = policy.key_func(*args, **kwargs)
    if isinstance(raw, str):
        raw = raw.encode()
    if not isinstance(raw, (bytes, bytearray)):
        raise TypeError(
            f"CachePolicy.key_func must return str or bytes, got {type(raw).__name__} ({raw!r:.80})"
        )
    return hashlib.blake2b(bytes(raw), digest_size=16).hexdigest()


def _plan_cache(ctx: TaskContext) -> Any:
    loop = ctx.loop
    return None if loop is None else loop.settings.plan.cache


def _node_key(task: Task) -> FullKey:
    policy = task.node.cache_policy
    assert policy is not None  # noqa: S101 - callers check it
    return (task.node.cache_ns, cache_key(policy, task.input))


def _replay(task: Task, found: dict[Any, Any], key: FullKey) -> bool:
    if key not in found:
        return False
    writes, goto = found[key]
    task.writes = [(str(k), v) for k, v in writes]
    task.goto = list(goto)
    task.done = task.cached = True
    return True


# >>> async source
async def arecall_task(task: Task, ctx: TaskContext) -> bool:
    """Replay ``task``'s writes from the cache; whether it was cached (then it must not run)."""
    cache = _plan_cache(ctx)
    if cache is None:
        return False
    key = _node_key(task)
    return _replay(task, await cache.aget([key]), key)


# <<< async source


# >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
def recall_task(task: Task, ctx: TaskContext) -> bool:
    """Replay ``task``'s writes from the cache; whether it was cached (then it must not run)."""
    cache = _plan_cache(ctx)
    if cache is None:
        return False
    key = _node_key(task)
    return _replay(task, cache.get([key]), key)


# <<< generated sync


def _entry(task: Task) -> dict[FullKey, tuple[Any, int | None]] | None:
    policy = task.node.cache_policy
    if policy is None or not task.done or task.cached or task.error is not None or task.interrupts:
        return None
    return {_node_key(task): (([list(w) for w in task.writes], list(task.goto)), policy.ttl)}


# >>> async source
async def acache_task(task: Task, ctx: TaskContext) -> None:
    """Store a finished task's writes (nothing for errors, interrupts or replays)."""
    cache = _plan_cache(ctx)
    entry = _entry(task) if cache is not None else None
    if entry and cache is not None:
        await cache.aset(entry)


# <<< async source


# >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
def cache_task(task: Task, ctx: TaskContext) -> None:
    """Store a finished task's writes (nothing for errors, interrupts or replays)."""
    cache = _plan_cache(ctx)
    entry = _entry(task) if cache is not None else None
    if entry and cache is not None:
        cache.set(entry)


# <<< generated sync


def namespaces(plan: Plan, nodes: Sequence[str] | None) -> tuple[Any, list[tuple[str, ...]]]:
    """The plan's cache and the namespaces of ``nodes`` (``None``: every node), for ``clear_cache``.

    Raises:
        ValueError: the graph has no cache.
    """
    cache = plan.cache
    if cache is None:
        raise ValueError("No cache is set for this graph. Cannot clear cache.")
    names = list(plan.nodes) if nodes is None else nodes
    return cache, [plan.nodes[n].cache_ns for n in names if n in plan.nodes and plan.nodes[n].cache_ns]
