"""Tracing as LangGraph 1.2.24 traces: the runs a LangSmith trace holds (names, nesting, tags, the
root's thread metadata), and the ``astream_events(version="v2")`` sequence of an agent.

The expectations below were recorded from LangGraph 1.2.24 (langchain 1.5.2) running the same
programs; a parallel step's sibling order is the one difference left (LangGraph runs a node's
routers inside its task, plait after the step).
"""

from __future__ import annotations

import asyncio
import json
import operator
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import RunnableLambda
from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.graph import END, START, StateGraph

THREAD: dict[str, Any] = {"configurable": {"thread_id": "t"}}

FAKE_AGENT = '''
from typing import Any
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolCall
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool


class FakeModel(BaseChatModel):
    """Answers from a script: a call of ``add``, then a text."""

    script: Any

    @property
    def _llm_type(self) -> str:
        return "fake"

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=next(self.script))])

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def model() -> FakeModel:
    call = ToolCall(name="add", args={"a": 1, "b": 2}, id="c1", type="tool_call")
    return FakeModel(script=iter([AIMessage("", id="m1", tool_calls=[call]), AIMessage("three", id="m2")]))


CONFIG = {"configurable": {"thread_id": "t1", "user_id": "u1", "api_key": "hidden", "__private": 1}}
'''

REACT = "from plait.checkpoint.memory import InMemorySaver\nfrom plait.prebuilt import create_react_agent\n"

# -- (1) a LangSmith trace, received by a local endpoint -------------------------------------------

LANGSMITH_TREE = [  # LangGraph 1.2.24: 15 runs, by start order; (depth, name, tags)
    (0, "LangGraph", []),
    (1, "agent", ["graph:step:1"]),
    (2, "call_model", ["seq:step:1"]),
    (3, "RunnableSequence", ["seq:step:1"]),
    (4, "Prompt", ["seq:step:1"]),
    (4, "FakeModel", ["seq:step:2"]),
    (2, "should_continue", ["seq:step:3"]),
    (1, "tools", ["graph:step:2"]),
    (2, "add", ["seq:step:1"]),
    (1, "agent", ["graph:step:3"]),
    (2, "call_model", ["seq:step:1"]),
    (3, "RunnableSequence", ["seq:step:1"]),
    (4, "Prompt", ["seq:step:1"]),
    (4, "FakeModel", ["seq:step:2"]),
    (2, "should_continue", ["seq:step:3"]),
]

_INGEST = {
    "use_multipart_endpoint": False,  # runs come as JSON to /runs/batch
    "size_limit": 100,
    "size_limit_bytes": 20_971_520,
    "scale_up_qsize_trigger": 1000,
    "scale_up_nthreads_limit": 16,
    "scale_down_nempty_trigger": 4,
}


class _LangSmith(BaseHTTPRequestHandler):
    """The few LangSmith endpoints a tracing client calls; runs are kept in ``server.runs``."""

    server: Any

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Quiet."""

    def _answer(self, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._answer(
            {"version": "fake", "batch_ingest_config": _INGEST} if self.path.startswith("/info") else {}
        )

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        parts = (
            [*body.get("post", []), *body.get("patch", [])] if self.path.startswith("/runs/batch") else [body]
        )
        with self.server.lock:
            for run in parts:
                if "id" in run:
                    self.server.runs.setdefault(run["id"], {}).update(run)
        self._answer({})

    do_PATCH = do_POST


@pytest.fixture
def langsmith() -> Iterator[Any]:
    server: Any = ThreadingHTTPServer(("127.0.0.1", 0), _LangSmith)
    server.runs, server.lock = {}, threading.Lock()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    thread.join()


def _traced(server: Any, tmp_path: Path, program: str) -> list[dict[str, Any]]:
    """Run ``program`` in a fresh interpreter tracing to ``server``; its runs, in start order."""
    script = tmp_path / "traced.py"
    flush = "\nfrom langchain_core.tracers.langchain import wait_for_all_tracers\nwait_for_all_tracers()\n"
    script.write_text(FAKE_AGENT + program + flush)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGSMITH_", "LANGCHAIN_"))}
    env.update(
        LANGSMITH_TRACING="true",
        LANGSMITH_ENDPOINT=f"http://127.0.0.1:{server.server_port}",
        LANGSMITH_API_KEY="fake",
    )
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with server.lock:  # the client flushed every run before the program ended
        runs = list(server.runs.values())
    return sorted(runs, key=lambda r: r["dotted_order"])


def _depth(run: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> int:
    parent = run.get("parent_run_id")
    return 0 if parent is None else 1 + _depth(by_id[parent], by_id)


def test_langsmith_trace_of_an_agent_has_langgraphs_runs(langsmith: Any, tmp_path: Path) -> None:
    program = REACT + textwrap.dedent("""
        agent = create_react_agent(model(), [add], checkpointer=InMemorySaver())
        agent.invoke({"messages": [("user", "hi")]}, CONFIG)
    """)
    runs = _traced(langsmith, tmp_path, program)
    by_id = {r["id"]: r for r in runs}
    assert [(_depth(r, by_id), r["name"], r.get("tags") or []) for r in runs] == LANGSMITH_TREE
    assert all(r.get("end_time") for r in runs)
    root = runs[0]["extra"]["metadata"]
    # the thread groups the conversation's traces; configurable values are copied, secrets and
    # private keys are not
    assert {k: root.get(k) for k in ("thread_id", "user_id", "ls_integration")} == {
        "thread_id": "t1",
        "user_id": "u1",
        "ls_integration": "langgraph",
    }
    assert "api_key" not in root and "__private" not in root
    node = runs[1]["extra"]["metadata"]
    assert node["thread_id"] == "t1" and node["langgraph_node"] == "agent" and node["langgraph_step"] == 1


# -- (2) astream_events(version="v2") -------------------------------------------------------------

_NODE = [
    "langgraph_checkpoint_ns",
    "langgraph_node",
    "langgraph_path",
    "langgraph_step",
    "langgraph_triggers",
]
NODE = sorted([*_NODE, "ls_integration", "thread_id"])
INNER = sorted([*NODE, "checkpoint_ns"])
MODEL = sorted([*INNER, "lc_versions", "ls_model_type", "ls_provider"])
ROOT = ["ls_integration", "thread_id"]


def _model_call(step: int) -> list[tuple[Any, ...]]:
    """The events of the ``agent`` node at ``step`` of ``create_react_agent`` (LangGraph 1.2.24)."""
    tag = [f"graph:step:{step}"]
    return [
        ("on_chain_start", "agent", "LangGraph", tag, NODE),
        ("on_chain_start", "call_model", "agent", ["seq:step:1"], NODE),
        ("on_chain_start", "RunnableSequence", "agent", ["seq:step:1"], INNER),
        ("on_chain_start", "Prompt", "RunnableSequence", ["seq:step:1"], INNER),
        ("on_chain_end", "Prompt", "RunnableSequence", ["seq:step:1"], INNER),
        ("on_chat_model_start", "FakeModel", "RunnableSequence", ["seq:step:2"], MODEL),
        ("on_chat_model_end", "FakeModel", "RunnableSequence", ["seq:step:2"], MODEL),
        ("on_chain_end", "RunnableSequence", "agent", ["seq:step:1"], INNER),
        ("on_chain_end", "call_model", "agent", ["seq:step:1"], NODE),
        ("on_chain_start", "should_continue", "agent", ["seq:step:3"], NODE),
        ("on_chain_end", "should_continue", "agent", ["seq:step:3"], NODE),
        ("on_chain_stream", "agent", "LangGraph", tag, NODE),
        ("on_chain_end", "agent", "LangGraph", tag, NODE),
        ("on_chain_stream", "LangGraph", None, [], ROOT),
    ]


REACT_EVENTS = [  # 36 events
    ("on_chain_start", "LangGraph", None, [], ROOT),
    *_model_call(1),
    ("on_chain_start", "tools", "LangGraph", ["graph:step:2"], NODE),
    ("on_tool_start", "add", "tools", ["seq:step:1"], INNER),
    ("on_tool_end", "add", "tools", ["seq:step:1"], INNER),
    ("on_chain_stream", "tools", "LangGraph", ["graph:step:2"], NODE),
    ("on_chain_end", "tools", "LangGraph", ["graph:step:2"], NODE),
    ("on_chain_stream", "LangGraph", None, [], ROOT),
    *_model_call(3),
    ("on_chain_end", "LangGraph", None, [], ROOT),
]

EVENTS = """
import asyncio, json


async def events(agent):
    names, out = {}, []
    async for ev in agent.astream_events({"messages": [("user", "hi")]}, CONFIG, version="v2"):
        names[ev["run_id"]] = ev["name"]
        parent = names.get(ev["parent_ids"][-1]) if ev["parent_ids"] else None
        out.append([ev["event"], ev["name"], parent, ev["tags"], sorted(ev["metadata"])])
    return out
"""


def _events(program: str) -> list[tuple[Any, ...]]:
    namespace: dict[str, Any] = {}
    code = compile(FAKE_AGENT + REACT + EVENTS + program, "<agent>", "exec", dont_inherit=True)
    exec(code, namespace)  # noqa: S102 - the programs above
    found = asyncio.run(namespace["events"](namespace["agent"]))
    return [tuple(e) for e in found]


def test_astream_events_of_create_react_agent_match_langgraph() -> None:
    program = "agent = create_react_agent(model(), [add], checkpointer=InMemorySaver())\n"
    assert _events(program) == REACT_EVENTS


def test_astream_events_of_langchains_create_agent_on_plait_match_langgraph(tmp_path: Path) -> None:
    pytest.importorskip("langchain.agents")
    step = [  # LangGraph 1.2.24: the model node calls the model itself; routers are not traced
        ("on_chain_start", "model", "LangGraph", ["graph:step:{n}"], "NODE"),
        ("on_chat_model_start", "FakeModel", "model", ["seq:step:1"], "MODEL"),
        ("on_chat_model_end", "FakeModel", "model", ["seq:step:1"], "MODEL"),
        ("on_chain_stream", "model", "LangGraph", ["graph:step:{n}"], "NODE"),
        ("on_chain_end", "model", "LangGraph", ["graph:step:{n}"], "NODE"),
        ("on_chain_stream", "LangGraph", None, [], "ROOT"),
    ]
    program = textwrap.dedent("""
        import plait.as_langgraph  # before langchain imports langgraph
        from langchain.agents import create_agent
        from langgraph.checkpoint.memory import InMemorySaver
    """)
    program += (
        FAKE_AGENT
        + EVENTS
        + textwrap.dedent("""
        agent = create_agent(model(), [add], checkpointer=InMemorySaver())
        print(json.dumps(asyncio.run(events(agent))))
    """)
    )
    script = tmp_path / "create_agent.py"
    script.write_text(program)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGSMITH_", "LANGCHAIN_"))}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    sets = {"NODE": NODE, "MODEL": MODEL, "ROOT": ROOT}
    expected = [("on_chain_start", "LangGraph", None, [], "ROOT")]
    for n in (1, 3):
        expected += [(e, name, p, [t.format(n=n) for t in tags], keys) for e, name, p, tags, keys in step]
        if n == 1:
            expected += [
                ("on_chain_start", "tools", "LangGraph", ["graph:step:2"], "NODE"),
                ("on_tool_start", "add", "tools", ["seq:step:1"], "INNER"),
                ("on_tool_end", "add", "tools", ["seq:step:1"], "INNER"),
                ("on_chain_stream", "tools", "LangGraph", ["graph:step:2"], "NODE"),
                ("on_chain_end", "tools", "LangGraph", ["graph:step:2"], "NODE"),
                ("on_chain_stream", "LangGraph", None, [], "ROOT"),
            ]
    expected.append(("on_chain_end", "LangGraph", None, [], "ROOT"))
    sets["INNER"] = INNER
    found = [tuple(e) for e in json.loads(done.stdout.strip().splitlines()[-1])]
    assert [(e, n, p, t) for e, n, p, t, _ in found] == [(e, n, p, t) for e, n, p, t, _ in expected]
    for (*_, keys), (*_, kind) in zip(found, expected, strict=True):
        # the agent's own metadata (ls_integration: "langchain_create_agent", lc_agent_name) come on top
        assert set(sets[kind]) - {"thread_id"} <= set(keys), (kind, keys)


# -- routers: runs inside their node's, as LangGraph nests them ------------------------------------


class _Runs(BaseCallbackHandler):
    """Records each chain run as ``(name, parent name, tags)``, and which runs ended."""

    def __init__(self) -> None:
        self.names: dict[Any, str | None] = {}
        self.started: list[tuple[str | None, str | None, list[str]]] = []
        self.ended: set[Any] = set()

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: Any, **kwargs: Any) -> None:
        self.names[run_id] = kwargs["name"]
        parent = kwargs.get("parent_run_id")
        self.started.append((kwargs["name"], self.names.get(parent), kwargs.get("tags") or []))

    def on_chain_end(self, outputs: Any, *, run_id: Any, **kwargs: Any) -> None:
        self.ended.add(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
        self.ended.add(run_id)


class _S(TypedDict):
    x: Annotated[list[str], operator.add]


def _routed_graph() -> Any:
    def route(state: _S) -> str:
        return "b"

    def start(state: _S) -> str:
        return "a"

    g = StateGraph(_S)
    g.add_node("a", lambda s: {"x": ["a"]})
    g.add_node("b", lambda s: {"x": ["b"]})
    g.add_node("r", RunnableLambda(lambda s: {"x": ["r"]}, name="rl"))
    g.add_conditional_edges(START, start)
    g.add_conditional_edges("a", route)
    g.add_conditional_edges("a", lambda s: [], ["b"])
    g.add_conditional_edges("b", lambda s: "r")
    g.add_conditional_edges("r", RunnableLambda(lambda s: END, name="rr"))
    return g.compile()


ROUTED = [  # LangGraph 1.2.24
    ("LangGraph", None, []),
    ("__start__", "LangGraph", ["graph:step:0", "langsmith:hidden"]),
    ("start", "__start__", ["seq:step:2", "langsmith:hidden"]),
    ("a", "LangGraph", ["graph:step:1"]),
    ("route", "a", ["seq:step:3"]),
    ("RunnableCallable", "a", ["seq:step:4"]),  # a lambda's run
    ("b", "LangGraph", ["graph:step:2"]),
    ("RunnableCallable", "b", ["seq:step:3"]),
    ("r", "LangGraph", ["graph:step:3"]),
    ("rl", "r", ["seq:step:1"]),  # a node that is a Runnable: its own run inside the node's
    ("rr", "r", ["seq:step:3"]),  # a Runnable router: its own run
]


def test_routers_report_runs_inside_their_nodes() -> None:
    runs = _Runs()
    assert _routed_graph().invoke({"x": []}, {"callbacks": [runs]}) == {"x": ["a", "b", "r"]}
    assert runs.started == ROUTED
    assert runs.ended == set(runs.names)


def test_routers_report_runs_inside_their_nodes_async() -> None:
    runs = _Runs()
    out = asyncio.run(_routed_graph().ainvoke({"x": []}, {"callbacks": [runs]}))
    assert out == {"x": ["a", "b", "r"]}
    # LangGraph's async routers name a lambda's run after the lambda: none
    assert runs.started == [(None if n == "RunnableCallable" else n, p, t) for n, p, t in ROUTED]
    assert runs.ended == set(runs.names)


def test_a_node_run_held_for_its_routers_ends_when_its_step_fails() -> None:
    def boom(state: _S) -> dict[str, Any]:
        raise ValueError("boom")

    g = StateGraph(_S)
    g.add_node("ok", lambda s: {"x": ["ok"]})
    g.add_node("bad", boom)
    g.add_edge(START, "ok")
    g.add_edge(START, "bad")
    g.add_conditional_edges("ok", lambda s: END)
    runs = _Runs()
    with pytest.raises(ValueError, match="boom"):
        g.compile().invoke({"x": []}, {"callbacks": [runs]})
    assert {name for name, *_ in runs.started} == {"LangGraph", "ok", "bad"}
    assert runs.ended == set(runs.names)  # "ok" waited for routers that never ran


def test_root_run_metadata_keeps_a_given_integration() -> None:
    seen: list[dict[str, Any]] = []

    class Meta(BaseCallbackHandler):
        def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
            if kwargs.get("parent_run_id") is None:
                seen.append(kwargs.get("metadata") or {})

    g = StateGraph(_S).add_node("a", lambda s: {"x": ["a"]}).add_edge(START, "a").compile()
    g.invoke({"x": []}, {"callbacks": [Meta()], "configurable": {"thread_id": "t", "checkpoint_id": ""}})
    g.with_config(metadata={"ls_integration": "mine"}).invoke({"x": []}, {"callbacks": [Meta()]})
    assert seen == [{"thread_id": "t", "ls_integration": "langgraph"}, {"ls_integration": "mine"}]


def test_a_subgraph_reports_one_run_whether_it_is_the_node_or_invoked_in_one() -> None:
    sub = StateGraph(_S)
    sub.add_node("s1", lambda s: {"x": ["s1"]})
    sub.add_edge(START, "s1")
    sub.add_conditional_edges("s1", lambda s: END)
    child = sub.compile(name="child")

    def q(state: _S) -> dict[str, Any]:
        return child.invoke({"x": []})

    g = StateGraph(_S).add_node("p", child).add_node("q", q).add_edge(START, "p").add_edge("p", "q")
    runs = _Runs()
    g.compile(checkpointer=InMemorySaver()).invoke({"x": []}, {"callbacks": [runs], **THREAD})
    assert runs.started == [  # LangGraph 1.2.24
        ("LangGraph", None, []),
        ("p", "LangGraph", ["graph:step:1"]),
        ("child", "p", ["seq:step:1"]),
        ("s1", "child", ["graph:step:1"]),
        ("RunnableCallable", "s1", ["seq:step:3"]),
        ("q", "LangGraph", ["graph:step:2"]),
        ("child", "q", ["seq:step:1"]),
        ("s1", "child", ["graph:step:1"]),
        ("RunnableCallable", "s1", ["seq:step:3"]),
    ]
    assert runs.ended == set(runs.names)


def test_astream_events_of_routers_match_langgraph() -> None:
    async def events() -> list[str]:
        names: dict[Any, str] = {}
        out: list[str] = []
        async for ev in _routed_graph().astream_events({"x": []}, version="v2"):
            names[ev["run_id"]] = ev["name"]
            parent = names.get(ev["parent_ids"][-1]) if ev["parent_ids"] else None
            out.append(f"{ev['event']} {ev['name']} {parent} {','.join(ev['tags'])}")
        return out

    hidden = "graph:step:0,langsmith:hidden"
    assert asyncio.run(events()) == [  # LangGraph 1.2.24 (which also streams "rl": it streams a
        # node that is a Runnable, plait invokes it)
        "on_chain_start LangGraph None ",
        f"on_chain_start __start__ LangGraph {hidden}",
        "on_chain_start start __start__ seq:step:2,langsmith:hidden",
        "on_chain_end start __start__ seq:step:2,langsmith:hidden",
        f"on_chain_stream __start__ LangGraph {hidden}",
        f"on_chain_end __start__ LangGraph {hidden}",
        "on_chain_start a LangGraph graph:step:1",
        "on_chain_start route a seq:step:3",
        "on_chain_end route a seq:step:3",
        "on_chain_start Unnamed a seq:step:4",
        "on_chain_end Unnamed a seq:step:4",
        "on_chain_stream a LangGraph graph:step:1",
        "on_chain_end a LangGraph graph:step:1",
        "on_chain_stream LangGraph None ",
        "on_chain_start b LangGraph graph:step:2",
        "on_chain_start Unnamed b seq:step:3",
        "on_chain_end Unnamed b seq:step:3",
        "on_chain_stream b LangGraph graph:step:2",
        "on_chain_end b LangGraph graph:step:2",
        "on_chain_stream LangGraph None ",
        "on_chain_start r LangGraph graph:step:3",
        "on_chain_start rl r seq:step:1",
        "on_chain_end rl r seq:step:1",
        "on_chain_start rr r seq:step:3",
        "on_chain_end rr r seq:step:3",
        "on_chain_stream r LangGraph graph:step:3",
        "on_chain_end r LangGraph graph:step:3",
        "on_chain_stream LangGraph None ",
        "on_chain_end LangGraph None ",
    ]


@pytest.mark.parametrize("callbacks", [False, True])
def test_messages_of_the_agents_model_carry_its_runs_metadata(callbacks: bool) -> None:
    class Quiet(BaseCallbackHandler):
        """A handler that records nothing: the run is traced."""

    namespace: dict[str, Any] = {}
    exec(compile(FAKE_AGENT + REACT, "<agent>", "exec", dont_inherit=True), namespace)  # noqa: S102
    agent = namespace["create_react_agent"](
        namespace["model"](), [namespace["add"]], checkpointer=InMemorySaver()
    )
    config = {**THREAD, "callbacks": [Quiet()] if callbacks else []}
    models = [
        sorted(metadata)
        for message, metadata in agent.stream({"messages": [("user", "hi")]}, config, stream_mode="messages")
        if metadata["langgraph_node"] == "agent"
    ]
    assert models == [MODEL, MODEL]  # LangGraph 1.2.24, with and without callbacks
