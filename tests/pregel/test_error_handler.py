"""Node error handlers (``add_node(..., error_handler=...)``, ``set_node_defaults``), on both drivers."""

from __future__ import annotations

import operator
import threading
from typing import Annotated, Any, TypedDict

import pytest

from plait.constants import END, START
from plait.errors import NodeError, StoredNodeError
from plait.graph import StateGraph
from plait.types import Command, RetryPolicy, Send, interrupt


class S(TypedDict):
    log: Annotated[list, operator.add]


def _boom(state: S) -> dict[str, Any]:
    raise ValueError("boom")


def test_handler_takes_the_failed_nodes_place(driver) -> None:
    seen: list[tuple[Any, str, BaseException]] = []

    def handler(state: S, error: NodeError) -> dict[str, Any]:
        seen.append((state, error.node, error.error))
        return {"log": ["handled"]}

    app = (
        StateGraph(S)
        .add_node("fails", _boom, error_handler=handler)
        .add_node("after", lambda s: {"log": ["after"]})
        .add_edge(START, "fails")
        .add_edge("fails", "after")  # the failed node's edges do not fire
        .compile()
    )
    assert driver.invoke(app, {"log": ["in"]}) == {"log": ["in", "handled"]}
    [(state, node, error)] = seen
    assert state == {"log": ["in"]}
    assert node == "fails"
    assert isinstance(error, ValueError)
    assert str(error) == "boom"


def test_handler_command_routes_the_run(driver) -> None:
    def handler(state: S) -> Command:  # no ``error`` parameter: it gets the state only
        return Command(update={"log": ["handled"]}, goto="next")

    app = (
        StateGraph(S)
        .add_node("fails", _boom, error_handler=handler)
        .add_node("next", lambda s: {"log": ["next"]})
        .add_edge(START, "fails")
        .compile()
    )
    assert driver.invoke(app, {"log": []}) == {"log": ["handled", "next"]}


def test_retries_run_out_before_the_handler_runs(driver) -> None:
    attempts: list[int] = []

    def flaky(state: S) -> dict[str, Any]:
        attempts.append(1)
        raise ValueError("again")

    def handler(state: S, error: NodeError) -> dict[str, Any]:
        return {"log": [f"handled after {len(attempts)}"]}

    policy = RetryPolicy(max_attempts=3, initial_interval=0.0, jitter=False, retry_on=ValueError)
    app = (
        StateGraph(S)
        .add_node("flaky", flaky, retry_policy=policy, error_handler=handler)
        .add_edge(START, "flaky")
        .compile()
    )
    assert driver.invoke(app, {"log": []}) == {"log": ["handled after 3"]}


def test_a_failing_handler_fails_the_run(driver) -> None:
    def handler(state: S) -> dict[str, Any]:
        raise RuntimeError("handler failed")

    app = StateGraph(S).add_node("fails", _boom, error_handler=handler).add_edge(START, "fails").compile()
    with pytest.raises(RuntimeError, match="handler failed"):
        driver.invoke(app, {"log": []})


def test_interrupts_pass_the_handler_by(driver, saver, thread) -> None:
    called: list[str] = []

    def asks(state: S) -> dict[str, Any]:
        return {"log": [interrupt("question")]}

    def handler(state: S) -> dict[str, Any]:
        called.append("handler")
        return {"log": ["handled"]}

    app = (
        StateGraph(S)
        .add_node("asks", asks, error_handler=handler)
        .add_node("other", lambda s: {"log": ["other"]})
        .add_edge(START, "asks")
        .add_edge(START, "other")
        .compile(checkpointer=saver)
    )
    out = driver.invoke(app, {"log": []}, thread)
    assert [i.value for i in out["__interrupt__"]] == ["question"]
    assert driver.get_state(app, thread).next == ("asks",)
    assert driver.invoke(app, Command(resume="answer"), thread) == {"log": ["answer", "other"]}
    assert called == []


def test_handler_starts_while_the_other_nodes_of_its_step_still_run(driver) -> None:
    handler_started = threading.Event()

    def slow(state: S) -> dict[str, Any]:
        assert handler_started.wait(5), "the handler did not run before the step ended"
        return {"log": ["slow"]}

    def handler(state: S) -> dict[str, Any]:
        handler_started.set()
        return {"log": ["handled"]}

    app = (
        StateGraph(S)
        .add_node("fails", _boom, error_handler=handler)
        .add_node("slow", slow)
        .add_edge(START, "fails")
        .add_edge(START, "slow")
        .compile()
    )
    assert driver.invoke(app, {"log": []}) == {"log": ["handled", "slow"]}


def test_stream_shows_the_failure_then_the_handler(driver) -> None:
    def handler(state: S) -> dict[str, Any]:
        return {"log": ["handled"]}

    app = StateGraph(S).add_node("fails", _boom, error_handler=handler).add_edge(START, "fails").compile()
    events = driver.stream(app, {"log": []}, stream_mode=["tasks", "updates", "values"])
    shown = [
        (mode, payload.get("name"), "error" in payload and payload["error"] is not None)
        if mode == "tasks"
        else (mode, payload)
        for mode, payload in events
    ]
    assert shown == [
        ("values", {"log": []}),
        ("tasks", "fails", False),  # started
        ("tasks", "fails", True),  # failed
        ("updates", {"__error_handler__fails": {"log": ["handled"]}}),
        ("tasks", "__error_handler__fails", False),
        ("values", {"log": ["handled"]}),
    ]


def test_resume_after_a_failing_handler_runs_the_handler_not_the_node(driver, any_saver, thread) -> None:
    calls = {"node": 0, "handler": 0}
    errors: list[BaseException] = []
    broken = [True]

    def fails(state: S) -> dict[str, Any]:
        calls["node"] += 1
        raise ValueError("boom")

    def handler(state: S, error: NodeError) -> dict[str, Any]:
        calls["handler"] += 1
        errors.append(error.error)
        if broken[0]:
            raise RuntimeError("handler crash")
        return {"log": [f"recovered {error.node}"]}

    app = (
        StateGraph(S)
        .add_node("fails", fails, error_handler=handler)
        .add_node("other", lambda s: {"log": ["other"]})
        .add_edge(START, "fails")
        .add_edge(START, "other")
        .compile(checkpointer=any_saver)
    )
    with pytest.raises(RuntimeError, match="handler crash"):
        driver.invoke(app, {"log": []}, thread)
    snapshot = driver.get_state(app, thread)
    assert snapshot.next == ("fails",)  # "other" finished
    assert [(t.name, t.error) for t in snapshot.tasks] == [("fails", "ValueError('boom')"), ("other", None)]
    broken[0] = False
    assert driver.invoke(app, None, thread) == {"log": ["recovered fails", "other"]}
    assert calls == {"node": 1, "handler": 2}
    assert isinstance(errors[0], ValueError)
    assert isinstance(errors[1], StoredNodeError)  # read back from the checkpoint
    assert str(errors[1]) == "ValueError('boom')"


def test_a_finished_handler_is_not_run_again_on_resume(driver, any_saver, thread) -> None:
    calls = {"handler": 0, "other": 0}

    def handler(state: S) -> dict[str, Any]:
        calls["handler"] += 1
        return {"log": ["handled"]}

    def other(state: S) -> dict[str, Any]:
        calls["other"] += 1
        if calls["other"] == 1:
            raise KeyError("once")
        return {"log": ["other"]}

    app = (
        StateGraph(S)
        .add_node("fails", _boom, error_handler=handler)
        .add_node("other", other)
        .add_edge(START, "fails")
        .add_edge(START, "other")
        .compile(checkpointer=any_saver)
    )
    with pytest.raises(KeyError):
        driver.invoke(app, {"log": []}, thread)
    assert driver.invoke(app, None, thread) == {"log": ["handled", "other"]}
    assert calls == {"handler": 1, "other": 2}


def test_handler_interrupt_and_resume(driver, saver, thread) -> None:
    def handler(state: S, error: NodeError) -> dict[str, Any]:
        return {"log": [f"{interrupt(f'{error.node} failed: retry?')}"]}

    app = (
        StateGraph(S)
        .add_node("fails", _boom, error_handler=handler)
        .add_edge(START, "fails")
        .compile(checkpointer=saver)
    )
    out = driver.invoke(app, {"log": []}, thread)
    assert [i.value for i in out["__interrupt__"]] == ["fails failed: retry?"]
    assert driver.invoke(app, Command(resume="no"), thread) == {"log": ["no"]}
    assert driver.get_state(app, thread).next == ()


def test_one_default_handler_for_several_failures_of_a_step(driver, saver, thread) -> None:
    seen: list[str] = []

    def handler(state: Any, error: NodeError) -> dict[str, Any]:
        seen.append(error.node)
        return {"log": [f"handled {error.node} {state.get('n', '')}"]}

    def worker(state: dict[str, Any]) -> dict[str, Any]:
        raise ValueError(state["n"])

    def asks(state: S) -> dict[str, Any]:
        return {"log": [interrupt("go on?")]}

    app = (
        StateGraph(S)
        .set_node_defaults(error_handler=handler)
        .add_node("fails", _boom)
        .add_node("worker", worker)
        .add_node("asks", asks)
        .add_conditional_edges(START, lambda s: [Send("worker", {"n": 1}), Send("worker", {"n": 2})])
        .add_edge(START, "fails")
        .add_edge(START, "asks")
        .compile(checkpointer=saver)
    )
    driver.invoke(app, {"log": []}, thread)  # the handlers ran, then the step paused on "asks"
    out = driver.invoke(app, Command(resume="yes"), thread)
    assert sorted(out["log"]) == ["handled fails ", "handled worker 1", "handled worker 2", "yes"]
    assert sorted(seen) == ["fails", "worker", "worker"]  # not run again on resume


def test_subgraph_failure_is_handled_by_the_parent(driver, saver, thread) -> None:
    def inner(state: S) -> dict[str, Any]:
        raise ValueError("inside")

    sub = StateGraph(S).add_node("inner", inner).add_edge(START, "inner").compile()
    errors: list[NodeError] = []

    def handler(state: S, error: NodeError) -> dict[str, Any]:
        errors.append(error)
        return {"log": ["handled"]}

    app = (
        StateGraph(S)
        .add_node("sub", sub, error_handler=handler)
        .add_edge(START, "sub")
        .compile(checkpointer=saver)
    )
    assert driver.invoke(app, {"log": []}, thread) == {"log": ["handled"]}
    assert errors[0].node == "sub"
    assert isinstance(errors[0].error, ValueError)


def test_set_node_defaults() -> None:
    calls: list[str] = []

    def own(state: S, error: NodeError) -> dict[str, Any]:
        calls.append(f"own:{error.node}")
        return {"log": ["own"]}

    def default(state: S, error: NodeError) -> dict[str, Any]:
        calls.append(f"default:{error.node}")
        return {"log": ["default"]}

    attempts: list[int] = []

    def flaky(state: S) -> dict[str, Any]:
        attempts.append(1)
        if len(attempts) < 2:
            raise ValueError("once")
        return {"log": ["flaky"]}

    builder = (
        StateGraph(S)
        .set_node_defaults(
            error_handler=default,
            retry_policy=RetryPolicy(max_attempts=2, initial_interval=0.0, jitter=False, retry_on=ValueError),
        )
        .add_node("a", _boom, error_handler=own)
        .add_node("b", _boom)
        .add_node("flaky", flaky)
        .add_edge(START, "a")
        .add_edge(START, "b")
        .add_edge(START, "flaky")
    )
    app = builder.compile()
    assert sorted(app.invoke({"log": []})["log"]) == ["default", "flaky", "own"]
    assert sorted(calls) == ["default:b", "own:a"]
    assert builder.compile().invoke({"log": []}) is not None  # compiling again is fine
    assert "__default_error_handler__" in app.nodes


def test_a_failing_handler_is_not_handled_by_the_default_one() -> None:
    def broken(state: S) -> dict[str, Any]:
        raise RuntimeError("handler boom")

    app = (
        StateGraph(S)
        .set_node_defaults(error_handler=lambda s: {"log": ["default"]})
        .add_node("fails", _boom, error_handler=broken)
        .add_edge(START, "fails")
        .compile()
    )
    with pytest.raises(RuntimeError, match="handler boom"):
        app.invoke({"log": []})


def test_handler_node_names_are_taken() -> None:
    builder = StateGraph(S).add_node("__error_handler__a", lambda s: {})
    with pytest.raises(ValueError, match="__error_handler__a"):
        builder.add_node("a", _boom, error_handler=lambda s: {})
    builder = (
        StateGraph(S)
        .set_node_defaults(error_handler=lambda s: {})
        .add_node("__default_error_handler__", lambda s: {})
        .add_edge(START, "__default_error_handler__")
    )
    with pytest.raises(ValueError, match="__default_error_handler__"):
        builder.compile()


def test_handler_nodes_are_nodes_of_the_graph() -> None:
    app = (
        StateGraph(S)
        .add_node("fails", _boom, error_handler=lambda s: {})
        .add_edge(START, "fails")
        .add_edge("fails", END)
        .compile(interrupt_before=["__error_handler__fails"])
    )
    assert list(app.nodes) == ["__start__", "__error_handler__fails", "fails"]
    assert "__error_handler__fails" in app.get_graph().nodes


def test_only_handlers_get_the_node_error(driver) -> None:
    got: list[Any] = []

    def node(state: S, error: NodeError) -> dict[str, Any]:
        got.append(error)
        return {}

    def handler(state: S, *, error: NodeError | None = None) -> dict[str, Any]:  # a string here (__future__)
        got.append(error)
        return {}

    app = (
        StateGraph(S)
        .add_node("node", node)
        .add_node("fails", _boom, error_handler=handler)
        .add_edge(START, "node")
        .add_edge("node", "fails")
        .compile()
    )
    driver.invoke(app, {"log": []})
    assert got[0] is None
    assert isinstance(got[1], NodeError)
    assert got[1].node == "fails"
