"""stream_mode="messages": tokens of chat models invoked inside nodes, and returned messages."""

from __future__ import annotations

import asyncio

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage

from plait.graph import END, START, MessagesState, StateGraph


def _graph(reply: str):
    model = GenericFakeChatModel(messages=iter([AIMessage(reply)]))

    def chat(state: MessagesState) -> dict:
        return {"messages": [model.invoke(state["messages"])]}

    return StateGraph(MessagesState).add_node("chat", chat).add_edge(START, "chat").add_edge("chat", END).compile()


def test_tokens_stream_from_a_model_invoked_inside_a_node() -> None:
    events = list(_graph("hello there friend").stream({"messages": [("user", "hi")]}, stream_mode="messages"))
    chunks = [m for m, _ in events]
    assert all(isinstance(m, AIMessageChunk) for m in chunks)
    assert "".join(str(m.content) for m in chunks) == "hello there friend"
    assert len(chunks) > 1, "streamed token by token, not as one message"
    assert {meta["langgraph_node"] for _, meta in events} == {"chat"}


def test_streamed_message_is_not_emitted_again_from_the_state_update() -> None:
    events = list(_graph("a b").stream({"messages": [("user", "hi")]}, stream_mode="messages"))
    assert not any(type(m) is AIMessage for m, _ in events)


def test_messages_a_node_returns_without_a_model_are_emitted_whole() -> None:
    graph = (StateGraph(MessagesState)
             .add_node("echo", lambda s: {"messages": [AIMessage("plain", id="p1")]})
             .add_edge(START, "echo").add_edge("echo", END).compile())
    events = list(graph.stream({"messages": [HumanMessage("hi")]}, stream_mode="messages"))
    assert [(m.content, m.id, meta["langgraph_node"]) for m, meta in events] == [("plain", "p1", "echo")]


def test_async_stream_of_messages() -> None:
    async def collect() -> list[str]:
        graph = _graph("x y")
        return [str(m.content) async for m, _ in graph.astream({"messages": [("user", "q")]},
                                                                stream_mode="messages")]

    assert "".join(asyncio.run(collect())) == "x y"


def test_user_callbacks_reach_models_inside_nodes() -> None:
    from langchain_core.callbacks import BaseCallbackHandler

    seen: list[str] = []

    class Spy(BaseCallbackHandler):
        def on_chat_model_start(self, serialized, messages, **kwargs) -> None:  # noqa: ANN001
            seen.append(kwargs.get("metadata", {}).get("langgraph_node"))

    _graph("ok").invoke({"messages": [("user", "q")]}, {"callbacks": [Spy()]})
    assert seen == ["chat"]
