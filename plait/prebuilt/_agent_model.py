"""The model side of a prebuilt agent: model strings, the prompt, bound tools, history checks."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from collections.abc import Callable, Sequence
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableBinding, RunnableLambda, RunnableSequence
from langchain_core.tools import BaseTool

from plait._context import running_task
from plait.errors import ErrorCode, create_error_message
from plait.runtime import Runtime

__all__ = [
    "PROMPT_RUNNABLE_NAME",
    "chat_model",
    "init_model",
    "prompt_runnable",
    "should_bind_tools",
    "state_value",
    "validate_chat_history",
]

PROMPT_RUNNABLE_NAME = "Prompt"
"""The run name of the step that turns the state into the model's input."""

_EXTRA_HINT = (
    "pip install 'plait[openai]' for \"openai:<model>\" strings, or pip install langchain "
    '(with the provider\'s package) for any "<provider>:<model>" string'
)


def state_value(state: Any, key: str, default: Any = None) -> Any:
    """``state[key]`` for dict states, ``state.key`` for objects."""
    if isinstance(state, dict):
        return cast("dict[str, object]", state).get(key, default)
    return getattr(state, key, default)


def init_model(spec: str) -> BaseChatModel:
    """A chat model from a ``"provider:model"`` string.

    Uses langchain's ``init_chat_model`` when langchain is installed; without it,
    ``"openai:<model>"`` still works through langchain-openai (the ``openai`` extra),
    configured from the usual ``OPENAI_*`` environment variables.

    Raises:
        ImportError: neither langchain nor (for ``openai:``) langchain-openai is installed.
    """
    if importlib.util.find_spec("langchain") is not None:
        module = importlib.import_module("langchain.chat_models")
        return cast("BaseChatModel", module.init_chat_model(spec))
    provider, _, name = spec.partition(":")
    if provider == "openai" and name:
        try:
            module = importlib.import_module("langchain_openai")
        except ImportError as exc:
            raise ImportError(f"model {spec!r} needs langchain-openai: {_EXTRA_HINT}") from exc
        return cast("BaseChatModel", module.ChatOpenAI(model=name))
    raise ImportError(f"model {spec!r} needs langchain's init_chat_model: {_EXTRA_HINT}")


def _with_messages(head: list[BaseMessage]) -> Callable[[Any], list[Any]]:
    def build(state: Any) -> list[Any]:
        return [*head, *state_value(state, "messages")]

    return build


_EXTRAS = ("config", "store", "runtime", "writer")


def _extras(fn: Callable[..., object]) -> dict[str, object]:
    try:
        wanted = [n for n in inspect.signature(fn).parameters if n in _EXTRAS]
    except (TypeError, ValueError):
        return {}
    if not wanted:
        return {}
    task = running_task()
    store, writer, context = (task.store, task.writer, task.context) if task else (None, None, None)
    values = {
        "config": task.config if task else {},
        "store": store,
        "writer": writer,
        "runtime": Runtime(context=context, store=store),
    }
    return {name: values[name] for name in wanted}


def _with_extras(fn: Callable[..., object]) -> Callable[[object], object]:
    """``fn(state)``, also given the ``store``/``runtime``/``writer`` keywords it declares."""
    if inspect.iscoroutinefunction(fn):

        async def acall(state: Any) -> Any:
            return await fn(state, **_extras(fn))

        return acall

    def call(state: Any) -> Any:
        return fn(state, **_extras(fn))

    return call


def prompt_runnable(prompt: object) -> Runnable[object, object]:
    """The step before the model: ``None`` (the messages), a system text or message, a function
    of the state (sync or async) or a runnable.

    Raises:
        ValueError: ``prompt`` is of another kind.
    """
    if prompt is None:
        return RunnableLambda(_with_messages([]), name=PROMPT_RUNNABLE_NAME)
    if isinstance(prompt, str):
        return RunnableLambda(_with_messages([SystemMessage(content=prompt)]), name=PROMPT_RUNNABLE_NAME)
    if isinstance(prompt, SystemMessage):
        return RunnableLambda(_with_messages([prompt]), name=PROMPT_RUNNABLE_NAME)
    if isinstance(prompt, Runnable):
        return cast("Runnable[Any, Any]", prompt)  # type: ignore[redundant-cast]  # pyright needs it (isinstance leaves the type arguments unknown)
    if callable(prompt):
        return RunnableLambda(_with_extras(cast("Callable[..., Any]", prompt)), name=PROMPT_RUNNABLE_NAME)
    raise ValueError(f"Got unexpected type for `prompt`: {type(prompt)}")


def _first_model_step(model: object) -> object:
    if isinstance(model, RunnableSequence):
        steps: list[Any] = list(cast("RunnableSequence[Any, Any]", model).steps)  # type: ignore[redundant-cast]  # pyright needs it (isinstance leaves the type arguments unknown)
        found: Any = next((s for s in steps if isinstance(s, (RunnableBinding, BaseChatModel))), model)  # pyright: ignore[reportUnknownArgumentType,reportUnknownVariableType]  # isinstance leaves type arguments unknown
        return found
    return model


def _bound_name(spec: dict[str, Any]) -> str | None:
    if spec.get("type") == "function":
        return cast("str", spec["function"]["name"])
    return cast("str | None", spec.get("name")) or None


def should_bind_tools(model: Any, tools: Sequence[BaseTool], num_builtin: int = 0) -> bool:
    """Whether ``model`` still needs ``bind_tools`` (it has no tools bound yet).

    Raises:
        ValueError: the model has other tools bound than ``tools``.
    """
    model = _first_model_step(model)
    if not isinstance(model, RunnableBinding):
        return True
    bound_kwargs = cast("RunnableBinding[Any, Any]", model).kwargs  # type: ignore[redundant-cast]  # pyright needs it (isinstance leaves the type arguments unknown)
    if "tools" not in bound_kwargs:
        return True
    bound = cast("list[dict[str, object]]", bound_kwargs["tools"])
    if len(tools) != len(bound) - num_builtin:
        raise ValueError(
            "Number of tools in the model.bind_tools() and tools passed to create_react_agent must match"
            f" Got {len(tools)} tools, expected {len(bound) - num_builtin}"
        )
    names = {name for spec in bound if (name := _bound_name(spec))}
    if missing := {t.name for t in tools} - names:
        raise ValueError(f"Missing tools '{missing}' in the model.bind_tools()")
    return False


def chat_model(model: object) -> BaseChatModel:
    """The chat model inside ``model`` (a binding or a ``prompt | model`` sequence).

    Raises:
        TypeError: there is none.
    """
    model = _first_model_step(model)
    if isinstance(model, RunnableBinding):
        model = cast("RunnableBinding[Any, Any]", model).bound  # type: ignore[redundant-cast]  # pyright needs it (isinstance leaves the type arguments unknown)
    if not isinstance(model, BaseChatModel):
        raise TypeError(
            "Expected `model` to be a ChatModel or RunnableBinding (e.g. model.bind_tools(...)), "
            f"got {type(model)}"
        )
    return model


def validate_chat_history(messages: Sequence[BaseMessage]) -> None:
    """Check that every tool call in ``messages`` has its ``ToolMessage``.

    Raises:
        ValueError: some tool calls are unanswered (the first few are named).
    """
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    missing = [
        call
        for m in messages
        if isinstance(m, AIMessage)
        for call in m.tool_calls
        if call["id"] not in answered
    ]
    if not missing:
        return
    raise ValueError(
        create_error_message(
            message="Found AIMessages with tool_calls that do not have a corresponding ToolMessage. "
            f"Here are the first few of those tool calls: {missing[:3]}.\n\n"
            "Every tool call (LLM requesting to call a tool) in the message history MUST have a "
            "corresponding ToolMessage (result of a tool invocation to return to the LLM) - this is "
            "required by most LLM providers.",
            error_code=ErrorCode.INVALID_CHAT_HISTORY,
        )
    )
