"""The ``llm`` steps of tools/server_diff.py: a chat model streaming tokens, a ``ToolNode``."""

# ruff: noqa: B023  # each step's lambda is called at once by the Recorder
from __future__ import annotations

import uuid
from typing import Any

from server_diff_scenario import HI, _events, _msg, _schemas  # pyright: ignore[reportMissingImports]


def llm_steps(client: Any, rec: Any) -> None:
    """A chat model streaming tokens, and a tool call through ``ToolNode`` (the ``llm`` graph)."""
    for mode in ("messages-tuple", "messages", "updates", "values"):
        rec(
            f"llm.stream_{mode}", lambda: _events(client.runs.stream(None, "llm", input=HI, stream_mode=mode))
        )
    rec(
        "llm.tool_updates",
        lambda: _events(client.runs.stream(None, "llm", input=_msg("tool"), stream_mode="updates")),
    )
    rec(
        "llm.tool_messages_tuple",
        lambda: _events(client.runs.stream(None, "llm", input=_msg("tool"), stream_mode="messages-tuple")),
    )
    th = rec("llm.thread", lambda: client.threads.create())
    tid = th["thread_id"] if th else str(uuid.uuid4())
    rec("llm.tool_wait", lambda: client.runs.wait(tid, "llm", input=_msg("tool")))
    rec("llm.tool_state", lambda: client.threads.get_state(tid))
    rec(
        "llm.events_tokens",
        lambda: [
            e
            for e in _events(client.runs.stream(tid, "llm", input=HI, stream_mode="events"))
            if e[0] == "events" and str(e[1].get("event", "")).startswith("on_chat_model")
        ],
    )
    found = rec("llm.assistant", lambda: client.assistants.search(graph_id="llm"))
    llm_id = found[0]["assistant_id"] if found else "llm"
    rec("llm.graph", lambda: client.assistants.get_graph(llm_id))
    rec("llm.graph_xray", lambda: client.assistants.get_graph(llm_id, xray=True))
    rec("llm.schemas", lambda: _schemas(client.assistants.get_schemas(llm_id)))
    th2 = rec("llm.thread2", lambda: client.threads.create())
    tid2 = th2["thread_id"] if th2 else str(uuid.uuid4())
    rec(
        "llm.interrupt_before_tools",
        lambda: client.runs.wait(tid2, "llm", input=_msg("tool"), interrupt_before=["tools"]),
    )
    rec("llm.state_before_tools", lambda: client.threads.get_state(tid2))
    rec("llm.search_interrupted", lambda: [t["status"] for t in client.threads.search(status="interrupted")])
    rec("llm.continue", lambda: client.runs.wait(tid2, "llm", input=None))
    rec("llm.history_len", lambda: len(client.threads.get_history(tid2, limit=50)))
    rec(
        "llm.update_as_tools",
        lambda: client.threads.update_state(
            tid2,
            {"messages": [{"type": "tool", "content": "manual", "tool_call_id": "call_1"}]},
            as_node="tools",
        ),
    )
    rec("llm.state_after_update", lambda: client.threads.get_state(tid2))
    rec(
        "llm.multi_modes",
        lambda: _events(
            client.runs.stream(tid2, "llm", input=HI, stream_mode=["messages-tuple", "updates", "values"])
        ),
    )
