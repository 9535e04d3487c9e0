"""stream_mode="messages", on both drivers: tokens of chat models invoked inside nodes, and returned messages."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage

from plait.graph import END, START, MessagesState, StateGraph


def _graph(reply: str, kind: str = "def"):
    model = GenericFakeChatModel(messages=iter([AIMessage(reply)]))

    def chat(state: MessagesState) -> dict:
        return {"messages": [model.invoke(state["messages"])]}

    async def achat(state: MessagesState) -> dict:
        return {"messages": [await model.ainvoke(state["messages"])]}

    node = chat if kind == "def" else achat
    return (
        StateGraph(MessagesState)
        .add_node("chat", node)
        .add_edge(START, "chat")
        .add_edge("chat", END)
        .compile()
    )


@pytest.mark.parametrize("kind", ["def", "async_def"])
def test_tokens_stream_from_a_model_invoked_inside_a_node(driver: Any, kind: str) -> None:
    events = driver.stream(
        _graph("hello there friend", kind), {"messages": [("user", "hi")]}, stream_mode="messages"
    )
    chunks = [m for m, _ in events]
    assert all(isinstance(m, AIMessageChunk) for m in chunks)
    assert "".join(str(m.content) for m in chunks) == "hello there friend"
    assert len(chunks) > 1, "streamed token by token, not as one message"
    assert {meta["langgraph_node"] for _, meta in events} == {"chat"}


def test_streamed_message_is_not_emitted_again_from_the_state_update(driver: Any) -> None:
    events = driver.stream(_graph("a b"), {"messages": [("user", "hi")]}, stream_mode="messages")
    assert "".join(str(m.content) for m, _ in events) == "a b"
    assert not any(type(m) is AIMessage for m, _ in events)


def test_messages_a_node_returns_without_a_model_are_emitted_whole(driver: Any) -> None:
    graph = (
        StateGraph(MessagesState)
        .add_node("echo", lambda s: {"messages": [AIMessage("plain", id="p1")]})
        .add_edge(START, "echo")
        .add_edge("echo", END)
        .compile()
    )
    events = driver.stream(graph, {"messages": [HumanMessage("hi")]}, stream_mode="messages")
    assert [(m.content, m.id, meta["langgraph_node"]) for m, meta in events] == [("plain", "p1", "echo")]


def test_a_returned_message_without_an_id_streams_with_the_id_the_state_keeps() -> None:
    from plait.checkpoint.memory import InMemorySaver

    graph = (
        StateGraph(MessagesState)
        .add_node("left", lambda s: {"messages": [AIMessage("from left")]})
        .add_node("right", lambda s: {"messages": [AIMessage("from right")]})
        .add_edge(START, "left")
        .add_edge(START, "right")
        .add_edge("left", END)
        .add_edge("right", END)
        .compile(checkpointer=InMemorySaver())
    )
    config = {"configurable": {"thread_id": "ids"}}
    # the ids as each event arrives (the reducer later sets ids on the same objects in place)
    streamed = {
        m.content: m.id
        for m, _ in graph.stream({"messages": [HumanMessage("hi", id="h")]}, config, stream_mode="messages")
    }
    assert set(streamed) == {"from left", "from right"} and None not in streamed.values()
    kept = {m.content: m.id for m in graph.get_state(config).values["messages"]}
    assert all(kept[text] == mid for text, mid in streamed.items())


def test_user_callbacks_reach_models_inside_nodes(driver: Any) -> None:
    from langchain_core.callbacks import BaseCallbackHandler

    seen: list[str] = []

    class Spy(BaseCallbackHandler):
        def on_chat_model_start(self, serialized, messages, **kwargs) -> None:  # noqa: ANN001
            seen.append(kwargs.get("metadata", {}).get("langgraph_node"))

    driver.invoke(_graph("ok"), {"messages": [("user", "q")]}, {"callbacks": [Spy()]})
    assert seen == ["chat"]


def test_messages_metadata_names_the_task_namespace_and_run_ids() -> None:
    def node(state: Any) -> dict[str, Any]:
        return {"messages": HumanMessage(content="hello")}

    graph = StateGraph(MessagesState).add_node("node", node).add_edge(START, "node").compile()
    config = {"configurable": {"thread_id": "th", "run_id": "r1", "api_key": "secret", "nested": {"a": 1}}}
    ((message, meta),) = list(graph.stream({"messages": []}, config, stream_mode="messages"))
    assert message.content == "hello"
    assert meta["thread_id"] == "th" and meta["run_id"] == "r1"
    assert "api_key" not in meta and "nested" not in meta
    assert meta["langgraph_node"] == "node"
    assert meta["langgraph_path"] == ("__pregel_pull", "node")
    assert meta["langgraph_checkpoint_ns"].startswith("node:")
    assert "checkpoint_ns" not in meta  # a root run has none (LangGraph)
    config["configurable"]["checkpoint_ns"] = "ns-1"
    ((_, meta),) = list(graph.stream({"messages": []}, config, stream_mode="messages"))
    assert meta["checkpoint_ns"] == "ns-1"  # the run's own namespace, not the task's


def test_written_messages_come_before_the_step_updates() -> None:
    def tool(state: Any) -> dict[str, Any]:
        return {"messages": [ToolMessage(content="42", tool_call_id="c1")]}

    graph = StateGraph(MessagesState).add_node("tool", tool).add_edge(START, "tool").compile()
    modes = [mode for mode, _ in graph.stream({"messages": []}, stream_mode=["updates", "messages"])]
    assert modes == ["messages", "updates"]
