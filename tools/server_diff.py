#!/usr/bin/env python
"""What an SDK client sees differently between ``plait serve`` and ``langgraph dev``.

Starts both servers as real processes on free ports with the same small graph project (a chat
node that writes custom stream events and store items, an ``interrupt()`` review node, and a
subgraph), runs one scripted scenario with ``langgraph_sdk.get_sync_client`` against each, and
prints a diff of the normalized results: UUIDs and timestamps become placeholders (in keys
too), floats become ``<float>``, keys only the hosted platform sets (``langgraph_api_url`` …)
are dropped; key sets, values, status codes, error bodies' shapes, stream event names and
payloads are kept.

    .venv/bin/python tools/server_diff.py --langgraph /tmp/lgref/bin/langgraph
    .venv/bin/python tools/server_diff.py --only runs --full     # one group, whole values

Exit status 1 when a step differs.  ``--json DIR`` writes both normalized transcripts.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from serve import _port, _project, _start, _stop  # noqa: E402  # pyright: ignore[reportMissingImports]
from server_diff_scenario import scenario  # noqa: E402  # pyright: ignore[reportMissingImports]

GRAPH = """
import time
from typing import Annotated, Any
import operator
from dataclasses import dataclass

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from {pkg}.prebuilt import ToolNode, tools_condition
from {pkg}.config import get_store, get_stream_writer
from {pkg}.graph import END, START, MessagesState, StateGraph
from {pkg}.types import interrupt


@dataclass
class Ctx:
    model: str = "echo"


class State(MessagesState):
    turns: Annotated[int, operator.add]
    notes: str


def chat(state: State) -> dict[str, Any]:
    text = str(state["messages"][-1].content)
    get_stream_writer()({{"progress": text}})
    if text.startswith("sleep:"):
        time.sleep(float(text.split(":")[1]))
    if text == "fail":
        raise RuntimeError("the node failed on purpose")
    if text.startswith("remember:"):
        get_store().put(("memories",), "last", {{"text": text.split(":", 1)[1]}})
    return {{"messages": [AIMessage(f"you said: {{text}}")], "turns": 1}}


def review(state: State) -> dict[str, Any]:
    text = str(state["messages"][-2].content) if len(state["messages"]) > 1 else ""
    if text == "ask":
        answer = interrupt({{"question": "sure?"}})
        return {{"notes": f"answer: {{answer}}"}}
    return {{"notes": "reviewed"}}


def inner_step(state: State) -> dict[str, Any]:
    return {{"turns": 1}}


inner = StateGraph(State).add_node("inner_step", inner_step).add_edge(START, "inner_step").compile()

graph = (
    StateGraph(State, context_schema=Ctx)
    .add_node("chat", chat)
    .add_node("review", review)
    .add_node("inner", inner)
    .add_edge(START, "chat")
    .add_edge("chat", "review")
    .add_edge("review", "inner")
    .add_edge("inner", END)
    .compile()
)


@tool
def lookup(q: str) -> str:
    '''Look something up.'''
    return f"found {{q}}"


def talk(state: MessagesState) -> dict[str, Any]:
    last = state["messages"][-1]
    if isinstance(last, ToolMessage):
        reply = AIMessage(f"the tool said {{last.content}}")
    elif last.content == "tool":
        reply = AIMessage("", tool_calls=[{{"name": "lookup", "args": {{"q": "x"}}, "id": "call_1"}}])
    else:
        reply = AIMessage("hello there my friend")
    model = GenericFakeChatModel(messages=iter([reply]))
    return {{"messages": [model.invoke(state["messages"])]}}


def inner_ask(state: State) -> dict[str, Any]:
    return {{"messages": [AIMessage(f"inner got: {{interrupt('inner question')}}")], "turns": 1}}


asks_inside = (
    StateGraph(State)
    .add_node("inner", StateGraph(State).add_node("ask", inner_ask).add_edge(START, "ask").compile())
    .add_edge(START, "inner")
    .add_edge("inner", END)
    .compile()
)


def embed(texts: list[str]) -> list[list[float]]:
    return [[t.count("cat") + 0.1, t.count("dog") + 0.1, t.count("fish") + 0.1, len(t) / 100] for t in texts]


llm = (
    StateGraph(MessagesState)
    .add_node("talk", talk)
    .add_node("tools", ToolNode([lookup]))
    .add_edge(START, "talk")
    .add_conditional_edges("talk", tools_condition)
    .add_edge("tools", "talk")
    .compile()
)
"""

GRAPHS = {"agent": "./agent.py:graph", "llm": "./agent.py:llm", "asks_inside": "./agent.py:asks_inside"}
CONFIG = {"store": {"index": {"embed": "./agent.py:embed", "dims": 4, "fields": ["text"]}}}
"""Beside the graphs in both servers' configs: the store's semantic index."""

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
_HEX_ID = re.compile(r"\b(lc_)?run-{1,2}<uuid>(-\d+)?")
_TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:\d\d|Z)?$")


PLATFORM_KEYS = frozenset(
    {
        "langgraph_api_url",
        "langgraph_api_version",
        "langgraph_auth_user_id",
        "langgraph_host",
        "langgraph_plan",
        "langgraph_request_id",
        "langgraph_version",
        "run_attempt",
        "user_id",
        "ls_integration",
        "langsmith_session_name",
        "__after_seconds__",
        "__request_start_time_ms__",
        "__pregel_node_finished",
        "langgraph_auth_permissions",
        "langgraph_auth_user",
    }
)
"""Keys only LangGraph's hosted platform sets (metadata, run config): left out unless ``--platform``."""

_DROP: frozenset[str] = PLATFORM_KEYS


def normalize(value: Any, full: bool) -> Any:
    """Placeholders for ids and timestamps (in keys too); ``full``: floats compared as values."""
    if isinstance(value, dict):
        return {
            normalize(str(k), full): normalize(v, full)
            for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))
            if k not in _DROP
        }
    if isinstance(value, (list, tuple)):
        return [normalize(v, full) for v in value]
    if isinstance(value, str):
        if _TS.match(value):
            return "<ts>"
        text = _HEX_ID.sub("<msgid>", _UUID.sub("<uuid>", value))
        return text
    if isinstance(value, float) and not full:
        return "<float>"
    return value


def _run_against(url: str, only: str | None) -> dict[str, Any]:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=url)
    return scenario(client, only)


def _render(value: Any) -> list[str]:
    return json.dumps(value, indent=1, sort_keys=True, default=repr).splitlines()


def compare(lg: dict[str, Any], pl: dict[str, Any], full: bool, out: Callable[[str], None]) -> int:
    differ = 0
    for step in list(dict.fromkeys([*lg, *pl])):
        a, b = normalize(lg.get(step, "<missing>"), full), normalize(pl.get(step, "<missing>"), full)
        if a == b:
            out(f"=  {step}")
            continue
        differ += 1
        out(f"!= {step}")
        for line in difflib.unified_diff(_render(a), _render(b), "langgraph", "plait", n=2, lineterm=""):
            out("     " + line)
    return differ


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--langgraph", default="/tmp/lgref/bin/langgraph", help="the `langgraph` CLI")
    parser.add_argument("--only", help="run only the steps whose name starts with this")
    parser.add_argument("--full", action="store_true", help="compare floats as values too")
    parser.add_argument("--json", help="write the normalized transcripts into this folder")
    parser.add_argument("--keep-logs", action="store_true", help="print the server logs' tails")
    parser.add_argument("--platform", action="store_true", help="keep the hosted platform's keys")
    args = parser.parse_args()
    global _DROP  # noqa: PLW0603 - a command line switch
    _DROP = frozenset() if args.platform else PLATFORM_KEYS
    plait = str(Path(sys.executable).parent / "plait")
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name in ("langgraph", "plait"):
            config, port = _project(root, name, GRAPH, GRAPHS, CONFIG), _port()
            if name == "plait":
                cmd = [plait, "serve", "--config", str(config), "--port", str(port)]
                cmd += ["--db", str(root / "plait.sqlite")]
            else:
                cmd = [args.langgraph, "dev", "--port", str(port), "--no-browser", "--no-reload"]
                cmd += ["--config", str(config)]
            log = root / f"{name}.log"
            proc = _start(cmd, config.parent, port, log)
            try:
                results[name] = _run_against(f"http://127.0.0.1:{port}", args.only)
            finally:
                _stop(proc)
                if args.keep_logs:
                    print(f"--- {name} log tail\n{log.read_text(errors='replace')[-4000:]}", file=sys.stderr)
    if args.json:
        folder = Path(args.json)
        folder.mkdir(parents=True, exist_ok=True)
        for name, res in results.items():
            (folder / f"{name}.json").write_text(json.dumps(normalize(res, True), indent=1, default=repr))
    differ = compare(results["langgraph"], results["plait"], args.full, print)
    print(f"\n{differ} of {len(set(results['langgraph']) | set(results['plait']))} steps differ")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
