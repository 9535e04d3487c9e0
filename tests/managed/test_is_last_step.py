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


class Routed(TypedDict):
    x: int
    remaining: RemainingSteps
    last: IsLastStep


def _routed(seen: list[tuple[str, int, bool]]) -> StateGraph:
    """A loop whose conditional edges (from START and from the node) record the managed values they get."""

    def route_start(s: Routed) -> str:
        seen.append(("start", s["remaining"], s["last"]))
        return "work"

    def route(s: Routed) -> str:
        seen.append(("route", s["remaining"], s["last"]))
        return "work" if s["x"] < 4 else END

    def work(s: Routed) -> dict:
        seen.append(("work", s["remaining"], s["last"]))
        return {"x": s["x"] + 1}

    g = StateGraph(Routed)
    g.add_node("work", work)
    g.add_conditional_edges(START, route_start, ["work"])
    g.add_conditional_edges("work", route, ["work", END])
    return g


@pytest.mark.parametrize("checkpointed", [False, True])
def test_conditional_edges_see_the_managed_values_of_the_step_they_follow(
    driver, saver, thread, checkpointed
) -> None:
    # as in LangGraph: a router sees what the node it follows saw (a router from START: the whole limit)
    seen: list[tuple[str, int, bool]] = []
    app = _routed(seen).compile(checkpointer=saver if checkpointed else None)
    driver.invoke(app, {"x": 0}, {**(thread if checkpointed else {}), "recursion_limit": 5})
    assert seen == [
        ("start", 5, False),
        *[(kind, left, left == 1) for left in (4, 3, 2, 1) for kind in ("work", "route")],
    ]


def test_update_state_routes_as_if_two_steps_were_left(saver, thread) -> None:
    seen: list[tuple[str, int, bool]] = []
    app = _routed(seen).compile(checkpointer=saver)
    app.invoke({"x": 3}, {**thread, "recursion_limit": 5})
    seen.clear()
    app.update_state(thread, {"x": 0}, as_node="work")
    assert seen == [("route", 2, False)]
    assert app.get_state(thread).next == ("work",)


def test_a_router_with_a_schema_of_its_own_gets_its_managed_values() -> None:
    class Plain(TypedDict):
        x: int

    class RouterView(TypedDict):
        x: int
        left: RemainingSteps

    seen: list[dict] = []

    def route(s: RouterView) -> str:
        seen.append(dict(s))
        return END

    g = StateGraph(Plain)
    g.add_node("n", lambda s: {"x": 1})
    g.add_edge(START, "n")
    g.add_conditional_edges("n", route, [END])
    g.compile().invoke({"x": 0}, {"recursion_limit": 9})
    assert seen == [{"x": 1, "left": 8}]  # the step of the node it follows, as LangGraph gives it
