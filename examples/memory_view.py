"""Filter for the model only: the model sees a window, the thread keeps everything.

Run: python examples/memory_view.py
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage

from plait.checkpoint.memory import InMemorySaver
from plait.graph import END, START, MessagesState, StateGraph
from plait.memory import view_last


class EchoModel:
    """Stands in for a chat model: says how many messages it was shown."""

    def invoke(self, messages: list[BaseMessage]) -> AIMessage:
        return AIMessage(f"saw {len(messages)}: {[m.type for m in messages]}")


model = EchoModel()


def chat(state: MessagesState) -> dict:
    window = view_last(state["messages"], 3)  # leading system prompt + newest 3
    return {"messages": [model.invoke(window)]}


builder = StateGraph(MessagesState)
builder.add_node("chat", chat)
builder.add_edge(START, "chat")
builder.add_edge("chat", END)
graph = builder.compile(checkpointer=InMemorySaver())
cfg = {"configurable": {"thread_id": "view"}}

for i in range(4):
    opening = [SystemMessage("You are terse.")] if i == 0 else []
    out = graph.invoke({"messages": [*opening, ("user", f"question {i}")]}, cfg)
    print(f"turn {i}: {out['messages'][-1].content}")
print("stored messages:", len(graph.get_state(cfg).values["messages"]))
