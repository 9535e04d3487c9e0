"""``batch`` / ``abatch``: one run per input, run side by side (at most ``max_concurrency`` at once)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any, Protocol

from plait._internal._io_primitives import arun_all, run_all
from plait._internal._narrow import is_sequence
from plait.pregel._concurrency import max_concurrency

__all__ = ["abatch", "batch"]


class _Runs(Protocol):
    """What a batch needs of its graph: one run per input."""

    @property
    def invoke(self) -> Callable[..., object]: ...

    @property
    def ainvoke(self) -> Callable[..., Awaitable[object]]: ...


def _configs(config: object, count: int) -> list[Any]:
    """One config per input: the list given, or the one config repeated."""
    if is_sequence(config):
        configs = list(config)
        if len(configs) != count:
            raise ValueError(f"batch got {count} inputs but {len(configs)} configs")
        return configs
    return [config] * count


# >>> async source
async def abatch(graph: _Runs, inputs: Sequence[object], config: object, **kwargs: object) -> list[object]:
    """One run per input (``invoke``; ``ainvoke`` when async), side by side: in threads, or
    concurrently on the event loop when async; the results in input order."""
    configs = _configs(config, len(inputs))
    calls = [partial(graph.ainvoke, i, c, **kwargs) for i, c in zip(inputs, configs, strict=True)]
    return await arun_all(calls, max_concurrency(configs[0] if configs else None))


# <<< async source


# >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
def batch(graph: _Runs, inputs: Sequence[object], config: object, **kwargs: object) -> list[object]:
    """One run per input (``invoke``; ``ainvoke`` when async), side by side: in threads, or
    concurrently on the event loop when async; the results in input order."""
    configs = _configs(config, len(inputs))
    calls = [partial(graph.invoke, i, c, **kwargs) for i, c in zip(inputs, configs, strict=True)]
    return run_all(calls, max_concurrency(configs[0] if configs else None))


# <<< generated sync
