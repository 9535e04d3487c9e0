"""``update_state`` without ``as_node`` is made as the node that ran last, and checkpoints record
the run's config as LangGraph's savers do (config metadata, then the user's plain configurable keys)."""

from __future__ import annotations

import operator
import uuid
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.errors import InvalidUpdateError
from plait.graph import END, START, StateGraph
from plait.types import Send


class State(TypedDict):
    n: Annotated[int, operator.add]
    notes: str


@pytest.fixture
def checkpointer(any_saver: Any) -> Any:
    return any_saver


def _config(**configurable: Any) -> Any:
    return {"configurable": {"thread_id": f"t-{uuid.uuid4().hex}", **configurable}}


def _chain(checkpointer: Any, interrupt_before: list[str]) -> Any:
    """a -> b -> (c unless notes == "stop") -> END."""

    def route(state: State) -> str:
        return END if state.get("notes") == "stop" else "c"

    builder = StateGraph(State)
    builder.add_node("a", lambda _: {"n": 1})
    builder.add_node("b", lambda _: {"n": 10})
    builder.add_node("c", lambda _: {"notes": "c ran"})
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_conditional_edges("b", route, ["c", END])
    builder.add_edge("c", END)
    return builder.compile(checkpointer=checkpointer, interrupt_before=interrupt_before)


def test_an_update_is_routed_as_the_node_that_ran_last(checkpointer: Any, driver: Any) -> None:
    graph, config = _chain(checkpointer, ["c"]), _config()
    driver.invoke(graph, {"n": 0}, config)
    assert driver.get_state(graph, config).next == ("c",)
    driver.update_state(graph, config, {"notes": "stop"})  # as b: b's edge now goes to END
    state = driver.get_state(graph, config)
    assert state.next == ()
    assert state.values == {"n": 11, "notes": "stop"}


def test_updates_in_between_run_no_node(checkpointer: Any, driver: Any) -> None:
    graph, config = _chain(checkpointer, ["c"]), _config()
    driver.invoke(graph, {"n": 0}, config)
    driver.update_state(graph, config, {"notes": "x"}, as_node="a")
    assert driver.get_state(graph, config).next == ("b",)
    driver.update_state(graph, config, {"notes": "stop"})  # b ran last, not a: routed to END
    assert driver.get_state(graph, config).next == ()


def test_before_any_node_ran_an_update_is_the_start(checkpointer: Any, driver: Any) -> None:
    graph, config = _chain(checkpointer, ["a"]), _config()
    driver.invoke(graph, {"n": 0}, config)
    driver.update_state(graph, config, {"n": 5})
    state = driver.get_state(graph, config)
    assert (state.next, state.values) == (("a",), {"n": 5})


def test_two_nodes_in_the_last_step_make_the_update_ambiguous(checkpointer: Any, driver: Any) -> None:
    builder = StateGraph(State)
    builder.add_node("x", lambda _: {"n": 1})
    builder.add_node("y", lambda _: {"n": 2})
    builder.add_edge(START, "x")
    builder.add_edge(START, "y")
    graph, config = builder.compile(checkpointer=checkpointer), _config()
    driver.invoke(graph, {"n": 0}, config)
    head = driver.get_state(graph, config)
    with pytest.raises(InvalidUpdateError, match="Ambiguous update, specify as_node: several nodes"):
        driver.update_state(graph, config, {"n": 5})
    assert driver.get_state(graph, config).config == head.config  # nothing written
    driver.update_state(graph, config, {"n": 5}, as_node="x")
    assert driver.get_state(graph, config).values == {"n": 8}


def test_a_thread_run_with_exit_durability_needs_as_node(checkpointer: Any) -> None:
    graph, config = _chain(checkpointer, []), _config()
    graph.invoke({"n": 0, "notes": "stop"}, config, durability="exit")
    with pytest.raises(InvalidUpdateError, match="its last step is not stored"):
        graph.update_state(config, {"n": 1})
    graph.update_state(config, {"n": 1}, as_node="b")
    assert graph.get_state(config).values["n"] == 12


def test_checkpoints_record_the_config_as_langgraph_savers_do(checkpointer: Any, driver: Any) -> None:
    graph = _chain(checkpointer, ["c"])
    config = _config(user_id="u1", retries=3, strict=True, score=0.5, model={"not": "plain"}, __hidden="h")
    config["metadata"] = {"tag": "x", "user_id": "from metadata"}
    driver.invoke(graph, {"n": 0}, config)
    driver.update_state(graph, config, {"notes": "stop"})
    history = driver.get_state_history(graph, config)
    expected = {"tag": "x", "user_id": "from metadata", "retries": 3, "strict": True, "score": 0.5}
    assert [s.metadata["source"] for s in history] == ["update", "loop", "loop", "loop", "input"]
    for snapshot in history:
        extra = {k: v for k, v in snapshot.metadata.items() if k not in ("source", "step", "parents")}
        assert extra == expected, snapshot.metadata["source"]
    assert len(driver.get_state_history(graph, config, filter={"retries": 3})) == len(history)


def test_a_node_config_names_its_task_but_checkpoints_do_not(checkpointer: Any) -> None:
    inner = _chain(checkpointer, [])
    seen: list[dict[str, Any]] = []

    def outer_node(state: State, config: Any) -> State:
        seen.append(dict(config["metadata"]))
        inner.invoke(
            {"n": 0, "notes": "stop"},
            {**config, "configurable": {**config["configurable"], "thread_id": "inner-" + uuid.uuid4().hex}},
        )
        return {"n": 1}

    builder = StateGraph(State)
    builder.add_node("outer", outer_node)
    builder.add_edge(START, "outer")
    config = _config(user_id="u1")
    config["metadata"] = {"tag": "x"}
    builder.compile(checkpointer=checkpointer).invoke({"n": 0}, config)
    (meta,) = seen
    assert meta["tag"] == "x"
    assert (meta["langgraph_node"], meta["langgraph_step"], meta["langgraph_path"]) == (
        "outer",
        1,
        ("__pregel_pull", "outer"),
    )
    assert meta["langgraph_triggers"] == ("branch:to:outer",)
    assert meta["langgraph_checkpoint_ns"].startswith("outer:")
    (inner_thread,) = [
        t for t in checkpointer.list(None) if t.config["configurable"]["thread_id"].startswith("inner-")
    ][:1]
    recorded = inner_thread.metadata
    assert recorded["tag"] == "x" and recorded["user_id"] == "u1"
    assert not [k for k in recorded if k.startswith("langgraph_")]


def test_a_one_node_graph_updates_as_its_start_until_the_node_ran(checkpointer: Any, driver: Any) -> None:
    builder = StateGraph(State)
    builder.add_node("only", lambda _: {"n": 1})
    builder.add_edge(START, "only")
    graph, config = builder.compile(checkpointer=checkpointer, interrupt_before=["only"]), _config()
    driver.invoke(graph, {"n": 0}, config)
    driver.update_state(graph, config, {"n": 5})  # as the start: "only" is scheduled again
    assert driver.get_state(graph, config).next == ("only",)
    driver.invoke(graph, None, config)
    driver.update_state(graph, config, {"n": 5})  # as "only", whose edge ends the run
    state = driver.get_state(graph, config)
    assert (state.next, state.values["n"]) == ((), 11)


def test_a_copy_is_updated_as_the_node_that_ran_before_the_original(checkpointer: Any, driver: Any) -> None:
    graph, config = _chain(checkpointer, ["c"]), _config()
    driver.invoke(graph, {"n": 0}, config)
    driver.update_state(graph, config, {"notes": "x"}, as_node="a")  # next: b; b ran last still
    copy = driver.update_state(graph, config, None, as_node="__copy__")
    assert driver.get_state(graph, copy).metadata == {"source": "fork", "step": 4, "parents": {}}
    driver.update_state(graph, copy, {"notes": "stop"})  # as b: routed to END
    assert driver.get_state(graph, config).next == ()


def _fan_out(checkpointer: Any, pulled: bool) -> Any:
    """a -> Send("w") x2 (and, ``pulled``, its edge to x) -> z, paused before z."""
    builder = StateGraph(State)
    builder.add_node("a", lambda _: {"n": 1})
    builder.add_node("w", lambda s: {"n": s["n"]})
    builder.add_node("x", lambda _: {"n": 10})
    builder.add_node("z", lambda _: {"n": 1000})
    builder.add_edge(START, "a")
    sends = [Send("w", {"n": 1}), Send("w", {"n": 2})]
    builder.add_conditional_edges("a", lambda _: ["x", *sends] if pulled else sends)
    builder.add_edge("w", "z")
    builder.add_edge("x", "z")
    return builder.compile(checkpointer=checkpointer, interrupt_before=["z"])


def test_send_tasks_do_not_count_as_the_node_that_ran(checkpointer: Any, driver: Any) -> None:
    graph, config = _fan_out(checkpointer, pulled=False), _config()
    driver.invoke(graph, {"n": 0}, config)
    driver.update_state(graph, config, {"n": 7})  # as a (the w tasks were sent): a's sends again
    assert driver.get_state(graph, config).next == ("w", "w")
    graph, config = _fan_out(checkpointer, pulled=True), _config()
    driver.invoke(graph, {"n": 0}, config)
    driver.update_state(graph, config, {"n": 7})  # as x, the one node its edge started
    assert driver.get_state(graph, config).next == ("z",)


class _CountingSaver(InMemorySaver):
    reads = 0

    def get_tuple(self, config: Any) -> Any:
        self.reads += 1
        return super().get_tuple(config)


def test_consecutive_updates_do_not_read_back_the_whole_history() -> None:
    saver = _CountingSaver()
    graph, config = _chain(saver, ["c"]), _config()
    graph.invoke({"n": 0}, config)
    counts = []
    for i in range(30):
        before = saver.reads
        graph.update_state(config, {"notes": f"n{i}"})
        counts.append(saver.reads - before)
    assert max(counts) <= 3, counts  # the head, and at most its parent: not one read per update before it


def test_only_plain_metadata_values_are_recorded(checkpointer: Any, driver: Any) -> None:
    import threading

    graph, config = _chain(checkpointer, ["c"]), _config(session={"not": "plain"})
    config["metadata"] = {"lock": threading.Lock(), "tags": ["a"], "__private": "p", "kept": "yes"}
    driver.invoke(graph, {"n": 0}, config)  # a value that cannot be stored is not recorded, not an error
    driver.update_state(graph, config, {"notes": "x"}, as_node="b")
    for snapshot in driver.get_state_history(graph, config):
        extra = {k: v for k, v in snapshot.metadata.items() if k not in ("source", "step", "parents")}
        assert extra == {"kept": "yes"}, snapshot.metadata


def test_a_thread_seeded_by_updates_is_updated_as_its_start(checkpointer: Any, driver: Any) -> None:
    graph, config = _chain(checkpointer, ["a"]), _config()
    driver.update_state(graph, config, {"n": 1})  # a new thread: the update is its input
    driver.update_state(graph, config, {"n": 2})  # no node ran yet: the start's again
    state = driver.get_state(graph, config)
    assert (state.next, state.values) == (("a",), {"n": 3})
