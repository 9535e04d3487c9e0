"""``stream_mode="messages"`` and graphs run inside a node: their model calls stay theirs unless ``subgraphs``."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig

from plait.graph import START, MessagesState, StateGraph


def _model() -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter([AIMessage("hello there", id="m1")]))


def _inner(model: GenericFakeChatModel) -> Any:
    def ask(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    return StateGraph(MessagesState).add_node("ask", ask).add_edge(START, "ask").compile()


def _events(graph: Any, subgraphs: bool) -> list[Any]:
    async def run() -> list[Any]:
        out = []
        async for item in graph.astream(
            {"messages": [("user", "hi")]}, stream_mode="messages", subgraphs=subgraphs
        ):
            ns, (msg, meta) = item if subgraphs else ((), item)
            out.append((ns, type(msg).__name__, msg.content, meta["langgraph_node"]))
        return out

    return asyncio.run(run())


def test_a_graph_invoked_in_a_node_streams_only_the_nodes_output() -> None:
    inner = _inner(_model())

    def outer(state: MessagesState) -> Any:
        return inner.invoke({"messages": state["messages"]})

    graph = StateGraph(MessagesState).add_node("outer", outer).add_edge(START, "outer").compile()
    assert _events(graph, False) == [((), "AIMessage", "hello there", "outer")]


def test_a_subgraph_node_streams_its_tokens_only_with_subgraphs() -> None:
    graph = StateGraph(MessagesState).add_node("outer", _inner(_model())).add_edge(START, "outer").compile()
    assert _events(graph, False) == [((), "AIMessage", "hello there", "outer")]
    graph = StateGraph(MessagesState).add_node("outer", _inner(_model())).add_edge(START, "outer").compile()
    tokens = _events(graph, True)
    assert "".join(t[2] for t in tokens) == "hello there"
    assert {t[3] for t in tokens} == {"ask"} and all(t[0] and t[0][0].startswith("outer:") for t in tokens)


def test_a_graph_streamed_in_a_node_reaches_the_parent_only_with_subgraphs() -> None:
    for subgraphs in (False, True):
        inner = _inner(_model())
        seen: list[str] = []

        async def outer(
            state: MessagesState, config: RunnableConfig, inner: Any = inner, seen: list[str] = seen
        ) -> dict[str, Any]:
            text = ""
            async for chunk, _ in inner.astream(
                {"messages": state["messages"]}, config, stream_mode="messages"
            ):
                text += chunk.content
            seen.append(text)
            return {"messages": [("ai", text)]}  # a tuple: not a message object to stream

        graph = StateGraph(MessagesState).add_node("outer", outer).add_edge(START, "outer").compile()
        events = _events(graph, subgraphs)
        assert seen == ["hello there"]  # the node itself always gets the inner stream
        if not subgraphs:
            assert events == []
        else:
            assert "".join(e[2] for e in events) == "hello there"
            assert all(e[0] and e[0][0].startswith("outer:") and e[3] == "ask" for e in events)
