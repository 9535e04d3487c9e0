"""The graph behind ``create_react_agent`` and ``create_agent``: nodes, edges, the bound model."""

from __future__ import annotations

import typing
from collections.abc import Sequence
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from pydantic import BaseModel, create_model
from typing_extensions import TypedDict

from plait._internal._runnable import RunnableCallable
from plait.checkpoint._allow import allow, classes_in
from plait.constants import END
from plait.graph import StateGraph
from plait.prebuilt._agent_model import init_model, prompt_runnable, should_bind_tools
from plait.prebuilt._react import AgentParts
from plait.prebuilt.tool_node import ToolNode

__all__ = ["build_graph"]


def _tools(tools: Sequence[Any] | ToolNode) -> tuple[ToolNode, list[BaseTool], list[dict[str, Any]]]:
    if isinstance(tools, ToolNode):
        return tools, list(tools.tools_by_name.values()), []
    builtin = [cast("dict[str, object]", t) for t in tools if isinstance(t, dict)]
    node = ToolNode([t for t in tools if not isinstance(t, dict)])
    return node, list(node.tools_by_name.values()), builtin


def _static_model(model: Any, prompt: Any, tools: list[BaseTool], builtin: list[dict[str, Any]]) -> Any:
    """The prompt joined to the model, tools bound; a function choosing the model is left as it is."""
    if not isinstance(model, (str, Runnable)) and callable(model):
        return model
    if isinstance(model, str):
        model = init_model(model)
    if should_bind_tools(model, tools, num_builtin=len(builtin)) and (tools or builtin):
        model = cast("BaseChatModel", model).bind_tools([*tools, *builtin])
    joined: Any = prompt_runnable(prompt) | model  # pyright: ignore[reportUnknownVariableType]  # isinstance leaves type arguments unknown
    return joined


def _input_schema(state_schema: Any, has_pre_hook: bool) -> Any:
    if not has_pre_hook:
        return state_schema
    if issubclass(state_schema, BaseModel):
        return create_model(
            "CallModelInputSchema", llm_input_messages=(list[AnyMessage], ...), __base__=state_schema
        )
    fields: dict[str, Any] = dict(typing.get_type_hints(state_schema, include_extras=True))
    fields["llm_input_messages"] = list[AnyMessage]
    return TypedDict("CallModelInputSchema", fields)  # type: ignore[operator]  # pyright: ignore[reportGeneralTypeIssues]  # a TypedDict built from the user's schema


def _wire(
    graph: StateGraph[Any],
    parts: AgentParts,
    hooks: tuple[object, object],
    tool_node: ToolNode | None,
    agent_input: Any,
) -> None:
    pre, post = hooks
    agent = parts.model_node
    # a traced Runnable as in LangGraph: its run (named after the function) goes inside the node's
    node = RunnableCallable(parts.call_model, parts.acall_model, name="call_model")
    graph.add_node(agent, node, input_schema=agent_input)
    if tool_node is not None:
        graph.add_node("tools", tool_node)
    if pre is not None:
        graph.add_node("pre_model_hook", pre)
        graph.add_edge("pre_model_hook", agent)
    graph.set_entry_point(parts.entry)
    if post is not None:
        graph.add_node("post_model_hook", post)
        graph.add_edge(agent, "post_model_hook")
    if parts.response_format is not None:
        node = RunnableCallable(parts.structured, parts.astructured, name="generate_structured_response")
        graph.add_node("generate_structured_response", node)
    end = "generate_structured_response" if parts.response_format is not None else END
    if tool_node is None:
        graph.add_edge("post_model_hook" if post is not None else agent, end)
        return
    if post is not None:
        graph.add_conditional_edges("post_model_hook", parts.after_post_hook, [parts.entry, "tools", end])
    else:
        graph.add_conditional_edges(agent, parts.should_continue, ["tools", end])
    if parts.return_direct:
        graph.add_conditional_edges("tools", parts.after_tools, [parts.entry, END])
    else:
        graph.add_edge("tools", parts.entry)


def build_graph(  # noqa: PLR0913 - every option of the agent
    model: Any,
    tools: Sequence[Any] | ToolNode,
    *,
    state_schema: Any,
    context_schema: Any,
    prompt: Any,
    response_format: Any,
    hooks: tuple[Any, Any],
    version: str,
    name: str | None,
    model_node: str,
) -> StateGraph[Any]:
    """The agent's graph, not compiled: ``[pre_model_hook] -> <model_node> -> [post_model_hook] -> tools``."""
    tool_node, tool_list, builtin = _tools(tools)
    pre, post = hooks
    if version == "v2" and isinstance(state_schema, type) and issubclass(state_schema, BaseModel):
        allow(state_schema)  # each tool call's Send carries the state object: checkpoints must store it
    schema: object = (
        cast("tuple[str, object]", response_format)[1]
        if isinstance(response_format, tuple)
        else response_format
    )
    classes = classes_in(schema)  # the structured answer is state: checkpoints must store it
    if classes:  # (allow() makes every serializer forget the classes it checked)
        allow(*classes)
    parts = AgentParts(
        model=_static_model(model, prompt, tool_list, builtin),
        prompt=prompt,
        name=name,
        return_direct=frozenset(t.name for t in tool_list if t.return_direct),
        response_format=response_format,
        has_pre_hook=pre is not None,
        has_post_hook=post is not None,
        is_pydantic=isinstance(state_schema, type) and issubclass(state_schema, BaseModel),
        version=version,
        entry="pre_model_hook" if pre is not None else model_node,
        model_node=model_node,
    )
    graph: StateGraph[Any] = StateGraph(state_schema, context_schema=context_schema)  # pyright: ignore[reportUnknownArgumentType]  # isinstance leaves type arguments unknown
    agent_input: Any = _input_schema(state_schema, pre is not None)
    _wire(graph, parts, hooks, tool_node if tool_list else None, agent_input)
    return graph
