"""``batch`` / ``abatch``: one run per input, run side by side (at most ``max_concurrency`` at once)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
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


def batch(graph: _Runs, inputs: Sequence[Any], config: Any, **kwargs: Any) -> list[Any]:
    """``graph.invoke`` once per input, in parallel threads; the results in input order."""
    configs = _configs(config, len(inputs))
    if len(inputs) <= 1:
        return [graph.invoke(i, c, **kwargs) for i, c in zip(inputs, configs, strict=True)]
    limit = max_concurrency(configs[0]) or _THREADS

    def invoke_one(ic: tuple[Any, Any]) -> Any:
        return graph.invoke(ic[0], ic[1], **kwargs)

    with ThreadPoolExecutor(max_workers=min(limit, len(inputs))) as pool:
        return list(pool.map(invoke_one, zip(inputs, configs, strict=True)))


async def abatch(graph: _Runs, inputs: Sequence[Any], config: Any, **kwargs: Any) -> list[Any]:
    """``graph.ainvoke`` once per input, concurrently; the results in input order."""
    configs = _configs(config, len(inputs))
    limit = max_concurrency(configs[0]) if configs else None
    gate = asyncio.Semaphore(limit) if limit else None

    async def one(run: Awaitable[Any]) -> Any:
        if gate is None:
            return await run
        async with gate:
            return await run

    return list(
        await asyncio.gather(
            *(one(graph.ainvoke(i, c, **kwargs)) for i, c in zip(inputs, configs, strict=True))
        )
    )
