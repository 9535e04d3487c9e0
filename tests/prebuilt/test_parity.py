"""LangGraph parity of the prebuilt parts: runtime hand-off, graph state for bare calls, nodes view,
deprecations, drawings, bubbling errors and invalid resumes."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolCall
from pydantic import BaseModel, ValidationError
from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.errors import GraphBubbleUp, GraphInterrupt, ParentCommand
from plait.graph import START, MessagesState, StateGraph
from plait.prebuilt import ToolNode, ToolRuntime, create_react_agent
from plait.prebuilt.chat_agent_executor import AgentStatePydantic
from plait.runtime import ExecutionInfo, Runtime, ServerInfo
from plait.store.memory import InMemoryStore
from plait.types import Command, Send, interrupt
from plait.warnings import LangGraphDeprecatedSinceV10, LangGraphDeprecationWarning


def _call(name: str, call_id: str = "c1", **args: Any) -> ToolCall:
    return ToolCall(name=name, args=args, id=call_id, type="tool_call")


class _FakeModel(GenericFakeChatModel):
    """Answers from a script; binding tools changes nothing."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def _model(*answers: AIMessage) -> _FakeModel:
    return _FakeModel(messages=iter(answers or [AIMessage("done", id="m1")]))


def test_tool_node_alone_takes_its_runtime_from_the_config() -> None:
    seen: dict[str, Any] = {}

    def probe(runtime: ToolRuntime) -> str:
        """Record the runtime."""
        seen.update(store=runtime.store, context=runtime.context, info=runtime.execution_info)
        seen["server"] = runtime.server_info
        return "ok"

    store = InMemoryStore()
    info = ExecutionInfo(checkpoint_id="cp", checkpoint_ns="", task_id="t", thread_id="th")
    server = ServerInfo(assistant_id="a", graph_id="g")
    runtime = Runtime(context={"user": "u"}, store=store, execution_info=info, server_info=server)
    out = ToolNode([probe]).invoke(
        {"messages": [AIMessage("", tool_calls=[_call("probe")])]},
        {"configurable": {"__pregel_runtime": runtime}},
    )
    assert out["messages"][0].content == "ok"
    assert seen == {"store": store, "context": {"user": "u"}, "info": info, "server": server}


def test_tool_node_in_a_graph_knows_where_it_runs() -> None:
    seen: list[Any] = []

    def probe(runtime: ToolRuntime) -> str:
        """Record the execution info."""
        seen.append(runtime.execution_info)
        return "ok"

    graph = StateGraph(MessagesState).add_node("tools", ToolNode([probe])).add_edge(START, "tools")
    graph.compile(checkpointer=InMemorySaver()).invoke(
        {"messages": [AIMessage("", tool_calls=[_call("probe")])]}, {"configurable": {"thread_id": "t1"}}
    )
    [info] = seen
    assert isinstance(info, ExecutionInfo)
    assert info.thread_id == "t1" and info.checkpoint_ns == "" and info.task_id


@dataclass
class _DataState:
    messages: list[Any]
    foo: str = ""


def test_bare_tool_calls_sent_in_a_graph_get_its_state() -> None:
    seen: list[Any] = []

    def record(runtime: ToolRuntime) -> str:
        """Record the state."""
        seen.append(runtime.state)
        return "ok"

    def agent(state: _DataState) -> dict[str, Any]:
        return {"messages": [AIMessage("", tool_calls=[_call("record")])]}

    graph = (
        StateGraph(_DataState)
        .add_node("agent", agent)
        .add_node("tools", ToolNode([record]))
        .add_edge(START, "agent")
        .add_conditional_edges("agent", lambda _: [Send("tools", [_call("record")])], ["tools"])
        .compile()
    )
    graph.invoke({"messages": [], "foo": "bar"})
    assert isinstance(seen[0], _DataState) and seen[0].foo == "bar"


def test_bare_tool_calls_outside_a_graph_get_an_empty_state() -> None:
    seen: list[Any] = []

    def record(runtime: ToolRuntime) -> str:
        """Record the state."""
        seen.append(runtime.state)
        return "ok"

    ToolNode([record]).invoke([_call("record")])
    assert seen == [{}]


@pytest.mark.parametrize("handle", [True, (GraphBubbleUp,), "handled", False])
def test_bubble_up_errors_are_never_handled(handle: Any) -> None:
    def bubbling(x: int) -> str:
        """Raise a control-flow exception."""
        raise GraphBubbleUp("up")

    with pytest.raises(GraphBubbleUp):
        ToolNode([bubbling], handle_tool_errors=handle).invoke(
            {"messages": [AIMessage("", tool_calls=[_call("bubbling", x=1)])]}
        )
    assert issubclass(GraphInterrupt, GraphBubbleUp) and issubclass(ParentCommand, GraphBubbleUp)


class _Approval(BaseModel):
    approved: bool


@pytest.mark.parametrize("handle", [True, (ValueError,)])
def test_invalid_resume_fails_the_run_whatever_the_error_handling(handle: Any) -> None:
    def ask() -> str:
        """Ask for approval."""
        answer = interrupt("Approve?", response_schema=_Approval)
        return f"approved={answer.approved}"

    graph = (
        StateGraph(MessagesState)
        .add_node("tools", ToolNode([ask], handle_tool_errors=handle))
        .add_edge(START, "tools")
        .compile(checkpointer=InMemorySaver())
    )
    config: Any = {"configurable": {"thread_id": "1"}}
    [pending] = graph.invoke({"messages": [AIMessage("", tool_calls=[_call("ask")])]}, config)[
        "__interrupt__"
    ]
    with pytest.raises(ValidationError):
        graph.invoke(Command(resume={pending.id: {"approved": "maybe"}}), config)
    out = graph.invoke(Command(resume={pending.id: {"approved": True}}), config)
    assert out["messages"][-1].content == "approved=True"


def test_compiled_graph_exposes_its_nodes() -> None:
    def tool(x: int) -> str:
        """Echo."""
        return str(x)

    agent = create_react_agent(_model(), [tool])
    assert list(agent.nodes) == ["__start__", "agent", "tools"]
    assert callable(agent.nodes["agent"].bound.func)
    out = agent.nodes["tools"].invoke({"messages": [AIMessage("", tool_calls=[_call("tool", x=2)])]})
    assert out["messages"][0].content == "2"


def test_config_schema_is_deprecated() -> None:
    class Ctx(TypedDict):
        model: str

    with pytest.warns(LangGraphDeprecatedSinceV10, match="`config_schema` is deprecated and will be removed"):
        agent = create_react_agent(_model(), [], config_schema=Ctx)
    assert agent.context_schema is Ctx
    with pytest.warns(LangGraphDeprecatedSinceV10, match="Use `get_context_jsonschema`"):
        assert agent.config_schema() is not None
    with pytest.warns(LangGraphDeprecatedSinceV10, match="`get_config_jsonschema` is deprecated"):
        schema = agent.get_config_jsonschema()
    assert schema["properties"]["configurable"]["$ref"].endswith("/Ctx")


def test_deprecation_warning_text() -> None:
    warning = LangGraphDeprecatedSinceV10("old thing is deprecated.")
    assert isinstance(warning, LangGraphDeprecationWarning) and isinstance(warning, DeprecationWarning)
    assert str(warning) == "old thing is deprecated. Deprecated in LangGraph V1.0 to be removed in V2.0."
    assert (warning.since, warning.expected_removal) == ((1, 0), (2, 0))


def test_agent_drawing_matches_langgraph() -> None:
    def tool() -> None:
        """A tool."""

    def hook(state: Any) -> dict[str, Any]:
        return {}

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = create_react_agent(_model(), [tool], pre_model_hook=hook, post_model_hook=hook)
    assert agent.get_graph().draw_mermaid(with_styles=False) == (
        "graph TD;\n"
        "\t__start__ --> pre_model_hook;\n"
        "\tagent --> post_model_hook;\n"
        "\tpost_model_hook -.-> __end__;\n"
        "\tpost_model_hook -.-> pre_model_hook;\n"
        "\tpost_model_hook -.-> tools;\n"
        "\tpre_model_hook --> agent;\n"
        "\ttools --> pre_model_hook;\n"
    )
    assert "\ttools(tools<hr/><small><em>__tools = tool</em></small>)\n" in agent.get_graph().draw_mermaid()


class _PydanticState(AgentStatePydantic):
    user: str | None = None


def test_v2_agent_with_pydantic_state_survives_an_interrupt() -> None:
    def ask() -> str:
        """Ask the user."""
        return str(interrupt("name?"))

    model = _model(AIMessage("", id="a1", tool_calls=[_call("ask")]), AIMessage("bye", id="a2"))
    agent = create_react_agent(model, [ask], state_schema=_PydanticState, checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "p"}}
    agent.invoke({"messages": [HumanMessage("hi")]}, config)
    out = agent.invoke(Command(resume="Ann"), config)
    assert [m.content for m in out["messages"]][-2:] == ["Ann", "bye"]


def test_input_messages_get_their_ids_in_place() -> None:
    inputs = [HumanMessage("hi?")]
    out = create_react_agent(_model(), []).invoke({"messages": inputs})
    assert inputs[0].id is not None and out["messages"][0] is inputs[0]
