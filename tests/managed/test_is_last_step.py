"""``RemainingSteps`` / ``IsLastStep``: filled in per task from the recursion limit, never stored."""

import operator
from typing import Annotated, TypedDict

import pytest
from typing_extensions import NotRequired, Required

from plait.constants import END, START
from plait.errors import GraphRecursionError
from plait.graph import StateGraph
from plait.managed import IsLastStep, RemainingSteps
from plait.managed.base import ManagedValue, Scratchpad


class State(TypedDict):
    log: Annotated[list, operator.add]
    remaining: RemainingSteps
    last: IsLastStep


def _loop(stop_after: int) -> StateGraph:
    g = StateGraph(State)
    g.add_node("work", lambda s: {"log": [(s["remaining"], s["last"])]})
    g.add_edge(START, "work")
    g.add_conditional_edges("work", lambda s: END if len(s["log"]) >= stop_after else "work")
    return g


def test_values_count_down_to_the_recursion_limit(driver) -> None:
    out = driver.invoke(_loop(4).compile(), {"log": []}, {"recursion_limit": 5})
    assert out["log"] == [(4, False), (3, False), (2, False), (1, True)]
    assert "remaining" not in out and "last" not in out


def test_an_agent_can_stop_before_the_limit() -> None:
    g = StateGraph(State)
    g.add_node("work", lambda s: {"log": [s["remaining"]]})
    g.add_edge(START, "work")
    g.add_conditional_edges("work", lambda s: END if s["log"][-1] < 2 else "work")
    assert g.compile().invoke({"log": []}, {"recursion_limit": 4})["log"] == [3, 2, 1]
    with pytest.raises(GraphRecursionError):
        _loop(10).compile().invoke({"log": []}, {"recursion_limit": 3})


def test_each_run_on_a_thread_counts_from_its_own_start(saver, thread) -> None:
    app = _loop(2).compile(checkpointer=saver)
    config = {**thread, "recursion_limit": 5}
    app.invoke({"log": []}, config)
    g2 = StateGraph(State)
    g2.add_node("work", lambda s: {"log": [(s["remaining"], s["last"])]})
    g2.add_edge(START, "work")
    out = g2.compile(checkpointer=saver).invoke({"log": []}, config)
    assert out["log"][-1] == (4, False)
    assert "remaining" not in app.get_state(config).values


def test_builder_lists_managed_keys_however_they_are_wrapped() -> None:
    class Wrapped(TypedDict):
        a: NotRequired[RemainingSteps]
        b: Required[IsLastStep]
        c: int

    g = StateGraph(Wrapped)
    assert set(g.managed) == {"a", "b"}
    assert set(g.channels) == {"c"}


def test_a_custom_managed_value_gets_the_step_and_stop() -> None:
    class StepOf(ManagedValue[int]):
        @staticmethod
        def get(scratchpad: Scratchpad) -> int:
            return scratchpad.step

    class Custom(TypedDict):
        step: Annotated[int, StepOf]
        seen: list[int]

    g = StateGraph(Custom)
    g.add_node("a", lambda s: {"seen": [s["step"]]})
    g.add_node("b", lambda s: {"seen": [*s["seen"], s["step"]]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    assert g.compile().invoke({"seen": []}) == {"seen": [1, 2]}  # the input is step 0, as in LangGraph
