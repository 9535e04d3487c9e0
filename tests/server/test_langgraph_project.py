"""An unmodified LangGraph project (``langgraph.json``, ``from langgraph...`` imports) serves with ``plait serve``."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest
from _serve_proc import PLAIT, running
from langgraph_sdk import get_sync_client

GRAPH = """
from langchain_core.messages import AIMessage
from langgraph.graph import END, START, MessagesState, StateGraph
import langgraph


def reply(state: MessagesState) -> dict:
    return {"messages": [AIMessage(f"{langgraph.__name__} heard: {state['messages'][-1].content}")]}


graph = StateGraph(MessagesState).add_node("reply", reply).add_edge(START, "reply").add_edge("reply", END).compile()
"""


def _project(tmp: pathlib.Path) -> pathlib.Path:
    project = tmp / "project"
    project.mkdir()
    (project / "agent.py").write_text(GRAPH)
    (project / "langgraph.json").write_text(
        json.dumps({"dependencies": ["."], "graphs": {"agent": "./agent.py:graph"}})
    )
    return project


def test_a_langgraph_project_serves_as_is(tmp_path: pathlib.Path) -> None:
    project = _project(tmp_path)
    with running(str(tmp_path / "server.sqlite"), tmp_path, app=project, config="langgraph.json") as server:
        client = get_sync_client(url=server.url)
        thread = client.threads.create()
        out = client.runs.wait(
            thread["thread_id"], "agent", input={"messages": [{"role": "user", "content": "hi"}]}
        )
        assert isinstance(out, dict)
        assert out["messages"][-1]["content"] == "plait heard: hi"  # `langgraph` is plait in the server


def test_a_graph_of_the_real_langgraph_gets_one_clear_line(tmp_path: pathlib.Path) -> None:
    project = _project(tmp_path)
    # a module that builds its graph from a class named as real LangGraph's, as if langgraph had been
    # imported before plait could route it: the server says so in one line and exits
    (project / "agent.py").write_text(
        "class CompiledStateGraph:\n    pass\n\nCompiledStateGraph.__module__ = 'langgraph.graph.state'\n"
        "graph = CompiledStateGraph()\n"
    )
    proc = subprocess.run(
        [
            str(PLAIT),
            "serve",
            "--config",
            str(project / "langgraph.json"),
            "--db",
            str(tmp_path / "s.sqlite"),
        ],
        capture_output=True,
        text=True,
        cwd=project,
        check=False,
    )
    assert proc.returncode != 0
    assert (
        "graph 'agent'" in proc.stderr + proc.stdout and "PLAIT_AS_LANGGRAPH=1" in proc.stderr + proc.stdout
    )
    assert "Traceback" not in proc.stderr + proc.stdout
    assert sys.executable  # (the server ran in this interpreter's venv)


def test_load_graph_in_a_process_that_imported_the_real_langgraph(tmp_path: pathlib.Path) -> None:
    # a host process that imported the real langgraph first: plait graphs still load, a graph built on
    # the real package is refused in one line naming the fix
    if importlib.util.find_spec("langgraph") is None:
        pytest.skip("the real langgraph is not installed")
    project = _project(tmp_path)
    (project / "real.py").write_text(
        "from langgraph.graph import END, START, MessagesState, StateGraph\n"
        "graph = StateGraph(MessagesState).add_node('n', lambda s: {}).add_edge(START, 'n').compile()\n"
    )
    (project / "plain.py").write_text(
        "from plait.graph import START, MessagesState, StateGraph\n"
        "graph = StateGraph(MessagesState).add_node('n', lambda s: {}).add_edge(START, 'n').compile()\n"
    )
    code = (
        "import sys, langgraph.graph\n"  # the real package, first
        "from plait.server._config import ConfigError, GraphSpec, load_graph\n"
        "print(type(load_graph(GraphSpec('plain', './plain.py:graph'), sys.argv[1])).__module__)\n"
        "try:\n"
        "    load_graph(GraphSpec('real', './real.py:graph'), sys.argv[1])\n"
        "except ConfigError as exc:\n"
        "    print(exc)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PLAIT_AS_LANGGRAPH"}
    out = subprocess.run(
        [sys.executable, "-c", code, str(project / "langgraph.json")],
        capture_output=True,
        text=True,
        env=env,
        cwd=project,
        check=True,
    )
    lines = out.stdout.strip().splitlines()
    assert lines[0] == "plait.graph.state"
    assert (
        "graph 'real'" in lines[1]
        and "real langgraph package" in lines[1]
        and "PLAIT_AS_LANGGRAPH=1" in lines[1]
    )


AGENT = """
import itertools

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

model = GenericFakeChatModel(messages=itertools.cycle([AIMessage("hello from create_agent")]))
graph = create_agent(model, tools=[], system_prompt="be brief")
"""


def test_a_langchain_create_agent_project_serves_as_is(tmp_path: pathlib.Path) -> None:
    if importlib.util.find_spec("langchain") is None:
        pytest.skip("langchain is not installed")
    project = _project(tmp_path)
    (project / "agent.py").write_text(AGENT)  # LangChain's create_agent: it imports langgraph itself
    with running(str(tmp_path / "server.sqlite"), tmp_path, app=project, config="langgraph.json") as server:
        client = get_sync_client(url=server.url)
        thread = client.threads.create()
        out = client.runs.wait(
            thread["thread_id"], "agent", input={"messages": [{"role": "user", "content": "hi"}]}
        )
        assert isinstance(out, dict) and out["messages"][-1]["content"] == "hello from create_agent"
