"""Several retry policies on one node or task: the first whose ``retry_on`` matches the error applies."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest

from plait.func import entrypoint, task
from plait.graph import START, StateGraph
from plait.types import RetryPolicy

_FAST = {"initial_interval": 0.0, "jitter": False}
POLICIES = [
    RetryPolicy(retry_on=KeyError, max_attempts=5, **_FAST),
    RetryPolicy(retry_on=ValueError, max_attempts=3, **_FAST),
]


class State(TypedDict):
    n: int


def _flaky(fails: int, exc: type[Exception]) -> Any:
    calls: list[int] = []

    def node(state: State) -> dict[str, int]:
        calls.append(1)
        if len(calls) <= fails:
            raise exc("not yet")
        return {"n": len(calls)}

    return node, calls


def _graph(node: Any) -> Any:
    return StateGraph(State).add_node("flaky", node, retry_policy=POLICIES).add_edge(START, "flaky").compile()


def test_the_policy_matching_the_error_applies() -> None:
    node, calls = _flaky(2, ValueError)  # the second policy's error: 3 attempts allowed
    assert _graph(node).invoke({"n": 0}) == {"n": 3}
    node, calls = _flaky(4, KeyError)  # the first policy's: 5 attempts allowed
    assert _graph(node).invoke({"n": 0}) == {"n": 5}


def test_each_policy_keeps_its_own_limit_and_other_errors_are_not_retried() -> None:
    node, calls = _flaky(3, ValueError)
    with pytest.raises(ValueError, match="not yet"):
        _graph(node).invoke({"n": 0})
    assert len(calls) == 3
    node, calls = _flaky(1, TypeError)
    with pytest.raises(TypeError):
        _graph(node).invoke({"n": 0})
    assert len(calls) == 1


def test_functional_tasks_take_several_policies_too() -> None:
    calls: list[int] = []

    @task(retry_policy=POLICIES)
    def flaky() -> int:
        calls.append(1)
        if len(calls) <= 2:
            raise ValueError("not yet")
        return len(calls)

    @entrypoint()
    def main(_: Any) -> int:
        return flaky().result()

    assert main.invoke({}) == 3
