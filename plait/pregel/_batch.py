"""``batch`` / ``abatch``: one run per input, run side by side (at most ``max_concurrency`` at once)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Protocol, cast

from plait.pregel._concurrency import max_concurrency

__all__ = ["abatch", "batch"]


class _Runs(Protocol):
    """What a batch needs of its graph: one run per input."""

    @property
    def invoke(self) -> Callable[..., Any]: ...

    @property
    def ainvoke(self) -> Callable[..., Awaitable[Any]]: ...


_THREADS = 16
"""Runs a sync batch keeps going at once when the config sets no ``max_concurrency``."""


def _configs(config: Any, count: int) -> list[Any]:
    """One config per input: the list given, or the one config repeated."""
    if isinstance(config, (list, tuple)):
        configs = list(cast("Sequence[Any]", config))
        if len(configs) != count:
            raise ValueError(f"batch got {count} inputs but {len(configs)} configs")
        return configs
    return [config] * count


def _run_all(calls: Sequence[Callable[[], Any]], config: Any) -> list[Any]:
    """The calls' results, in order: one call in this thread, several in threads (at most
    ``config``'s ``max_concurrency`` at once)."""
    if len(calls) <= 1:
        return [call() for call in calls]
    limit = max_concurrency(config) or _THREADS
    with ThreadPoolExecutor(max_workers=min(limit, len(calls))) as pool:
        return list(pool.map(_call, calls))


def _call(call: Callable[[], Any]) -> Any:
    return call()


async def _arun_all(calls: Sequence[Callable[[], Awaitable[Any]]], config: Any) -> list[Any]:
    """The calls' results, in order: run concurrently on this event loop (at most ``config``'s
    ``max_concurrency`` at once)."""
    limit = max_concurrency(config)
    gate = asyncio.Semaphore(limit) if limit else None

    async def one(call: Callable[[], Awaitable[Any]]) -> Any:
        if gate is None:
            return await call()
        async with gate:
            return await call()

    return list(await asyncio.gather(*(one(call) for call in calls)))


# >>> async source
async def abatch(graph: _Runs, inputs: Sequence[Any], config: Any, **kwargs: Any) -> list[Any]:
    """One run per input (``invoke``; ``ainvoke`` when async), side by side: in threads, or
    concurrently on the event loop when async; the results in input order."""
    configs = _configs(config, len(inputs))
    calls = [partial(graph.ainvoke, i, c, **kwargs) for i, c in zip(inputs, configs, strict=True)]
    return await _arun_all(calls, configs[0] if configs else None)


# <<< async source


# >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
def batch(graph: _Runs, inputs: Sequence[Any], config: Any, **kwargs: Any) -> list[Any]:
    """One run per input (``invoke``; ``ainvoke`` when async), side by side: in threads, or
    concurrently on the event loop when async; the results in input order."""
    configs = _configs(config, len(inputs))
    calls = [partial(graph.invoke, i, c, **kwargs) for i, c in zip(inputs, configs, strict=True)]
    return _run_all(calls, configs[0] if configs else None)


# <<< generated sync
