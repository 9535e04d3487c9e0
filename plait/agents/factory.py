"""``create_agent``: LangChain's agent constructor (``langchain.agents.create_agent``) on plait.

The graph is ``[pre_model_hook] -> model -> tools -> model ...``: the model answers, or
calls tools whose results go back to it, until it answers without tool calls. With what only
LangChain's constructor has (``middleware``, ``cache``, ``transformers``, a structured-output
strategy), the agent *is* LangChain's ``create_agent``, run on plait through the
``PLAIT_AS_LANGGRAPH`` switch (docs/langgraph.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, cast

from langchain_core.messages import AnyMessage, SystemMessage
from langchain_core.tools import BaseTool
from typing_extensions import NotRequired, TypedDict

from plait._alias import install
from plait.graph.message import add_messages
from plait.graph.state import CompiledStateGraph
from plait.prebuilt._agent_graph import build_graph

__all__ = ["AgentState", "create_agent"]


class AgentState(TypedDict):
    """The state of an agent built by :func:`create_agent`."""

    messages: Annotated[list[AnyMessage], add_messages]
    """The conversation, merged by ``add_messages``."""
    structured_response: NotRequired[object]
    """The structured answer, with ``response_format``."""


_STRATEGIES = ("ToolStrategy", "ProviderStrategy", "AutoStrategy")


def _langchain_only(options: Mapping[str, object]) -> str | None:
    """The first option only LangChain's ``create_agent`` implements, if one is given."""
    for name in ("middleware", "cache", "transformers"):
        if options[name]:
            return name
    given: object = options["response_format"]
    kind = type(given)
    if kind.__name__ in _STRATEGIES and kind.__module__.startswith("langchain."):
        return "response_format"
    return None


def _langchain_agent(option: str, options: dict[str, Any]) -> CompiledStateGraph[Any]:
    """LangChain's own ``create_agent`` with ``options``, on plait.

    Raises:
        ImportError: langchain is not installed, or it was imported on the real langgraph before.
    """
    install()  # from here on langchain's `import langgraph...` gives plait
    try:
        from langchain.agents import create_agent as langchain_create_agent  # pyright: ignore[reportUnknownVariableType]
    except ImportError as exc:
        raise ImportError(
            f"create_agent({option}=...) is LangChain's create_agent running on plait: pip install 'langchain>=1'"
        ) from exc
    agent: Any = langchain_create_agent(**options)  # (typed on the real langgraph; it is plait's graph here)
    return cast("CompiledStateGraph[Any]", agent)


def create_agent(  # noqa: PLR0913 - LangChain's signature
    model: object,
    tools: Sequence[BaseTool | Callable[..., object] | dict[str, Any]] | None = None,
    *,
    system_prompt: str | SystemMessage | None = None,
    middleware: Sequence[object] = (),
    response_format: object = None,
    state_schema: object = None,
    context_schema: type[object] | None = None,
    checkpointer: object = None,
    store: object = None,
    interrupt_before: list[str] | None = None,
    interrupt_after: list[str] | None = None,
    debug: bool = False,
    name: str | None = None,
    cache: object = None,
    transformers: Sequence[object] | None = None,
    pre_model_hook: object = None,
) -> CompiledStateGraph[Any]:
    """Build a tool-calling agent as a compiled graph (nodes ``model`` and ``tools``).

    Args:
        model: A chat model, or a ``"provider:model"`` string (langchain's ``init_chat_model``
            when langchain is installed; ``"openai:<model>"`` also works with just
            ``pip install 'plait[openai]'``).
        tools: Tools or plain functions (``None``: a model without tools).
        system_prompt: Put before the messages on every model call.
        middleware: LangChain's ``AgentMiddleware`` objects: the agent is then LangChain's (see above).
        response_format: A pydantic model or JSON schema: after the last answer the model is
            asked for a structured one, stored in ``state["structured_response"]``; a LangChain
            strategy (``ToolStrategy``…) makes the agent LangChain's.
        state_schema: The state (needs ``messages``; default :class:`AgentState`).
        context_schema: The run context schema.
        checkpointer: Makes threads durable (``thread_id`` in the config).
        store: The long-term store, given to tools and nodes.
        interrupt_before: Nodes to pause before.
        interrupt_after: Nodes to pause after.
        debug: Accepted for compatibility.
        name: The graph's name; also set on the model's messages.
        cache: LangChain's option (the agent is then LangChain's).
        transformers: LangChain's option (the agent is then LangChain's).
        pre_model_hook: plait's extension: a node run before each model call, e.g.
            :func:`plait.agents.memory_hook` to bound the context.

    Raises:
        NotImplementedError: ``pre_model_hook`` together with an option only LangChain's agent has.
        ImportError: a model string whose provider package is not installed; langchain missing (or
            imported on the real langgraph) for an option only LangChain's agent has.
        ValueError: a ``state_schema`` without ``messages``.
    """
    options: dict[str, Any] = {
        "model": model, "tools": tools, "system_prompt": system_prompt, "middleware": list(middleware),
        "response_format": response_format, "state_schema": state_schema, "context_schema": context_schema,
        "checkpointer": checkpointer, "store": store, "interrupt_before": interrupt_before,
        "interrupt_after": interrupt_after, "debug": debug, "name": name, "cache": cache,
        "transformers": transformers,
    }  # fmt: skip
    option = _langchain_only(options)
    if option is not None:
        if pre_model_hook is not None:
            raise NotImplementedError(
                f"create_agent(pre_model_hook=...) with {option}=...: LangChain's agent has no pre_model_hook; "
                "use a before_model middleware instead"
            )
        return _langchain_agent(option, options)
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
