"""LangChain's own ``create_agent`` (middleware, structured output) runs on plait, and
``plait.agents.create_agent`` becomes it when given what only LangChain's agent has.

Each program runs in a fresh interpreter: the switch routes every ``langgraph`` import of a process,
and langchain must not have imported the real langgraph first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain.agents")

RULES = [
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
    {"name": "any", "respond": {"content": "Fine."}},
]

AGENT = """
import json, sys
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
{imports}

calls = []


@before_model
def count(state, runtime):
    calls.append(len(state["messages"]))
    return None


@wrap_tool_call
def shout(request, handler):
    result = handler(request)
    result.content = result.content.upper()
    return result


@tool
def weather(city: str) -> str:
    \"\"\"The weather in a city.\"\"\"
    return f"sunny in {{city}}"


model = ChatOpenAI(model="fake", base_url=sys.argv[1], api_key="dummy", max_retries=0)
agent = create_agent(model, [weather], middleware=[count, shout], checkpointer=InMemorySaver())
config = {{"configurable": {{"thread_id": "t"}}}}
out = agent.invoke({{"messages": [("user", "weather in Oslo?")]}}, config)
real = sorted(n for n, m in sys.modules.items() if n.split(".")[0] == "langgraph" and not m.__name__.startswith("plait"))
print(json.dumps({{
    "graph": type(agent).__module__,
    "messages": [(m.type, m.content) for m in out["messages"]],
    "model_calls": calls,
    "history": len(list(agent.get_state_history(config))) > 0,
    "real_langgraph": real,
}}))
"""

SWITCH = """
from langchain.agents import create_agent
from langchain.agents.middleware import before_model, wrap_tool_call
from langgraph.checkpoint.memory import InMemorySaver
"""

PLAIT_FACTORY = """
import plait.as_langgraph  # (langchain imports langgraph: the switch goes first)
from langchain.agents.middleware import before_model, wrap_tool_call
from plait.agents import create_agent
from plait.checkpoint.memory import InMemorySaver
"""


def _run(tmp_path: Path, imports: str, fakellm: Any, env: dict[str, str]) -> dict[str, Any]:
    script = tmp_path / "agent.py"
    script.write_text(textwrap.dedent(AGENT.format(imports=imports)))
    full_env = {k: v for k, v in os.environ.items() if k != "PLAIT_AS_LANGGRAPH"} | env
    out = subprocess.run(
        [sys.executable, str(script), fakellm.base_url],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=tmp_path,
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize(
    ("imports", "env"),
    [(SWITCH, {"PLAIT_AS_LANGGRAPH": "1"}), (PLAIT_FACTORY, {})],
    ids=["PLAIT_AS_LANGGRAPH=1", "plait.agents.create_agent"],
)
def test_langchain_create_agent_with_middleware_runs_on_plait(
    tmp_path: Path, fakellm: Any, imports: str, env: dict[str, str]
) -> None:
    fakellm.rules(RULES)
    out = _run(tmp_path, imports, fakellm, env)
    assert out["graph"] == "plait.graph.state"  # LangChain built the agent with plait's StateGraph
    assert out["real_langgraph"] == []  # nothing of the real langgraph package was loaded
    assert out["messages"] == [
        ["human", "weather in Oslo?"],
        ["ai", ""],
        ["tool", "SUNNY IN OSLO"],  # wrap_tool_call changed the tool's result
        ["ai", "It is sunny."],
    ]
    assert out["model_calls"] == [1, 3]  # before_model ran before each model call
    assert out["history"]


def test_langchain_imported_on_the_real_langgraph_first_is_refused_clearly(tmp_path: Path) -> None:
    script = tmp_path / "late.py"
    script.write_text(
        "import langchain.agents\n"  # langchain (and the real langgraph) first
        "from plait.agents import create_agent\n"
        "try:\n"
        "    create_agent('openai:gpt-4o', middleware=[object()])\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PLAIT_AS_LANGGRAPH"}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, check=True)
    assert "the real langgraph was imported before the switch" in out.stdout
    assert "import plait.as_langgraph first" in out.stdout
