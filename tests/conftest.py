"""Shared fixtures for the plait test-suite."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from plait.checkpoint.memory import InMemorySaver

# Property tests hold on a loaded 2-core machine: no per-example deadline, and no health check
# that times generation (too_slow) or fails a run whose random draws happened to be large. A test's
# own ``@settings`` inherits these (it is made after this module is imported).
settings.register_profile(
    "plait",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("plait")


@pytest.fixture
def saver() -> InMemorySaver:
    """A fresh in-memory checkpointer."""
    return InMemorySaver()


@pytest.fixture
def thread() -> dict:
    """A config addressing a brand-new thread."""
    return {"configurable": {"thread_id": f"t-{uuid.uuid4().hex}"}}


class Driver:
    """Runs a graph through the sync or the async API, so one test covers both drivers."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        return self.kind

    def invoke(self, graph: Any, input: Any, config: Any = None, **kwargs: Any) -> Any:  # noqa: A002
        if self.kind == "sync":
            return graph.invoke(input, config, **kwargs)
        return asyncio.run(graph.ainvoke(input, config, **kwargs))

    def stream(self, graph: Any, input: Any, config: Any = None, **kwargs: Any) -> list[Any]:  # noqa: A002
        if self.kind == "sync":
            return list(graph.stream(input, config, **kwargs))

        async def collect() -> list[Any]:
            return [chunk async for chunk in graph.astream(input, config, **kwargs)]

        return asyncio.run(collect())

    def get_state(self, graph: Any, config: Any) -> Any:
        if self.kind == "sync":
            return graph.get_state(config)
        return asyncio.run(graph.aget_state(config))

    def update_state(self, graph: Any, config: Any, values: Any, as_node: str | None = None) -> Any:
        if self.kind == "sync":
            return graph.update_state(config, values, as_node)
        return asyncio.run(graph.aupdate_state(config, values, as_node))

    def get_state_history(self, graph: Any, config: Any, **kwargs: Any) -> list[Any]:
        if self.kind == "sync":
            return list(graph.get_state_history(config, **kwargs))

        async def collect() -> list[Any]:
            return [snapshot async for snapshot in graph.aget_state_history(config, **kwargs)]

        return asyncio.run(collect())

    def batch(self, graph: Any, inputs: Any, config: Any = None, **kwargs: Any) -> list[Any]:
        if self.kind == "sync":
            return graph.batch(inputs, config, **kwargs)
        return asyncio.run(graph.abatch(inputs, config, **kwargs))


@pytest.fixture(params=["sync", "async"])
def driver(request: pytest.FixtureRequest) -> Driver:
    """The sync (``invoke``/``stream``) or the async (``ainvoke``/``astream``) driver."""
    return Driver(request.param)
