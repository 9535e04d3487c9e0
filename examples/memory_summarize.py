"""Summarize old messages above 100 estimated tokens, keeping the newest 4 verbatim.

Run: python examples/memory_summarize.py
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage

from plait.checkpoint.memory import InMemorySaver
from plait.graph import END, START, MessagesState, StateGraph
from plait.memory import current_summary, per_message, summarize_node


class FakeModel:
    """Stands in for a chat model; summaries count the messages they fold in."""

    def __init__(self) -> None:
        self.summaries = 0

    def invoke(self, messages: list[BaseMessage]) -> AIMessage:
        instruction = str(messages[-1].content)
        if instruction.startswith(("Create a summary", "This is summary")):
            self.summaries += 1
            return AIMessage(f"summary #{self.summaries} (+{len(messages) - 1} messages)")
        return AIMessage(f"收到：{instruction[:4]}")


model = FakeModel()
half_len = per_message(lambda m: len(str(m.content)) // 2)

builder = StateGraph(MessagesState)
builder.add_node("summarize", summarize_node(model, max_tokens=100, keep_last=4, token_counter=half_len))
builder.add_node("llm", lambda state: {"messages": [model.invoke(state["messages"])]})
builder.add_edge(START, "summarize")
builder.add_edge("summarize", "llm")
builder.add_edge("llm", END)
graph = builder.compile(checkpointer=InMemorySaver())
cfg = {"configurable": {"thread_id": "summary"}}

for i in range(10):
    graph.invoke(
        {"messages": [("user", f"第{i}轮对话，测试内容，增加文本长度，测试摘要压缩效果测试测试测试")]}, cfg
    )
    messages = graph.get_state(cfg).values["messages"]
    print(
        f"round {i}: {len(messages)} messages, ~{half_len(messages)} tokens, types={[m.type for m in messages]}"
    )

messages = graph.get_state(cfg).values["messages"]
print("final:")
for idx, m in enumerate(messages):
    print(f"  [{idx}] {m.type:6s} | {m.content}")
print("summary text:", current_summary(messages))
