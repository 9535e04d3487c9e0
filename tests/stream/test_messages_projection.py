"""run.messages: one ChatModelStream per chat-model message, fed by content-block events."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models.chat_model_stream import AsyncChatModelStream, ChatModelStream
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from plait.graph import END, START, MessagesState, StateGraph
from plait.stream import MessagesTransformer, ProtocolEvent


def _graph(model: GenericFakeChatModel) -> Any:
    def call(state: MessagesState) -> dict[str, Any]:
        return {"messages": model.invoke(state["messages"])}

    def plain(state: MessagesState) -> dict[str, Any]:
        return {
            "messages": [
                AIMessage("plain", id="p1"),
                ToolMessage("tool said", tool_call_id="c1", id="t1"),
            ]
        }

    builder = StateGraph(MessagesState)
    builder.add_node("call", call)
    builder.add_node("plain", plain)
    builder.add_edge(START, "call")
    builder.add_edge("call", "plain")
    builder.add_edge("plain", END)
    return builder.compile()


def _model() -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter([AIMessage("hello world")]))


def test_model_calls_stream_text_deltas_and_node_messages_arrive_whole() -> None:
    run = _graph(_model()).stream_events({"messages": "hi"}, version="v3")
    streams = []
    for stream in run.messages:
        assert isinstance(stream, ChatModelStream)
        streams.append((stream.node, list(stream.text), stream.output.text))
    assert streams == [("call", ["hello", " ", "world"], "hello world"), ("plain", ["plain"], "plain")]


def test_raw_message_events_follow_the_content_block_protocol() -> None:
    events = [
        e
        for e in _graph(_model()).stream_events({"messages": "hi"}, version="v3")
        if e["method"] == "messages"
    ]
    kinds = [e["params"]["data"][0]["event"] for e in events if isinstance(e["params"]["data"][0], dict)]
    assert kinds[0] == "message-start" and kinds[-1] == "message-finish"
    assert "content-block-delta" in kinds
    meta = events[0]["params"]["data"][1]
    assert meta["langgraph_node"] == "call" and meta["run_id"]
    whole = [e["params"]["data"][0] for e in events if not isinstance(e["params"]["data"][0], dict)]
    assert [m.id for m in whole] == ["p1"]  # tool messages are reported by the "tools" mode instead


def test_v1_messages_mode_is_unchanged() -> None:
    chunks = [m for m, _ in _graph(_model()).stream({"messages": "hi"}, stream_mode="messages")]
    assert any(isinstance(m, ToolMessage) for m in chunks)
    assert "".join(m.content for m in chunks[:3]) == "hello world"


def test_subgraph_messages_stay_out_of_the_root_projection() -> None:
    transformer = MessagesTransformer()
    transformer.init()
    transformer._log._bind(is_async=False)
    cursor = iter(transformer._log)
    meta = {"langgraph_node": "n", "run_id": "r1"}
    sub: ProtocolEvent = {
        "type": "event",
        "method": "messages",
        "params": {"namespace": ["child:1"], "timestamp": 0, "data": (HumanMessage("x"), meta)},
    }
    root: ProtocolEvent = {
        "type": "event",
        "method": "messages",
        "params": {
            "namespace": [],
            "timestamp": 0,
            "data": ({"event": "message-start", "message_id": "r1"}, meta),
        },
    }
    transformer.process(sub)
    transformer.process(root)
    transformer.finalize()
    transformer._log.close()
    streams = list(cursor)
    assert [s.message_id for s in streams] == ["r1"]
    assert streams[0].done  # the run ended before message-finish: the stream failed, not hung


async def test_async_run_yields_async_model_streams() -> None:
    run = await _graph(_model()).astream_events({"messages": "hi"}, version="v3")
    texts = []
    async for stream in run.messages:
        assert isinstance(stream, AsyncChatModelStream)
        texts.append((await stream.output).text)
    assert texts == ["hello world", "plain"]
