"""create_react_agent against a real OpenAI-compatible server (fakellm) through ChatOpenAI."""

from __future__ import annotations

import enum
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import httpx
import pytest
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from plait.checkpoint.memory import InMemorySaver
from plait.checkpoint.sqlite import SqliteSaver
from plait.prebuilt import ToolNode, create_react_agent
from plait.prebuilt.chat_agent_executor import AgentState

ADD_RULES = [
    {"name": "answer", "when": {"tool_result_contains": "5"}, "respond": {"content": "The sum is 5."}},
    {
        "name": "call",
        "when": {"tools_include": "add"},
        "respond": {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]},
    },
    {"name": "plain", "respond": {"content": "no tools here"}},
]


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _model(fakellm: Any) -> ChatOpenAI:
    # a fresh async HTTP client: langchain-openai's shared one is bound to the first event loop
    client = httpx.AsyncClient()
    return ChatOpenAI(
        model="fake", base_url=fakellm.base_url, api_key="dummy", max_retries=0, http_async_client=client
    )


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_agent_calls_a_tool_and_answers(fakellm: Any, driver: Any, version: str) -> None:
    fakellm.rules(ADD_RULES)
    agent = create_react_agent(_model(fakellm), [add], checkpointer=InMemorySaver(), version=version)
    config = {"configurable": {"thread_id": "t"}}
    out = driver.invoke(agent, {"messages": [("user", "what is 2+3?")]}, config)
    kinds = [type(m).__name__ for m in out["messages"]]
    assert kinds == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    assert out["messages"][2].content == "5"
    assert out["messages"][-1].content == "The sum is 5."
    assert fakellm.stats()["recent"][0]["matched_rule"] == "answer"


def test_prompt_is_sent_first_and_name_is_set(fakellm: Any) -> None:
    fakellm.rules([{"name": "sys", "when": {"messages_contain": "be brief"}, "respond": {"content": "ok"}}])
    agent = create_react_agent(_model(fakellm), [], prompt="be brief", name="helper")
    out = agent.invoke({"messages": [("user", "hi")]})
    assert out["messages"][-1].content == "ok" and out["messages"][-1].name == "helper"
    assert not any(isinstance(m, SystemMessage) for m in out["messages"])  # the prompt is not stored


def test_return_direct_ends_after_the_tool(fakellm: Any) -> None:
    @tool(return_direct=True)
    def add(a: int, b: int) -> int:  # noqa: F811 - the same name, returned directly
        """Add two numbers."""
        return a + b

    fakellm.rules(ADD_RULES)
    out = create_react_agent(_model(fakellm), [add]).invoke({"messages": [("user", "2+3")]})
    assert isinstance(out["messages"][-1], ToolMessage)


def test_tool_node_and_pre_model_hook(fakellm: Any) -> None:
    fakellm.rules(ADD_RULES)

    def hook(state: dict[str, Any]) -> dict[str, Any]:
        return {"llm_input_messages": state["messages"][-3:]}

    agent = create_react_agent(_model(fakellm), ToolNode([add]), pre_model_hook=hook)
    out = agent.invoke({"messages": [("user", "2+3")]})
    assert out["messages"][-1].content == "The sum is 5."


def test_bad_options_fail_clearly(fakellm: Any) -> None:
    model = _model(fakellm)
    with pytest.raises(ValueError, match="Invalid version"):
        create_react_agent(model, [], version="v3")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        create_react_agent(model, [], colour="red")
    with pytest.raises(ValueError, match="must match"):
        create_react_agent(model.bind_tools([add]), [add, tool(lambda x: x, description="id")])  # type: ignore[call-overload]


def test_state_schema_needs_messages(fakellm: Any) -> None:
    class State(AgentState):
        user: str

    create_react_agent(_model(fakellm), [], state_schema=State)
    with pytest.raises(ValueError, match="structured_response"):
        create_react_agent(_model(fakellm), [], state_schema=State, response_format={"type": "object"})


def test_unanswered_tool_call_in_history_is_refused(fakellm: Any) -> None:
    fakellm.rules(ADD_RULES)
    broken = AIMessage("", tool_calls=[{"name": "add", "args": {}, "id": "x", "type": "tool_call"}])
    with pytest.raises(ValueError, match="do not have a corresponding ToolMessage"):
        create_react_agent(_model(fakellm), [add]).invoke({"messages": [("user", "hi"), broken]})


class Sky(enum.Enum):
    SUN = "sun"
    RAIN = "rain"


class Day(BaseModel):
    name: str
    sky: Sky


class Forecast(BaseModel):
    temp: int
    days: list[Day]
    best: Optional[Day] = None  # noqa: UP045 - the Optional form must be walked too


FORECAST = {"temp": 3, "days": [{"name": "mon", "sky": "sun"}], "best": {"name": "tue", "sky": "rain"}}

READ_BACK = """
import sys
from plait.checkpoint.sqlite import SqliteSaver
with SqliteSaver.from_conn_string(sys.argv[1]) as saver:
    print(saver.get_tuple({"configurable": {"thread_id": "t"}}).checkpoint["channel_values"]["structured_response"])
"""


@pytest.mark.parametrize("wrapped", [False, True], ids=["schema", "(prompt, schema)"])
def test_a_structured_answer_is_stored_with_a_checkpointer(
    fakellm: Any, tmp_path: Path, wrapped: bool
) -> None:
    # the answer's classes (the model, the models and enums of its fields) are allowed when the agent is built
    fakellm.rules(
        [
            {"name": "json", "when": {"turn": 2}, "respond": {"content": json.dumps(FORECAST)}},
            {"name": "plain", "respond": {"content": "It is 3 degrees"}},
        ]
    )
    db, config = str(tmp_path / "agent.db"), {"configurable": {"thread_id": "t"}}
    response_format = ("be brief", Forecast) if wrapped else Forecast
    with SqliteSaver.from_conn_string(db) as saver:
        agent = create_react_agent(_model(fakellm), [], response_format=response_format, checkpointer=saver)
        out = agent.invoke({"messages": [("user", "weather?")]}, config)
    expected = Forecast.model_validate(FORECAST)
    assert out["structured_response"] == expected
    with SqliteSaver.from_conn_string(db) as saver:  # a new saver on the file reads it back
        agent = create_react_agent(_model(fakellm), [], response_format=response_format, checkpointer=saver)
        assert agent.get_state(config).values["structured_response"] == expected
    # a process that did not build the agent has not allowed the classes: it refuses to rebuild them
    done = subprocess.run([sys.executable, "-c", READ_BACK, db], capture_output=True, text=True, check=False)
    assert done.returncode != 0 and "not allowed to be rebuilt" in done.stderr
