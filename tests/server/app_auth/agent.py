"""A graph that answers who ran it (as the server's custom auth told the run)."""

from __future__ import annotations

from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig

from plait.graph import START, StateGraph


class State(TypedDict, total=False):
    text: str
    who: dict[str, Any]


def whoami(state: State, config: RunnableConfig) -> dict[str, Any]:
    configurable = config.get("configurable", {})
    user = configurable.get("langgraph_auth_user")
    who = {
        "user_id": configurable.get("langgraph_auth_user_id"),
        "permissions": configurable.get("langgraph_auth_permissions"),
        "identity": None if user is None else user.identity,
        "item": None if user is None else user["identity"],
        "org": None if user is None else user.get("org"),
    }
    return {"who": who}


graph = StateGraph(State).add_node("whoami", whoami).add_edge(START, "whoami").compile()
