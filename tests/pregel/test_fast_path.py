"""The fast path (plait/pregel/_fast.py) gives what the loop gives, and hands over to it where it must.

Each case runs one graph twice: ``graph.run_fast(...)`` (the fast path, called directly so that a
case cannot silently take the loop) and ``graph.invoke(..., interrupt_before=None)`` (an option:
the loop). Outputs, errors and what nodes saw must be the same.
"""

from __future__ import annotations

import contextvars
import operator
import threading
import warnings
from typing import Annotated, Any, TypedDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.callbacks import BaseCallbackHandler
from pydantic import BaseModel

from plait._context import running_task
from plait.config import get_config
from plait.errors import GraphRecursionError, InvalidConfigError, InvalidUpdateError, UndeclaredKeyWarning
from plait.graph import END, START, StateGraph
from plait.pregel._fast import SLOW
from plait.pregel._thread import run_config
from plait.types import Command, RetryPolicy, Send, interrupt


class State(TypedDict, total=False):
    count: int
    log: Annotated[list[str], operator.add]
    last: str


def _both(graph: Any, inp: Any, config: dict[str, Any] | None = None) -> tuple[Any, Any]:
    """(fast path's outcome, loop's outcome): a value, or the raised exception's type and text."""
    assert graph.plan.fast is not None, "the case must be one the fast path takes"

    def outcome(call: Any) -> Any:
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 - compared, not handled
            return type(exc), str(exc)

    fast = outcome(lambda: graph.run_fast(inp, run_config(config), None))
    assert fast is not SLOW
    slow = outcome(lambda: graph.invoke(inp, config, interrupt_before=None))
    return fast, slow


def _node(name: str, step: int) -> Any:
    def node(state: State) -> dict[str, Any]:
        return {"count": state.get("count", 0) + step, "log": [name], "last": name}

    return node


@settings(max_examples=60, deadline=None)
@given(
    chain=st.lists(st.integers(min_value=1, max_value=3), min_size=1, max_size=5),
    loop_to=st.integers(min_value=0, max_value=4),
    stop_at=st.integers(min_value=1, max_value=30),
    limit=st.integers(min_value=1, max_value=40),
)
def test_random_chains_with_a_loop_back_agree(
    chain: list[int], loop_to: int, stop_at: int, limit: int
) -> None:
    builder = StateGraph(State)
    names = [f"n{i}" for i in range(len(chain))]
    for name, step in zip(names, chain, strict=True):
        builder.add_node(name, _node(name, step))
    builder.add_edge(START, names[0])
    for a, b in zip(names, names[1:], strict=False):
        builder.add_edge(a, b)
    back = names[min(loop_to, len(names) - 1)]

    def again(state: State) -> str:
        return END if state["count"] >= stop_at else "again"

    builder.add_conditional_edges(names[-1], again, {"again": back, END: END})
    fast, slow = _both(builder.compile(), {"count": 0, "log": []}, {"recursion_limit": limit})
    assert fast == slow


def test_the_recursion_limit_error_is_the_loops() -> None:
    builder = StateGraph(State)
    builder.add_node("spin", _node("spin", 1))
    builder.add_edge(START, "spin")
    builder.add_edge("spin", "spin")
    graph = builder.compile()
    fast, slow = _both(graph, {"count": 0}, {"recursion_limit": 7})
    assert fast == slow
    assert fast[0] is GraphRecursionError
    with pytest.raises(GraphRecursionError) as info:
        graph.run_fast({"count": 0}, run_config({"recursion_limit": 7}), None)
    assert info.value.step == 8


def test_a_failing_node_raises_its_own_exception() -> None:
    boom = ValueError("boom")

    def fail(state: State) -> dict[str, Any]:
        raise boom

    builder = StateGraph(State)
    builder.add_node("fail", fail)
    builder.add_edge(START, "fail")
    graph = builder.compile()
    with pytest.raises(ValueError) as info:
        graph.invoke({"count": 0})
    assert info.value is boom


def test_a_step_of_several_tasks_is_handed_to_the_loop() -> None:
    builder = StateGraph(State)
    builder.add_node("a", _node("a", 1))
    builder.add_node("b", _node("b", 10))
    builder.add_node("c", _node("c", 100))
    builder.add_node("d", lambda s: {"last": f"d after {sorted(s['log'])}"})
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("a", "c")
    builder.add_edge("b", "d")
    graph = builder.compile()
    fast, slow = _both(graph, {"count": 0})
    assert fast == slow
    assert isinstance(fast, tuple)  # b and c both write "count" in one step: the loop's error
    assert fast[0] is InvalidUpdateError


def test_send_fan_out_is_handed_to_the_loop() -> None:
    builder = StateGraph(State)
    builder.add_node("plan", lambda s: {"last": "plan"})
    builder.add_node("work", lambda arg: {"log": [f"w{arg}"]})
    builder.add_node("done", lambda s: {"last": f"{len(s['log'])} done"})
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", lambda s: [Send("work", i) for i in range(5)], ["work"])
    builder.add_edge("work", "done")
    fast, slow = _both(builder.compile(), {"log": []})
    assert fast == slow == {"log": [f"w{i}" for i in range(5)], "last": "5 done"}


def test_a_command_result_is_handed_to_the_loop() -> None:
    builder = StateGraph(State)
    builder.add_node("a", lambda s: Command(update={"last": "a", "log": ["a"]}, goto="c"))
    builder.add_node("b", _node("b", 1))
    builder.add_node("c", lambda s: {"log": ["c"]})
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    fast, slow = _both(builder.compile(), {"count": 0})
    assert fast == slow == {"count": 1, "log": ["a", "b", "c"], "last": "b"}


def test_a_node_that_reads_its_config_sees_the_loops_task_keys() -> None:
    seen: list[dict[str, Any]] = []

    def look(state: State) -> dict[str, Any]:
        metadata = get_config()["metadata"]
        seen.append({k: metadata[k] for k in ("langgraph_node", "langgraph_step", "langgraph_triggers")})
        return {"count": state["count"] + 1}

    builder = StateGraph(State)
    builder.add_node("first", _node("first", 1))
    builder.add_node("look", look)
    builder.add_node("after", _node("after", 1))
    builder.add_edge(START, "first")
    builder.add_edge("first", "look")
    builder.add_edge("look", "after")
    fast, slow = _both(builder.compile(), {"count": 0})
    assert fast == slow == {"count": 3, "log": ["first", "after"], "last": "after"}
    assert seen[0] == seen[1]
    assert seen[0]["langgraph_node"] == "look" and seen[0]["langgraph_step"] == 2


def test_an_interrupt_without_a_saver_ends_the_run_as_the_loops_does() -> None:
    def ask(state: State) -> dict[str, Any]:
        return {"last": interrupt("name?")}

    builder = StateGraph(State)
    builder.add_node("a", _node("a", 1))
    builder.add_node("ask", ask)
    builder.add_edge(START, "a")
    builder.add_edge("a", "ask")
    fast, slow = _both(builder.compile(), {"count": 0})
    assert fast == slow
    assert fast["__interrupt__"][0].value == "name?"


def test_a_wrong_return_value_is_the_loops_error() -> None:
    builder = StateGraph(State)
    builder.add_node("a", lambda s: "not a dict")
    builder.add_edge(START, "a")
    fast, slow = _both(builder.compile(), {"count": 0})
    assert fast == slow
    assert fast[0] is InvalidUpdateError


def test_an_undeclared_key_warns_on_both_paths() -> None:
    builder = StateGraph(State)
    builder.add_node("a", lambda s: {"count": 1, "typo": 2})
    builder.add_edge(START, "a")
    graph = builder.compile()
    for run in (
        lambda: graph.run_fast({"count": 0}, run_config(None), None),
        lambda: graph.invoke({"count": 0}, interrupt_before=None),
    ):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert run() == {"count": 1, "log": []}
        assert [w.category for w in caught] == [UndeclaredKeyWarning]


class Person(BaseModel):
    name: str = "nobody"
    visits: int = 0


def test_a_state_class_input_and_router_agree() -> None:
    builder = StateGraph(Person)
    builder.add_node("visit", lambda p: {"visits": p.visits + 1})
    builder.add_edge(START, "visit")
    builder.add_conditional_edges("visit", lambda p: END if p.visits >= 3 else "visit", ["visit", END])
    fast, slow = _both(builder.compile(), {"name": "ada"})
    assert fast == slow == {"name": "ada", "visits": 3}


def test_a_graph_invoked_inside_a_node_runs_there() -> None:
    inner = StateGraph(State)
    inner.add_node("x", _node("x", 7))
    inner.add_edge(START, "x")
    child = inner.compile()

    seen = StateGraph(State)
    seen.add_node("outer", lambda s: {"count": child.invoke({"count": s["count"]})["count"] + 1})
    seen.add_edge(START, "outer")
    assert seen.compile().plan.fast is None  # a node known to run a graph: subgraph runs take the loop

    graphs = {"child": child}  # found only when the node runs: the run is handed to the loop there

    builder = StateGraph(State)
    builder.add_node("outer", lambda s: {"count": graphs["child"].invoke({"count": s["count"]})["count"] + 1})
    builder.add_node("then", _node("then", 1))
    builder.add_edge(START, "outer")
    builder.add_edge("outer", "then")
    fast, slow = _both(builder.compile(), {"count": 1})
    assert fast == slow == {"count": 10, "log": ["then"], "last": "then"}


class _Seen(BaseCallbackHandler):
    def __init__(self) -> None:
        self.chains = 0

    def on_chain_start(self, *args: Any, **kwargs: Any) -> None:
        self.chains += 1


def test_callbacks_and_options_take_the_loop() -> None:
    builder = StateGraph(State)
    builder.add_node("a", _node("a", 1))
    builder.add_edge(START, "a")
    graph = builder.compile()
    seen = _Seen()
    assert graph.run_fast({"count": 0}, run_config({"callbacks": [seen]}), None) is SLOW
    assert graph.invoke({"count": 0}, {"callbacks": [seen]}) == {"count": 1, "log": ["a"], "last": "a"}
    assert seen.chains >= 2  # the graph's run and its node's: the loop traced them


def test_plans_with_what_it_does_not_run_have_no_fast_tables() -> None:
    builder = StateGraph(State)
    builder.add_node("a", _node("a", 1), retry_policy=RetryPolicy(max_attempts=2))
    builder.add_edge(START, "a")
    assert builder.compile().plan.fast is None

    joined = StateGraph(State)
    for name in ("a", "b", "c"):
        joined.add_node(name, _node(name, 1))
    joined.add_edge(START, "a")
    joined.add_edge(START, "b")
    joined.add_edge(["a", "b"], "c")
    assert joined.compile().plan.fast is None


def test_a_context_reached_from_another_thread_after_its_node_is_that_nodes() -> None:
    box: dict[str, Any] = {"routed": False}
    seen: list[str] = []

    def n1(state: State) -> dict[str, Any]:
        box["go"], box["done"] = threading.Event(), threading.Event()

        def later() -> None:
            box["go"].wait()
            seen.append(get_config()["metadata"]["langgraph_node"])
            box["done"].set()

        threading.Thread(target=contextvars.copy_context().run, args=(later,), daemon=True).start()
        return {"log": ["n1"]}

    def route(state: State) -> str:
        if box["routed"]:
            return END
        box["routed"] = True
        box["go"].set()  # n1 has returned: the thread reaches n1's context now
        box["done"].wait()
        return "n2"

    def build() -> Any:
        builder = StateGraph(State)
        builder.add_node("n1", n1)
        builder.add_node("n2", _node("n2", 2))
        builder.add_node("n3", _node("n3", 3))
        builder.add_edge(START, "n1")
        builder.add_conditional_edges("n1", route, ["n2", END])
        builder.add_edge("n2", "n3")
        return builder.compile()

    fast = build().invoke({"count": 0})
    box["routed"] = False
    slow = build().invoke({"count": 0}, interrupt_before=None)
    assert fast == slow == {"count": 5, "log": ["n1", "n2", "n3"], "last": "n3"}
    assert seen == ["n1", "n1"]


def test_after_a_hand_over_no_task_context_is_left_and_errors_are_not_chained() -> None:
    seen: list[Any] = []

    def route(state: State) -> str:
        seen.append(getattr(running_task(), "node", None))
        return END

    def fail(state: State) -> dict[str, Any]:
        raise ValueError("late")

    def build(last: Any) -> Any:
        builder = StateGraph(State)
        builder.add_node("n1", lambda s: Command(goto="n2", update={"count": 1}))
        builder.add_node("n2", last)
        builder.add_edge(START, "n1")
        builder.add_conditional_edges("n2", route, [END])
        return builder.compile()

    assert build(_node("n2", 1)).invoke({"count": 0})["count"] == 2
    assert seen == ["n2"]  # the router runs in its own node's task, as in the loop (not n1's, left over)
    for graph in (build(fail), build(fail)):
        with pytest.raises(ValueError, match="late") as info:
            graph.invoke({"count": 0})
        assert info.value.__context__ is None


def test_stop_iteration_from_a_node_or_router_is_the_loops_runtime_error() -> None:
    def stop(state: State) -> dict[str, Any]:
        raise StopIteration("node")

    builder = StateGraph(State)
    builder.add_node("stop", stop)
    builder.add_edge(START, "stop")
    fast, slow = _both(builder.compile(), {"count": 0})
    assert fast == slow == (RuntimeError, "generator raised StopIteration")

    routed = StateGraph(State)
    routed.add_node("a", _node("a", 1))
    routed.add_edge(START, "a")
    routed.add_conditional_edges("a", lambda s: next(iter(())), [END])
    fast, slow = _both(routed.compile(), {"count": 0})
    assert fast == slow == (RuntimeError, "generator raised StopIteration")


@pytest.mark.parametrize("limit", ["3", True, 2.0, 0, -1])
def test_a_recursion_limit_set_with_with_config_is_checked(limit: Any) -> None:
    builder = StateGraph(State)
    builder.add_node("a", _node("a", 1))
    builder.add_edge(START, "a")
    graph = builder.compile().with_config(recursion_limit=limit)
    with pytest.raises(InvalidConfigError):
        graph.invoke({"count": 0})
    with pytest.raises(InvalidConfigError):
        graph.invoke({"count": 0}, interrupt_before=None)
