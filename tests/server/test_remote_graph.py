"""``plait.pregel.remote.RemoteGraph`` against a real ``plait serve`` process, through the real SDK."""

from __future__ import annotations

import operator
import os
import subprocess
import sys
import uuid
from typing import Annotated, Any

import pytest
from _serve_proc import ROOT, Server
from langgraph_sdk.schema import StreamPart

from plait.checkpoint.memory import InMemorySaver
from plait.errors import GraphInterrupt, InvalidConfigError
from plait.graph import START, MessagesState, StateGraph
from plait.pregel._remote_wire import sanitize_config
from plait.pregel.remote import RemoteException, RemoteGraph
from plait.types import Command, GraphOutput, Interrupt, StateSnapshot


class State(MessagesState):
    turns: Annotated[int, operator.add]


def _said(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def _thread() -> dict[str, Any]:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def _texts(values: dict[str, Any]) -> list[str]:
    return [m["content"] if isinstance(m, dict) else m.content for m in values["messages"]]


@pytest.fixture
def remote(server: Server) -> RemoteGraph:
    return RemoteGraph("agent", url=server.url)


# -- a remote graph on its own ------------------------------------------------------------------------


def test_invoke_and_stream_on_a_thread(remote: RemoteGraph) -> None:
    config = _thread()
    out = remote.invoke(_said("hi"), config)
    assert _texts(out) == ["hi", "you said: hi"] and out["turns"] == 1

    updates = list(remote.stream(_said("yo"), config))  # default mode: updates
    assert [list(u) for u in updates] == [["chat"]]
    assert updates[0]["chat"]["messages"][0]["content"] == "you said: yo"

    parts = list(remote.stream(_said("again"), config, stream_mode=["values", "custom"]))
    assert all(isinstance(p, StreamPart) for p in parts)
    assert [p.event for p in parts] == ["values", "custom", "values"]
    assert parts[1].data == {"progress": "again"}
    assert _texts(parts[-1].data)[-2:] == ["again", "you said: again"]


def test_stateless_run_and_subgraph_events(server: Server) -> None:
    nested = RemoteGraph("nested", url=server.url)
    chunks = list(nested.stream(_said("n"), subgraphs=True))
    namespaces = [ns for ns, _ in chunks]
    assert namespaces[0] == () and namespaces[-1] == ()
    (inner,) = [(ns, c) for ns, c in chunks if ns]
    assert inner[0][0].startswith("inner:") and inner[1] == {"inner_step": {"turns": 1}}
    # without subgraphs=True only the root's events
    assert [list(c) for c in nested.stream(_said("n"))] == [["chat"], ["inner"]]
    messages = list(nested.stream(_said("n"), stream_mode="messages"))
    assert messages and all(isinstance(m, tuple) and len(m) == 2 for m in messages)


def test_v2_parts_and_output(remote: RemoteGraph) -> None:
    parts = list(remote.stream(_said("v2"), stream_mode="values", version="v2"))
    assert {p["type"] for p in parts} == {"values"} and all(p["ns"] == () for p in parts)
    out = remote.invoke(_said("ask"), _thread(), version="v2")
    assert isinstance(out, GraphOutput)
    assert [i.value for i in out.interrupts] == [{"question": "sure?"}] and "__interrupt__" not in out.value


def test_interrupt_then_resume_with_a_command(remote: RemoteGraph) -> None:
    config = _thread()
    out = remote.invoke(_said("ask"), config)
    (asked,) = out["__interrupt__"]
    assert asked["value"] == {"question": "sure?"}

    state = remote.get_state(config)
    assert isinstance(state, StateSnapshot) and state.next == ("chat",)
    assert state.interrupts == (Interrupt(value={"question": "sure?"}, id=asked["id"]),)
    assert state.tasks[0].name == "chat" and state.tasks[0].interrupts == state.interrupts

    done = remote.invoke(Command(resume="yes"), config)
    assert _texts(done)[-1] == "answer: yes" and remote.get_state(config).next == ()


def test_state_history_and_update(remote: RemoteGraph) -> None:
    config = _thread()
    remote.invoke(_said("one"), config)
    remote.invoke(_said("two"), config)
    state = remote.get_state(config)
    assert state.values["turns"] == 2 and state.metadata and state.metadata["source"] == "loop"
    assert state.parent_config is not None and state.created_at

    history = list(remote.get_state_history(config))
    assert history[0].config == state.config and len(history) >= 4
    assert [h.config for h in remote.get_state_history(config, limit=2)] == [h.config for h in history[:2]]
    older = list(remote.get_state_history(config, before=history[1].config, limit=1))
    assert older[0].config == history[2].config
    inputs = list(remote.get_state_history(config, filter={"source": "input"}))
    assert inputs and all(h.metadata and h.metadata["source"] == "input" for h in inputs)

    new = remote.update_state(config, {"turns": 10}, as_node="chat")
    assert new["configurable"]["thread_id"] == config["configurable"]["thread_id"]
    after = remote.get_state(config)
    assert after.values["turns"] == 12 and after.config == new and after.metadata["source"] == "update"
    # an earlier checkpoint, named by its config
    assert remote.get_state(history[1].config).values == history[1].values


def test_get_graph(remote: RemoteGraph) -> None:
    drawn = remote.get_graph()
    assert set(drawn.nodes) == {"__start__", "chat", "__end__"}
    assert {(e.source, e.target) for e in drawn.edges} == {("__start__", "chat"), ("chat", "__end__")}


def test_a_failed_run_raises_remote_exception(remote: RemoteGraph) -> None:
    with pytest.raises(RemoteException) as err:
        remote.invoke(_said("fail"))
    assert err.value.args[0]["message"] == "the node failed on purpose"


async def test_async_api(remote: RemoteGraph) -> None:
    config = _thread()
    out = await remote.ainvoke(_said("hi"), config)
    assert _texts(out) == ["hi", "you said: hi"]
    chunks = [c async for c in remote.astream(_said("yo"), config, stream_mode="custom")]
    assert chunks == [{"progress": "yo"}]
    asked = await remote.ainvoke(_said("ask"), config)
    assert asked["__interrupt__"][0]["value"] == {"question": "sure?"}
    assert (await remote.aget_state(config)).next == ("chat",)
    done = await remote.ainvoke(Command(resume="ok"), config)
    assert _texts(done)[-1] == "answer: ok"
    history = [h async for h in remote.aget_state_history(config, limit=3)]
    assert len(history) == 3 and history[0].next == ()
    new = await remote.aupdate_state(config, {"turns": 5})
    assert (await remote.aget_state(config)).config == new
    assert set((await remote.aget_graph()).nodes) == {"__start__", "chat", "__end__"}


# -- a remote graph as a node of a local graph -------------------------------------------------------


def _parent(remote: RemoteGraph, saver: InMemorySaver | None = None) -> Any:
    return StateGraph(State).add_node(remote).add_edge(START, "agent").compile(checkpointer=saver)


def test_as_a_node_without_a_checkpointer(remote: RemoteGraph) -> None:
    parent = _parent(remote)
    out = parent.invoke(_said("hi"))
    assert [m.content for m in out["messages"]] == ["hi", "you said: hi"]

    chunks = list(parent.stream(_said("yo"), stream_mode=["updates", "custom"], subgraphs=True))
    inside = [(ns, mode) for ns, mode, _ in chunks if ns]
    assert [mode for _, mode in inside] == ["custom", "updates"]
    assert all(len(ns) == 1 and ns[0].startswith("agent:") for ns, _ in inside)
    assert chunks[-1][:2] == ((), "updates") and "agent" in chunks[-1][2]
    # without subgraphs=True the remote graph's own events stay out of the parent's stream
    assert [mode for mode, _ in parent.stream(_said("yo"), stream_mode=["updates", "custom"])] == ["updates"]


def test_as_a_node_its_interrupt_pauses_the_parent_and_resuming_resumes_it(
    remote: RemoteGraph,
) -> None:
    parent = _parent(remote, InMemorySaver())
    config = _thread()
    out = parent.invoke(_said("ask"), config)
    (asked,) = out["__interrupt__"]
    assert asked.value == {"question": "sure?"}
    paused = parent.get_state(config)
    assert paused.next == ("agent",) and paused.interrupts == (asked,)
    # the remote thread is the parent's thread
    assert remote.get_state(config).interrupts == (asked,)

    done = parent.invoke(Command(resume="yes"), config)
    assert [m.content for m in done["messages"]] == ["ask", "answer: yes"]
    assert parent.get_state(config).next == () and remote.get_state(config).next == ()


async def test_as_a_node_async_with_a_resume_map(remote: RemoteGraph) -> None:
    parent = _parent(remote, InMemorySaver())
    config = _thread()
    chunks = [c async for c in parent.astream(_said("ask"), config, stream_mode="updates", subgraphs=True)]
    assert chunks[-1] == ((), {"__interrupt__": chunks[-1][1]["__interrupt__"]})
    (asked,) = (await parent.aget_state(config)).interrupts
    done = await parent.ainvoke(Command(resume={asked.id: "mapped"}), config)
    assert [m.content for m in done["messages"]] == ["ask", "answer: mapped"]


def test_called_inside_a_node_with_its_config(remote: RemoteGraph) -> None:
    def node(state: State, config: Any) -> dict[str, Any]:
        return remote.invoke({"messages": state["messages"][-1:]}, config)

    parent = (
        StateGraph(State).add_node("call", node).add_edge(START, "call").compile(checkpointer=InMemorySaver())
    )
    config = _thread()
    with pytest.raises(GraphInterrupt):  # a node's own call: the interrupt pauses the task
        node(_said("ask"), {"configurable": {"checkpoint_ns": "call:1", **config["configurable"]}})
    out = parent.invoke(_said("ask"), _thread())
    assert out["__interrupt__"][0].value == {"question": "sure?"}


# -- config, clients and the SDK -----------------------------------------------------------------------


def test_config_is_sanitized_before_it_is_sent() -> None:
    config = {
        "recursion_limit": 7,
        "tags": ["a", 3],
        "callbacks": [object()],
        "metadata": {"ok": 1, "obj": object(), "nested": {"x": [1, object()]}, 5: "int key"},
        "configurable": {
            "thread_id": "t",
            "user": "u",
            "checkpoint_ns": "node:1",
            "checkpoint_id": "c",
            "checkpoint_map": {"": "c"},
            "__pregel_task_id": "x",
            "saver": object(),
            "id": uuid.UUID(int=1),
        },
    }
    assert sanitize_config(config) == {
        "recursion_limit": 7,
        "tags": ["a"],
        "metadata": {"ok": 1, "nested": {"x": [1]}},
        "configurable": {"thread_id": "t", "user": "u", "id": str(uuid.UUID(int=1))},
    }


def test_with_config_and_copy(server: Server) -> None:
    remote = RemoteGraph("agent", url=server.url, config={"configurable": {"thread_id": str(uuid.uuid4())}})
    tagged = remote.with_config({"tags": ["x"]}, metadata={"who": "test"})
    assert (
        tagged is not remote and tagged.client is remote.client and tagged.sync_client is remote.sync_client
    )
    assert tagged.config == {
        "configurable": remote.config["configurable"],  # type: ignore[index]
        "tags": ["x"],
        "metadata": {"who": "test"},
    }
    tagged.invoke(_said("hi"))  # runs on the thread its config names
    assert remote.get_state({}).values["turns"] == 1
    named = remote.copy({"name": "other"})
    assert named.name == "other" and named.assistant_id == "agent" and remote.name == "agent"


def test_missing_clients_and_thread_are_clear_errors(server: Server) -> None:
    with pytest.raises(ValueError, match="sync client"):
        RemoteGraph("agent").invoke(_said("hi"))
    with pytest.raises(InvalidConfigError, match="thread_id") as err:
        RemoteGraph("agent", url=server.url).get_state({})
    assert err.value.field == "thread_id"


def test_without_the_sdk_construction_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langgraph_sdk", None)  # as if it were not installed
    with pytest.raises(ImportError, match="pip install langgraph-sdk"):
        RemoteGraph("agent", url="http://127.0.0.1:1")


def test_langgraph_path_imports_it_without_the_sdk() -> None:
    code = (
        "import sys, plait.as_langgraph\n"
        "from langgraph.pregel.remote import RemoteGraph\n"
        "import plait.pregel.remote as m\n"
        "assert RemoteGraph is m.RemoteGraph\n"
        "assert 'langgraph_sdk' not in sys.modules\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=ROOT)
