"""The nodes and routers of ``create_react_agent``: call the model, route to tools, structure the answer."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, cast

from langchain_core.callbacks.base import BaseCallbackManager
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolCall, ToolMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config

from plait._context import running_task
from plait._internal._io_primitives import acall_maybe_async, call_maybe_async
from plait.constants import END
from plait.prebuilt._agent_model import chat_model, prompt_runnable, state_value, validate_chat_history
from plait.runtime import Runtime
from plait.types import Send

__all__ = ["AgentParts", "model_config"]


def model_config(config: Any) -> Any:
    """The config to call a model with: the node's when it carries the node run's callbacks (a traced
    run: the model's run goes in the node's, as in LangGraph); else, inside a plait node, the task's
    LangChain config (callbacks for ``stream_mode="messages"``, the task's metadata); else the node's."""
    if config and isinstance(config.get("callbacks"), BaseCallbackManager):
        return config
    lc = getattr(running_task(), "lc_config", None)
    if lc is not None:
        return lc
    return None if var_child_runnable_config.get() is not None else config


def _sync_call_refused() -> RuntimeError:
    return RuntimeError(
        "Async model callable provided but agent invoked synchronously. Use agent.ainvoke() or "
        "agent.astream(), or provide a sync model callable."
    )


def _runtime() -> Runtime[Any]:
    task = running_task()
    if task is None:
        return Runtime()
    return Runtime(context=task.context, store=task.store, stream_writer=task.writer)


@dataclass
class AgentParts:
    """Everything the agent's nodes need, fixed when the agent is built."""

    model: Any
    """A runnable (prompt and model already joined), or a function choosing the model per call."""
    prompt: Any
    name: str | None
    return_direct: frozenset[str]
    response_format: Any
    has_pre_hook: bool
    has_post_hook: bool
    is_pydantic: bool
    version: str
    entry: str = "agent"
    model_node: str = "agent"
    dynamic: bool = field(init=False)
    dynamic_async: bool = field(init=False)

    def __post_init__(self) -> None:
        model: Any = self.model
        self.dynamic = not isinstance(model, (str, Runnable)) and callable(model)  # pyright: ignore[reportUnknownArgumentType]  # any object may be a model function
        self.dynamic_async = self.dynamic and inspect.iscoroutinefunction(self.model)

    # -- the model ----------------------------------------------------------------------------

    # >>> async source
    async def _achoose(self, state: object) -> Any:
        """The model the model function picks for this call (awaited if the function is async; the
        sync form refuses an async one)."""
        return await acall_maybe_async(self.model, self.dynamic_async, _sync_call_refused, state, _runtime())

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def _choose(self, state: object) -> Any:
        """The model the model function picks for this call (awaited if the function is async; the
        sync form refuses an async one)."""
        return call_maybe_async(self.model, self.dynamic_async, _sync_call_refused, state, _runtime())

    # <<< generated sync

    def _model_input(self, state: Any) -> Any:
        """The state the prompt sees: ``llm_input_messages`` (from a pre-model hook) or ``messages``.

        Raises:
            ValueError: no messages, or a tool call without its result.
        """
        messages = (self.has_pre_hook and state_value(state, "llm_input_messages")) or state_value(
            state, "messages"
        )
        if messages is None:
            keys = "'llm_input_messages' or 'messages' key" if self.has_pre_hook else "'messages' key"
            raise ValueError(f"Expected input to call_model to have {keys}, but got {state}")
        validate_chat_history(messages)
        if self.is_pydantic:
            return state.model_copy(update={"messages": messages})
        return {**cast("dict[str, Any]", state), "messages": messages}

    def _answer(self, state: object, response: Any) -> dict[str, Any]:
        response.name = self.name
        if self._needs_more_steps(state, response):
            return {
                "messages": [
                    AIMessage(id=response.id, content="Sorry, need more steps to process this request.")
                ]
            }
        return {"messages": [response]}

    def _needs_more_steps(self, state: object, response: BaseMessage) -> bool:
        remaining = state_value(state, "remaining_steps")
        if remaining is None or not isinstance(response, AIMessage):
            return False
        calls = response.tool_calls
        if remaining < 1 and calls and all(c["name"] in self.return_direct for c in calls):
            return True
        return remaining < 2 and bool(calls)

    # -- structured response --------------------------------------------------------------------

    def _structured_input(self, state: object) -> tuple[list[Any], Any]:
        messages = list(state_value(state, "messages"))
        schema = self.response_format
        if isinstance(schema, tuple):
            system, schema = cast("tuple[str, Any]", schema)
            messages = [SystemMessage(content=system), *messages]
        return messages, schema

    # >>> async source
    async def _aresolve(self, state: object) -> Runnable[Any, Any]:
        if self.dynamic:
            return cast("Runnable[Any, Any]", prompt_runnable(self.prompt) | await self._achoose(state))
        return cast("Runnable[Any, Any]", self.model)

    async def acall_model(self, state: object, config: RunnableConfig) -> dict[str, Any]:
        """The ``agent`` node."""
        model = await self._aresolve(state)
        return self._answer(state, await model.ainvoke(self._model_input(state), model_config(config)))

    async def astructured(self, state: object, config: RunnableConfig) -> dict[str, Any]:
        """The ``generate_structured_response`` node."""
        messages, schema = self._structured_input(state)
        model = chat_model(await self._aresolve(state)).with_structured_output(schema)
        return {"structured_response": await model.ainvoke(messages, model_config(config))}

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def _resolve(self, state: object) -> Runnable[Any, Any]:
        if self.dynamic:
            return cast("Runnable[Any, Any]", prompt_runnable(self.prompt) | self._choose(state))
        return cast("Runnable[Any, Any]", self.model)

    def call_model(self, state: object, config: RunnableConfig) -> dict[str, Any]:
        """The ``agent`` node."""
        model = self._resolve(state)
        return self._answer(state, model.invoke(self._model_input(state), model_config(config)))

    def structured(self, state: object, config: RunnableConfig) -> dict[str, Any]:
        """The ``generate_structured_response`` node."""
        messages, schema = self._structured_input(state)
        model = chat_model(self._resolve(state)).with_structured_output(schema)
        return {"structured_response": model.invoke(messages, model_config(config))}

    # <<< generated sync

    # -- routing ------------------------------------------------------------------------------

    def _after_answer(self) -> str:
        return "generate_structured_response" if self.response_format is not None else END

    def _sends(self, state: object, calls: list[ToolCall]) -> list[Send]:
        return [
            Send("tools", {"__type": "tool_call_with_context", "tool_call": call, "state": state})
            for call in calls
        ]

    def should_continue(self, state: object) -> str | list[Send]:
        """After ``agent``: tools (all calls at once in v1, one ``Send`` per call in v2), hook or end."""
        last = state_value(state, "messages")[-1]
        if not isinstance(last, AIMessage) or not last.tool_calls:
            return "post_model_hook" if self.has_post_hook else self._after_answer()
        if self.version == "v1":
            return "tools"
        if self.has_post_hook:
            return "post_model_hook"
        return self._sends(state, list(last.tool_calls))

    def after_post_hook(self, state: object) -> str | list[Send]:
        """After ``post_model_hook``: the calls still unanswered, back to the model, or the end."""
        messages = state_value(state, "messages")
        answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
        last_ai = next(m for m in reversed(messages) if isinstance(m, AIMessage))
        pending = [c for c in last_ai.tool_calls if c["id"] not in answered]
        if pending:
            return self._sends(state, pending)
        if isinstance(messages[-1], ToolMessage):
            return self.entry
        return self._after_answer()

    def after_tools(self, state: object) -> str:
        """After ``tools``: end when a ``return_direct`` tool answered, else back to the model."""
        message: object = None
        for message in reversed(state_value(state, "messages")):
            if not isinstance(message, ToolMessage):
                break
            if message.name in self.return_direct:
                return END
        if isinstance(message, AIMessage) and any(
            c["name"] in self.return_direct for c in message.tool_calls
        ):
            return END
        return self.entry
