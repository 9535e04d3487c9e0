"""Every public module declares a sorted ``__all__`` of names that exist."""

import importlib

import pytest

PUBLIC = [
    "plait.graph",
    "plait.graph.message",
    "plait.graph.state",
    "plait.graph.ui",
    "plait.types",
    "plait.errors",
    "plait.constants",
    "plait.checkpoint.base",
    "plait.checkpoint.memory",
    "plait.checkpoint.serde.encrypted",
    "plait.checkpoint.postgres",
    "plait.checkpoint.postgres.aio",
    "plait.checkpoint.postgres.shallow",
    "plait.config",
    "plait.runtime",
    "plait.pregel",
    "plait.pregel.remote",
    "plait.channels",
    "plait.channels.any_value",
    "plait.channels.ephemeral_value",
    "plait.channels.named_barrier_value",
    "plait.channels.topic",
    "plait.channels.untracked_value",
    "plait.managed",
    "plait.managed.base",
    "plait.managed.is_last_step",
    "plait.typing",
    "plait.warnings",
    "plait.func",
    "plait.cache.base",
    "plait.cache.memory",
    "plait.cache.sqlite",
    "plait.store.base",
    "plait.store.memory",
    "plait.store.sqlite",
    "plait.store.sqlite.aio",
    "plait.store.postgres",
    "plait.store.postgres.aio",
    "plait.server",
    "plait.cli.serve",
    "plait.prebuilt",
    "plait.stream",
    "plait.stream.transformers",
    "plait.prebuilt.tool_node",
    "plait.prebuilt.chat_agent_executor",
    "plait.prebuilt.tool_validator",
    "plait.prebuilt.interrupt",
    "plait.agents",
    "plait.agents.factory",
    "plait.cli.chat",
    "plait.cli.migrate",
]


@pytest.mark.parametrize("name", PUBLIC)
def test_module_has_all(name: str) -> None:
    module = importlib.import_module(name)
    assert isinstance(getattr(module, "__all__", None), (list, tuple))
    assert module.__all__


def _isort_key(name: str) -> tuple[int, str]:
    """Ruff RUF022 "isort-style" order: CONSTANTS, then Classes, then functions."""
    if name.isupper():
        return 0, name
    if name[:1].isupper():
        return 1, name
    return 2, name


@pytest.mark.parametrize("name", PUBLIC)
def test_all_is_sorted(name: str) -> None:
    # plain alphabetical order or ruff's isort-style order (both are used in the code base)
    exported = list(importlib.import_module(name).__all__)
    assert exported in (sorted(exported), sorted(exported, key=_isort_key))


@pytest.mark.parametrize("name", PUBLIC)
def test_all_names_exist(name: str) -> None:
    module = importlib.import_module(name)
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert missing == []


@pytest.mark.parametrize("name", PUBLIC)
def test_all_has_no_duplicates(name: str) -> None:
    exported = list(importlib.import_module(name).__all__)
    assert len(exported) == len(set(exported))


def test_langgraph_core_names_importable() -> None:
    from plait.constants import END, START  # noqa: F401
    from plait.errors import GraphRecursionError, InvalidUpdateError  # noqa: F401
    from plait.graph import END as E2  # noqa: F401
    from plait.graph import START as S2  # noqa: F401
    from plait.graph import StateGraph  # noqa: F401
    from plait.types import Command, Interrupt, RetryPolicy, Send, interrupt  # noqa: F401
