"""``create_agent``: LangChain's agent constructor (``langchain.agents.create_agent``) on plait.

The graph is ``[pre_model_hook] -> model -> tools -> model ...``: the model answers, or
calls tools whose results go back to it, until it answers without tool calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any

from langchain_core.messages import AnyMessage, SystemMessage
from langchain_core.tools import BaseTool
from typing_extensions import NotRequired, TypedDict

from plait.graph.message import add_messages
from plait.graph.state import CompiledStateGraph
from plait.prebuilt._agent_graph import build_graph

__all__ = ["AgentState", "create_agent"]


class AgentState(TypedDict):
    """The state of an agent built by :func:`create_agent`."""

    messages: Annotated[list[AnyMessage], add_messages]
    """The conversation, merged by ``add_messages``."""
    structured_response: NotRequired[Any]
    """The structured answer, with ``response_format``."""


def _refuse(**options: Any) -> None:
    """Raises: NotImplementedError naming the first option plait does not implement."""
    for name, value in options.items():
        if value:
            raise NotImplementedError(
                f"create_agent({name}=...) is not implemented by plait; build the behaviour into the graph "
                "(pre_model_hook=, tools, or your own StateGraph) instead"
            )


def create_agent(  # noqa: PLR0913 - LangChain's signature
    model: Any,
    tools: Sequence[BaseTool | Callable[..., Any] | dict[str, Any]] | None = None,
    *,
    system_prompt: str | SystemMessage | None = None,
    middleware: Sequence[Any] = (),
    response_format: Any = None,
    state_schema: Any = None,
    context_schema: type[Any] | None = None,
    checkpointer: Any = None,
    store: Any = None,
    interrupt_before: list[str] | None = None,
    interrupt_after: list[str] | None = None,
    debug: bool = False,
    name: str | None = None,
    cache: Any = None,
    transformers: Sequence[Any] | None = None,
    pre_model_hook: Any = None,
) -> CompiledStateGraph[Any]:
    """Build a tool-calling agent as a compiled graph (nodes ``model`` and ``tools``).

    Args:
        model: A chat model, or a ``"provider:model"`` string (langchain's ``init_chat_model``
            when langchain is installed; ``"openai:<model>"`` also works with just
            ``pip install 'plait[openai]'``).
        tools: Tools or plain functions (``None``: a model without tools).
        system_prompt: Put before the messages on every model call.
        middleware: Not implemented (must be empty).
        response_format: A pydantic model or JSON schema: after the last answer the model is
            asked for a structured one, stored in ``state["structured_response"]``.
        state_schema: The state (needs ``messages``; default :class:`AgentState`).
        context_schema: The run context schema.
        checkpointer: Makes threads durable (``thread_id`` in the config).
        store: The long-term store, given to tools and nodes.
        interrupt_before: Nodes to pause before.
        interrupt_after: Nodes to pause after.
        debug: Accepted for compatibility.
        name: The graph's name; also set on the model's messages.
        cache: Not implemented (must be ``None``).
        transformers: Not implemented (must be ``None``).
        pre_model_hook: plait's extension: a node run before each model call, e.g.
            :func:`plait.agents.memory_hook` to bound the context.

    Raises:
        NotImplementedError: ``middleware``, ``cache`` or ``transformers`` given.
        ImportError: a model string whose provider package is not installed.
        ValueError: a ``state_schema`` without ``messages``.
    """
    _refuse(middleware=list(middleware), cache=cache is not None, transformers=transformers is not None)
    graph = build_graph(
        model,
        list(tools or []),
        state_schema=state_schema or AgentState,
        context_schema=context_schema,
        prompt=system_prompt,
        response_format=response_format,
        hooks=(pre_model_hook, None),
        version="v2",
        name=name,
        model_node="model",
    )
    return graph.compile(
        checkpointer=checkpointer,
        store=store,
        interrupt_before=interrupt_before,
        interrupt_after=interrupt_after,
        debug=debug,
        name=name,
    )
