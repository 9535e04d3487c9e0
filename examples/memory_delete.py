"""Delete messages on a thread from outside the graph with update_state.

Run: python examples/memory_delete.py
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage, ToolMessage

from plait.checkpoint.memory import InMemorySaver
from plait.graph import END, START, MessagesState, StateGraph
from plait.memory import check_tool_groups, keep_last

builder = StateGraph(MessagesState)
builder.add_node("noop", lambda state: {})
builder.add_edge(START, "noop")
builder.add_edge("noop", END)
graph = builder.compile(checkpointer=InMemorySaver())
cfg = {"configurable": {"thread_id": "agent"}}

call = {"name": "weather", "args": {"city": "Paris"}, "id": "call-1"}
history: list[BaseMessage] = [
    HumanMessage("hi", id="h1"),
    AIMessage("hello!", id="a1"),
    HumanMessage("weather in Paris?", id="h2"),
    AIMessage("", tool_calls=[call], id="a2"),
    ToolMessage("sunny", tool_call_id="call-1", id="t1"),
    AIMessage("It is sunny.", id="a3"),
]
graph.invoke({"messages": history}, cfg)


def messages() -> list[BaseMessage]:
    return graph.get_state(cfg).values["messages"]


# delete one message by id
graph.update_state(cfg, {"messages": [RemoveMessage(id="a1")]})
print("after deleting a1:", [m.id for m in messages()])

# keep the last 2: a naive messages[-2:] would keep the ToolMessage without its call
naive = messages()[-2:]
print("naive slice problems:", check_tool_groups(naive))
graph.update_state(cfg, {"messages": keep_last(messages(), 2)})
print("keep_last(2) kept:", [m.id for m in messages()], "problems:", check_tool_groups(messages()))

# clear the thread
graph.update_state(cfg, {"messages": keep_last(messages(), 0)})
print("after clearing:", messages())
