# Seed 004 (agent_trim_count), ported to plait: only the imports changed (langgraph -> plait, langchain.agents -> plait.agents).
# Needs an OpenAI-compatible server on http://127.0.0.1:11433/v1 (llama.cpp in the seed); the tests run it against fakellm.
from typing import Annotated

from langchain_core.messages import AnyMessage, RemoveMessage
from langchain_openai import ChatOpenAI
from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.graph import StateGraph, add_messages

basic_model = ChatOpenAI(
    model="qwen2.5-1.5b-instruct-q4_k_m.gguf",
    base_url="http://127.0.0.1:11433/v1",
    api_key="dummy",
    temperature=0.1,
    max_tokens=512,
)


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def dump_msg(graph, config) -> list[dict]:
    snap = graph.get_state(config)
    msgs = snap.values.get("messages", [])
    return [{"type": m.type, "content": m.content, "id": m.id[:10]} for m in msgs]


def trim_node(state: State):
    """按消息条数物理修剪，保留第一条 + 最近4条消息"""
    messages = state["messages"]
    keep_recent = 4
    if len(messages) <= keep_recent:
        return {}

    first = messages[0]
    recent = messages[-keep_recent:]
    keep_ids = {m.id for m in [first, *recent]}

    remove_list = [RemoveMessage(id=m.id) for m in messages if m.id not in keep_ids]
    return {"messages": remove_list}


def llm_node(state: State):
    resp = basic_model.invoke(state["messages"])
    return {"messages": [resp]}


if __name__ == "__main__":
    builder = StateGraph(State)
    builder.add_node("trim", trim_node)
    builder.add_node("llm", llm_node)

    builder.add_edge("trim", "llm")
    builder.set_entry_point("trim")

    checkpointer = InMemorySaver()
    graph = builder.compile(checkpointer=checkpointer)

    cfg = {"configurable": {"thread_id": "session_001"}}

    for i in range(6):
        out = graph.invoke({"messages": [("user", f"第{i}轮对话随便聊")]}, cfg)
        print(f"\n===== 轮{i} =====")
        print(f"reply: {out['messages'][-1].content[:60]}")
        msg_list = dump_msg(graph, cfg)
        print(f"当前消息总条数：{len(msg_list)}")
        for idx, item in enumerate(msg_list):
            print(f"  [{idx}] {item['type']:6s} | {item['content']} | id={item['id']}")

    snap = graph.get_state(cfg)
    print("\n===== 最终 =====")
    print("最终消息条数：", len(snap.values["messages"]))
