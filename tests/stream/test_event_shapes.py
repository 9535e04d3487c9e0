"""``tasks`` and ``debug`` stream events as LangGraph's: a finished task's result is a dict of what it
wrote, and a task's triggers are named as LangGraph's channels (``branch:to:<node>``, join barriers,
``__pregel_push`` for a ``Send``), in the events and in the metadata of what runs inside the task."""

from __future__ import annotations

import operator
from typing import Annotated, Any

from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.config import get_config
from plait.graph import START, StateGraph
from plait.types import Command, Send


class State(TypedDict):
    n: Annotated[int, operator.add]
    notes: str


def _graph() -> Any:
    builder = StateGraph(State)
    builder.add_node("write", lambda _: {"n": 1, "notes": "x"})
    builder.add_node("twice", lambda _: Command(update=[("n", 1), ("n", 2), ("notes", "y")]))
    builder.add_node("nothing", lambda _: None)
    builder.add_edge(START, "write")
    builder.add_edge("write", "twice")
    builder.add_edge("twice", "nothing")
    return builder.compile()


def test_tasks_mode_results_are_dicts(driver: Any) -> None:
    results = {
        c["name"]: c["result"]
        for c in driver.stream(_graph(), {"n": 0}, stream_mode="tasks")
        if "result" in c
    }
    assert results == {
        "write": {"n": 1, "notes": "x"},
        "twice": {"n": {"$writes": [1, 2]}, "notes": "y"},  # a key written twice keeps each write
        "nothing": {},
    }


def test_debug_task_results_match_tasks_mode(driver: Any) -> None:
    chunks = driver.stream(_graph(), {"n": 0}, stream_mode="debug")
    results = [c["payload"]["result"] for c in chunks if c["type"] == "task_result"]
    assert results == [{"n": 1, "notes": "x"}, {"n": {"$writes": [1, 2]}, "notes": "y"}, {}]


def test_triggers_are_named_as_langgraph_channels(driver: Any) -> None:
    seen: dict[str, Any] = {}

    def remember(name: str) -> Any:
        def node(_: State) -> State:
            seen[name] = get_config()["metadata"]["langgraph_triggers"]
            return {"n": 1}

        return node

    builder = StateGraph(State)
    for name in "abcde":
        builder.add_node(name, remember(name))
    builder.add_edge(START, "a")
    builder.add_conditional_edges("a", lambda _: ["b", "c"])
    builder.add_edge(["b", "c"], "d")
    builder.add_conditional_edges("d", lambda _: [Send("e", {"n": 5})])
    chunks = driver.stream(builder.compile(), {"n": 0}, stream_mode="tasks")
    started = {c["name"]: c["triggers"] for c in chunks if "triggers" in c}
    assert started == {
        "a": ("branch:to:a",),
        "b": ("branch:to:b",),
        "c": ("branch:to:c",),
        "d": ("branch:to:d", "join:b+c:d"),
        "e": ("__pregel_push",),
    }
    assert seen == started


def test_checkpoint_events_show_the_run_config_and_the_loop_metadata(driver: Any) -> None:
    builder = StateGraph(State)
    builder.add_node("write", lambda _: {"n": 1})
    builder.add_edge(START, "write")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t", "user_id": "u1"}, "metadata": {"tag": "x"}}
    first, second, _ = driver.stream(graph, {"n": 0}, config, stream_mode="checkpoints")
    # the loop's own metadata (the saver records the config's beside it), the run's configurable
    assert first["metadata"] == {"source": "input", "step": -1, "parents": {}}
    assert first["config"]["configurable"]["user_id"] == "u1"
    assert first["parent_config"] is None
    assert second["parent_config"] == first["config"]
    (*_, oldest) = graph.get_state_history(config)
    assert oldest.metadata == {"source": "input", "step": -1, "parents": {}, "tag": "x", "user_id": "u1"}


def test_functional_tasks_and_entrypoints_are_named_as_langgraph_names_them() -> None:
    from plait.func import entrypoint, task

    seen: dict[str, Any] = {}

    @task
    def double(x: int) -> int:
        meta = get_config()["metadata"]
        seen["task"] = (meta["langgraph_node"], meta["langgraph_triggers"], meta["langgraph_path"][0])
        return 2 * x

    @entrypoint()
    def main(x: int) -> int:
        meta = get_config()["metadata"]
        seen["entrypoint"] = (meta["langgraph_node"], meta["langgraph_triggers"], meta["langgraph_path"][0])
        return double(x).result()

    assert main.invoke(2) == 4
    assert seen == {
        "entrypoint": ("main", ("__start__",), "__pregel_pull"),
        "task": ("double", ("__pregel_push",), "__pregel_push"),
    }


def test_a_node_config_carries_its_node_metadata(driver: Any) -> None:
    seen: list[dict[str, Any]] = []
    builder = StateGraph(State)
    builder.add_node(
        "tagged", lambda _: seen.append(dict(get_config()["metadata"])) or {"n": 1}, metadata={"team": "x"}
    )
    builder.add_edge(START, "tagged")
    driver.invoke(builder.compile(), {"n": 0})
    assert seen[0]["team"] == "x" and seen[0]["langgraph_node"] == "tagged"


def test_task_start_events_show_the_run_and_node_metadata(driver: Any) -> None:
    builder = StateGraph(State)
    builder.add_node("tagged", lambda _: {"n": 1}, metadata={"team": "x"})
    builder.add_node("plain", lambda _: {"n": 1})
    builder.add_edge(START, "tagged")
    builder.add_edge("tagged", "plain")
    graph = builder.compile()
    config = {
        "configurable": {"thread_id": "t", "user": "u"},
        "metadata": {"run": "r", "thread_id": "t"},
        "tags": ["k"],
    }
    starts = [c for c in driver.stream(graph, {"n": 0}, config, stream_mode="tasks") if "input" in c]
    assert [c.get("metadata") for c in starts] == [
        {"run": "r", "team": "x", "tags": ["k"]},
        {"run": "r", "tags": ["k"]},
    ]
    plain = [c for c in driver.stream(graph, {"n": 0}, stream_mode="tasks") if "input" in c]
    assert [c.get("metadata") for c in plain] == [{"team": "x"}, None]  # none shown when there is none


def test_an_interrupted_task_reports_its_questions(driver: Any) -> None:
    from plait.types import interrupt

    builder = StateGraph(State)
    builder.add_node("ask", lambda _: {"notes": interrupt("ok?")})
    builder.add_edge(START, "ask")
    graph = builder.compile(checkpointer=InMemorySaver())
    chunks = driver.stream(graph, {"n": 0}, {"configurable": {"thread_id": "t"}}, stream_mode="tasks")
    result = [c for c in chunks if "result" in c]
    assert len(result) == 1
    (asked,) = result[0]["interrupts"]
    assert (result[0]["name"], result[0]["result"], result[0]["error"]) == ("ask", {}, None)
    assert asked["value"] == "ok?" and asked["id"] and asked["response_schema"] is None


def test_a_graph_invoked_in_a_node_streams_into_a_run_streaming_subgraphs(driver: Any) -> None:
    inner_builder = StateGraph(State)
    inner_builder.add_node("inner", lambda _: {"n": 1})
    inner_builder.add_edge(START, "inner")
    inner = inner_builder.compile().with_config({"metadata": {"lc_agent_name": "helper"}})
    builder = StateGraph(State)
    builder.add_node("outer", lambda s: {"n": inner.invoke({"n": s["n"]})["n"]})
    builder.add_edge(START, "outer")
    graph = builder.compile().with_config({"metadata": {"lc_agent_name": "boss"}})
    parts = driver.stream(graph, {"n": 1}, stream_mode="tasks", subgraphs=True)
    starts = [(ns[0].split(":")[0] if ns else "", c["metadata"]) for ns, c in parts if "input" in c]
    assert starts == [("", {"lc_agent_name": "boss"}), ("outer", {"lc_agent_name": "helper"})]
