"""A compiled graph as a LangChain Runnable: config, composition, callbacks, events."""

import asyncio
import operator
from typing import Annotated, Any, TypedDict
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.runnables import Runnable, RunnableLambda

from plait.constants import START
from plait.graph import StateGraph


class State(TypedDict):
    x: Annotated[list, operator.add]


def _graph(model: FakeListChatModel | None = None) -> Any:
    chat = model or FakeListChatModel(responses=["hi"])

    def ask(state: State) -> dict:
        return {"x": [chat.invoke("q").content]}

    def done(state: State, config: dict) -> dict:
        return {"x": [chat.invoke("q", config).content]}

    g = StateGraph(State).add_node("ask", ask).add_node("done", done)
    return g.add_edge(START, "ask").add_edge("ask", "done").compile()


class Recorder(BaseCallbackHandler):
    def __init__(self) -> None:
        self.names: dict[UUID, str] = {}
        self.events: list[tuple[str, ...]] = []

    def on_chain_start(
        self, serialized: Any, inputs: Any, *, run_id: UUID, parent_run_id: Any = None, **kw: Any
    ) -> None:
        self.names[run_id] = kw["name"]
        self.events.append(("start", kw["name"], self.names.get(parent_run_id, "")))

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kw: Any) -> None:
        self.events.append(("end", self.names[run_id], repr(outputs)))

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: UUID, parent_run_id: Any = None, **kw: Any
    ) -> None:
        self.events.append(("model", self.names.get(parent_run_id, "")))


EXPECTED = [
    ("start", "LangGraph", ""),
    ("start", "ask", "LangGraph"),
    ("model", "ask"),
    ("end", "ask", "{'x': ['hi']}"),
    ("start", "done", "LangGraph"),
    ("model", "done"),
    ("end", "done", "{'x': ['hi']}"),
    ("end", "LangGraph", "{'x': ['hi', 'hi']}"),
]


def test_is_a_runnable_and_composes_both_ways() -> None:
    app = _graph()
    assert isinstance(app, Runnable)
    assert (app | RunnableLambda(lambda s: len(s["x"]))).invoke({"x": ["a"]}) == 3
    assert (RunnableLambda(lambda v: {"x": v}) | app).invoke(["a"]) == {"x": ["a", "hi", "hi"]}


def test_with_config_returns_a_graph_applying_the_config() -> None:
    recorder = Recorder()
    app = _graph().with_config(callbacks=[recorder], run_name="mine")
    assert isinstance(app, type(_graph()))
    assert app.invoke({"x": []}) == {"x": ["hi", "hi"]}
    assert recorder.events[0] == ("start", "mine", "")
    assert app.copy().config == app.config


def test_callbacks_see_the_graph_its_nodes_and_the_models_inside(driver) -> None:
    recorder = Recorder()
    driver.invoke(_graph(), {"x": []}, {"callbacks": [recorder]})
    assert recorder.events == EXPECTED


def test_streaming_reports_the_run_with_its_final_state(driver) -> None:
    recorder = Recorder()
    chunks = driver.stream(_graph(), {"x": []}, {"callbacks": [recorder]}, stream_mode="updates")
    assert chunks == [{"ask": {"x": ["hi"]}}, {"done": {"x": ["hi"]}}]
    assert recorder.events == EXPECTED


def test_without_callbacks_nothing_is_reported() -> None:
    recorder = Recorder()
    _graph().invoke({"x": []})
    assert recorder.events == []


def test_astream_events_v2_nests_node_and_model_events() -> None:
    async def collect() -> list[dict]:
        return [e async for e in _graph().astream_events({"x": []}, version="v2")]

    events = asyncio.run(collect())
    kinds = [(e["event"], e["name"]) for e in events if e["event"].startswith("on_chain")]
    assert kinds == [
        ("on_chain_start", "LangGraph"),
        ("on_chain_start", "ask"),
        ("on_chain_stream", "ask"),
        ("on_chain_end", "ask"),
        ("on_chain_stream", "LangGraph"),
        ("on_chain_start", "done"),
        ("on_chain_stream", "done"),
        ("on_chain_end", "done"),
        ("on_chain_stream", "LangGraph"),
        ("on_chain_end", "LangGraph"),
    ]
    model = next(e for e in events if e["event"] == "on_chat_model_start")
    assert model["metadata"]["langgraph_node"] == "ask"
    assert len(model["parent_ids"]) == 2  # the graph, then the node
    node = next(e for e in events if e["event"] == "on_chain_start" and e["name"] == "ask")
    assert node["tags"] == ["graph:step:1"]
    assert events[-1]["data"]["output"] == {"x": ["hi", "hi"]}


def _with_subgraph(name: str | None) -> Any:
    inner = StateGraph(State).add_node("step", lambda s: {"x": ["in"]}).add_edge(START, "step")
    sub = inner.compile(name=name) if name else inner.compile()
    outer = StateGraph(State).add_node("a", lambda s: {"x": ["a"]}).add_node("sub", sub)
    return outer.add_edge(START, "a").add_edge("a", "sub").compile()


def test_a_subgraph_node_reports_its_graph_run_inside_the_nodes(driver) -> None:
    recorder = Recorder()
    driver.invoke(_with_subgraph("inner"), {"x": []}, {"callbacks": [recorder]})
    starts = [e for e in recorder.events if e[0] == "start"]
    assert starts == [
        ("start", "LangGraph", ""),
        ("start", "a", "LangGraph"),
        ("start", "sub", "LangGraph"),
        ("start", "inner", "sub"),  # the compiled subgraph, under its node, as LangGraph reports it
        ("start", "step", "inner"),
    ]


def test_astream_events_v2_shows_a_subgraph_nodes_graph_run() -> None:
    async def collect() -> list[dict]:
        return [e async for e in _with_subgraph(None).astream_events({"x": []}, version="v2")]

    events = asyncio.run(collect())
    chain = [
        (e["event"], e["name"], len(e["parent_ids"])) for e in events if e["event"].startswith("on_chain")
    ]
    at = chain.index(("on_chain_start", "sub", 1))
    assert chain[at : at + 7] == [
        ("on_chain_start", "sub", 1),
        ("on_chain_start", "LangGraph", 2),
        ("on_chain_start", "step", 3),
        ("on_chain_stream", "step", 3),
        ("on_chain_end", "step", 3),
        ("on_chain_end", "LangGraph", 2),
        ("on_chain_stream", "sub", 1),
    ]
    graph_run = next(e for e in events if e["name"] == "LangGraph" and len(e["parent_ids"]) == 2)
    assert graph_run["tags"] == ["seq:step:1"]
