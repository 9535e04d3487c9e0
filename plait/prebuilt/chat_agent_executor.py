"""``create_react_agent``: a model that calls tools in a loop until it answers, as a compiled graph.

The graph: ``[pre_model_hook] -> agent -> [post_model_hook] -> tools -> agent ... ->
[generate_structured_response]``. ``version="v2"`` (default) runs each tool call as
its own ``Send`` to ``tools``; ``"v1"`` runs all calls of a message in one ``tools`` task.
"""

from __future__ import annotations

import typing
import warnings
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, TypeVar, Union

from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from pydantic import BaseModel
from typing_extensions import NotRequired, TypedDict

from plait.graph.message import add_messages
from plait.graph.state import CompiledStateGraph
from plait.managed import RemainingSteps
from plait.prebuilt._agent_graph import build_graph
from plait.prebuilt._agent_model import chat_model, should_bind_tools, validate_chat_history
from plait.prebuilt.tool_node import ToolNode
from plait.warnings import LangGraphDeprecatedSinceV10

__all__ = [
    "AgentState",
    "AgentStatePydantic",
    "AgentStateWithStructuredResponse",
    "AgentStateWithStructuredResponsePydantic",
    "Prompt",
    "StateSchema",
    "StateSchemaType",
    "StructuredResponse",
    "StructuredResponseSchema",
    "create_react_agent",
    "create_tool_calling_executor",
]

StructuredResponse = Union[dict[str, Any], BaseModel]  # noqa: UP007 - runtime alias on 3.10
"""A structured answer: a dict or a pydantic model instance."""

StructuredResponseSchema = Union[dict[str, Any], type[BaseModel]]  # noqa: UP007 - runtime alias on 3.10
"""What ``response_format`` names: a JSON schema dict or a pydantic model class."""


class AgentState(TypedDict):
    """The state of a prebuilt agent: the conversation."""

    messages: Annotated[Sequence[BaseMessage], add_messages]
    """The messages, merged by ``add_messages``."""
    remaining_steps: NotRequired[RemainingSteps]
    """Steps left before the recursion limit (managed by the runtime)."""


class AgentStatePydantic(BaseModel):
    """:class:`AgentState` as a pydantic model."""

    messages: Annotated[Sequence[BaseMessage], add_messages]
    """The messages, merged by ``add_messages``."""
    remaining_steps: RemainingSteps = 25
    """Steps left before the recursion limit (managed by the runtime)."""


class AgentStateWithStructuredResponse(AgentState):
    """:class:`AgentState` plus the structured answer (``response_format``)."""

    structured_response: StructuredResponse
    """The answer, shaped by ``response_format``."""


class AgentStateWithStructuredResponsePydantic(AgentStatePydantic):
    """:class:`AgentStatePydantic` plus the structured answer (``response_format``)."""

    structured_response: StructuredResponse
    """The answer, shaped by ``response_format``."""


StateSchema = TypeVar("StateSchema", bound=Union[AgentState, AgentStatePydantic])  # noqa: UP007 - 3.10
"""A state schema type for agents."""

StateSchemaType = type[StateSchema]  # pyright: ignore[reportGeneralTypeIssues]  # LangGraph's alias
"""A class usable as ``state_schema``."""

Prompt = Union[  # noqa: UP007 - runtime alias on 3.10
    SystemMessage,
    str,
    Callable[[Any], LanguageModelInput],
    Runnable[Any, LanguageModelInput],
]
"""What ``prompt=`` may be: a system message (or its text), or a function / runnable of the state
returning the model's input."""

# LangGraph's private helper names, kept for code (and tests) that import them from here
_get_model = chat_model
_should_bind_tools = should_bind_tools
_validate_chat_history = validate_chat_history


def _check_schema(state_schema: object, response_format: object) -> None:
    """Raises: ValueError (the schema lacks ``messages``, or ``structured_response`` when needed)."""
    required = {
        "messages",
        "remaining_steps",
        *(["structured_response"] if response_format is not None else []),
    }
    if missing := required - set(typing.get_type_hints(state_schema)):
        raise ValueError(f"Missing required key(s) {missing} in state_schema")


def _check_options(version: str, deprecated: dict[str, Any]) -> Any:
    """Raises: ValueError (unknown version); TypeError (unknown keyword arguments)."""
    context_schema = deprecated.pop("config_schema", None)
    if context_schema is not None:
        warnings.warn(
            LangGraphDeprecatedSinceV10(
                "`config_schema` is deprecated and will be removed. Please use `context_schema` instead."
            ),
            stacklevel=3,
        )
    if deprecated:
        raise TypeError(f"create_react_agent() got unexpected keyword arguments: {deprecated}")
    if version not in ("v1", "v2"):
        raise ValueError(f"Invalid version {version}. Supported versions are 'v1' and 'v2'.")
    return context_schema


def create_react_agent(  # noqa: PLR0913 - LangGraph's signature
    model: Any,
    tools: Sequence[BaseTool | Callable[..., Any] | dict[str, Any]] | ToolNode,
    *,
    prompt: object = None,
    response_format: StructuredResponseSchema | tuple[str, StructuredResponseSchema] | None = None,
    pre_model_hook: object = None,
    post_model_hook: object = None,
    state_schema: Any = None,
    context_schema: type[Any] | None = None,
    checkpointer: object = None,
    store: object = None,
    interrupt_before: list[str] | None = None,
    interrupt_after: list[str] | None = None,
    debug: bool = False,
    version: Literal["v1", "v2"] = "v2",
    name: str | None = None,
    **deprecated_kwargs: Any,
) -> CompiledStateGraph[Any]:
    """Build an agent: the model answers or calls tools; tool results go back to it until it answers.

    Args:
        model: A chat model, a ``"provider:model"`` string, or ``fn(state, runtime)`` returning one
            (sync or async) to choose it per call.
        tools: Tools (or plain functions, or provider tool dicts), or a ready ``ToolNode``.
        prompt: A system text or ``SystemMessage``, a function of the state returning the model
            input, or a runnable.
        response_format: A schema for a final structured answer (``state["structured_response"]``),
            or ``(system_prompt, schema)``.
        pre_model_hook: A node run before each model call (may set ``llm_input_messages``).
        post_model_hook: A node run after each model call.
        state_schema: The state (needs ``messages``; default :class:`AgentState`).
        context_schema: The run context schema.
        checkpointer: Makes threads durable.
        store: The long-term store, given to tools and nodes.
        interrupt_before: Nodes to pause before.
        interrupt_after: Nodes to pause after.
        debug: Accepted for compatibility.
        version: ``"v2"`` (one ``Send`` per tool call) or ``"v1"`` (one tools task per message).
        name: The graph's name; also set on the model's messages.
        **deprecated_kwargs: ``config_schema`` (the old name of ``context_schema``).

    Raises:
        ValueError: an unknown ``version``, a ``state_schema`` without the needed keys, tools bound
            to the model that differ from ``tools``.
        TypeError: an unknown keyword argument.
        ImportError: a model string whose provider package is not installed.
    """
    context_schema = _check_options(version, deprecated_kwargs) or context_schema
    if state_schema is not None:
        _check_schema(state_schema, response_format)
    else:
        state_schema = AgentStateWithStructuredResponse if response_format is not None else AgentState
    graph = build_graph(
        model,
        tools,
        state_schema=state_schema,
        context_schema=context_schema,
        prompt=prompt,
        response_format=response_format,
        hooks=(pre_model_hook, post_model_hook),
        version=version,
        name=name,
        model_node="agent",
    )
    return graph.compile(
        checkpointer=checkpointer,
        store=store,
        interrupt_before=interrupt_before,
        interrupt_after=interrupt_after,
        debug=debug,
        name=name,
    )


create_tool_calling_executor = create_react_agent
"""The old name of :func:`create_react_agent`."""
