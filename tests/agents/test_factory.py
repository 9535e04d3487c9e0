"""create_agent and memory_hook against a real fakellm server through ChatOpenAI."""

from __future__ import annotations

import asyncio
import importlib.util
from typing import Any

import httpx
import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessageChunk, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from plait.agents import create_agent, memory_hook
from plait.checkpoint.memory import InMemorySaver


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


RULES = [
    {
        "name": "summary",
        "when": {"messages_contain": "Create a summary"},
        "respond": {"content": "Ana likes tea."},
    },
    {
        "name": "extend",
        "when": {"messages_contain": "Extend the summary"},
        "respond": {"content": "Ana likes tea."},
    },
    {
        "name": "answer",
        "when": {"turn": 2, "tool_result_contains": "sunny in"},
        "respond": {"content": "It is sunny."},
    },
    {
        "name": "call",
        "when": {"turn": 1, "messages_contain": "weather"},
        "respond": {"tool_calls": [{"name": "weather", "arguments": {"city": "Oslo"}}]},
    },
    {"name": "any", "respond": {"content": "Fine, thanks for asking."}},
]


def _model(fakellm: Any) -> ChatOpenAI:
    client = httpx.AsyncClient()  # langchain-openai's shared async client is bound to the first event loop
    return ChatOpenAI(
        model="fake", base_url=fakellm.base_url, api_key="dummy", max_retries=0, http_async_client=client
    )


def test_agent_with_tools_and_memory(fakellm: Any, driver: Any) -> None:
    fakellm.rules(RULES)
    agent = create_agent(
        _model(fakellm), tools=[weather], system_prompt="be brief", checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "a"}}
    inputs = [{"messages": [{"role": "user", "content": text}]} for text in ("weather in Oslo?", "and you?")]
    if driver.kind == "sync":
        out, again = (agent.invoke(i, config) for i in inputs)
    else:  # one event loop for both turns (the model's async HTTP client is bound to it)

        async def both() -> list[Any]:
            return [await agent.ainvoke(i, config) for i in inputs]

        out, again = asyncio.run(both())
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai"]
    assert out["messages"][-1].content == "It is sunny."
    assert len(again["messages"]) == 6 and again["messages"][-1].content == "Fine, thanks for asking."
    assert not any(isinstance(m, SystemMessage) for m in again["messages"])


def test_replies_stream_token_by_token(fakellm: Any) -> None:
    fakellm.rules(RULES)
    agent = create_agent(_model(fakellm), checkpointer=InMemorySaver())
    chunks = [
        chunk.content
        for chunk, meta in agent.stream(
            {"messages": [("user", "hi")]}, {"configurable": {"thread_id": "s"}}, stream_mode="messages"
        )
        if isinstance(chunk, AIMessageChunk) and meta["langgraph_node"] == "model"
    ]
    assert len([c for c in chunks if c]) == 4  # "Fine," " thanks" " for" " asking."
    assert "".join(chunks) == "Fine, thanks for asking."


def test_model_string_uses_langchain_openai(fakellm: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    fakellm.rules(RULES)
    monkeypatch.setenv("OPENAI_BASE_URL", fakellm.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    out = create_agent("openai:fake").invoke({"messages": [("user", "hi")]})
    assert out["messages"][-1].content == "Fine, thanks for asking."
    if importlib.util.find_spec("langchain") is None:  # plait's own resolution names the extra
        with pytest.raises(ImportError, match="plait\\[openai\\]"):
            create_agent("someprovider:model")
    else:  # langchain's init_chat_model resolves model strings
        with pytest.raises(ValueError, match="someprovider"):
            create_agent("someprovider:model")


def test_pre_model_hook_with_an_option_of_langchains_agent_is_refused(fakellm: Any) -> None:
    # (options only LangChain's agent has make it LangChain's: tests/agents/test_langchain_on_plait.py)
    with pytest.raises(NotImplementedError, match="pre_model_hook.*middleware"):
        create_agent(_model(fakellm), middleware=[object()], pre_model_hook=lambda state: {})


class _Seen(BaseCallbackHandler):
    """Records how many messages each model call was sent."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def on_chat_model_start(self, serialized: Any, messages: list[list[Any]], **kwargs: Any) -> None:
        self.sizes.append(len(messages[0]))


def _turns(agent: Any, config: dict[str, Any], count: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i in range(count):
        out = agent.invoke({"messages": [("user", f"question {i}")]}, config)
    return out


def test_memory_hook_view_keeps_the_thread_and_bounds_the_model_input(fakellm: Any) -> None:
    fakellm.rules(RULES)
    agent = create_agent(
        _model(fakellm), checkpointer=InMemorySaver(), pre_model_hook=memory_hook(keep_last=3)
    )
    seen = _Seen()
    out = _turns(agent, {"configurable": {"thread_id": "v"}, "callbacks": [seen]}, 4)
    assert len(out["messages"]) == 8  # nothing removed from the thread
    assert seen.sizes == [1, 3, 3, 3]  # what the model was sent


def test_memory_hook_trim_and_summarize_change_the_thread(fakellm: Any) -> None:
    fakellm.rules(RULES)
    trimmed = create_agent(
        _model(fakellm),
        checkpointer=InMemorySaver(),
        pre_model_hook=memory_hook(keep_last=3, keep_history=False),
    )
    assert len(_turns(trimmed, {"configurable": {"thread_id": "t"}}, 4)["messages"]) == 4
    summarized = create_agent(
        _model(fakellm),
        checkpointer=InMemorySaver(),
        pre_model_hook=memory_hook(keep_last=6, summarize=_model(fakellm)),
    )
    out = _turns(summarized, {"configurable": {"thread_id": "s"}}, 5)
    assert out["messages"][0].type == "system" and "Ana likes tea." in out["messages"][0].content
    assert len(out["messages"]) <= 7


def test_memory_hook_needs_a_budget() -> None:
    with pytest.raises(ValueError, match="needs a budget"):
        memory_hook()
    with pytest.raises(ValueError, match="not both"):
        memory_hook(keep_last=2, max_tokens=100)
