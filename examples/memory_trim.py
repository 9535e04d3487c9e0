"""Trim a thread for good: by message count (keeping the first message) and by tokens.

Run: python examples/memory_trim.py
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage

from plait.checkpoint.memory import InMemorySaver
from plait.graph import END, START, MessagesState, StateGraph
from plait.memory import per_message, trim_node


class ReplyModel:
    """Stands in for a chat model."""

    def invoke(self, messages: list[BaseMessage]) -> AIMessage:
        return AIMessage(f"好的，我们聊聊第{len(messages)}件事。")


def build(trim) -> object:
    model = ReplyModel()
    builder = StateGraph(MessagesState)
    builder.add_node("trim", trim)
    builder.add_node("llm", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_edge(START, "trim")
    builder.add_edge("trim", "llm")
    builder.add_edge("llm", END)
    return builder.compile(checkpointer=InMemorySaver())


def show(graph, cfg, title: str, count=None) -> None:
    messages = graph.get_state(cfg).values["messages"]
    extra = f", ~{count(messages)} tokens" if count else ""
    print(f"{title}: {len(messages)} messages{extra}")
    for idx, m in enumerate(messages):
        print(f"  [{idx}] {m.type:5s} | {m.content}")


# 1. by count: always keep the first message, plus the newest 4
graph = build(trim_node(4, keep_first=True))
cfg = {"configurable": {"thread_id": "count"}}
for i in range(6):
    graph.invoke({"messages": [("user", f"第{i}轮对话随便聊")]}, cfg)
show(graph, cfg, "by count")

# 2. by tokens: len(content) // 2 per message, at most 100 before each model call
half_len = per_message(lambda m: len(str(m.content)) // 2)
graph = build(trim_node(max_tokens=100, keep_first=True, token_counter=half_len))
cfg = {"configurable": {"thread_id": "tokens"}}
for i in range(8):
    graph.invoke({"messages": [("user", f"第{i}轮对话随便聊，多一点内容增加token占用测试测试测试")]}, cfg)
show(graph, cfg, "by tokens", half_len)
