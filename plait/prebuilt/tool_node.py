"""``ToolNode``: run the tool calls of the last AI message, in parallel, answering each in call order.

``tools_condition`` routes to it. Tools may ask for the graph state
(:class:`InjectedState`), the store (:class:`InjectedStore`), the tool call id
(langchain-core's ``InjectedToolCallId``) or everything at once
(:class:`ToolRuntime`); none of these appear in the schema the model sees.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Literal, TypedDict, cast

from langchain_core.messages import AIMessage, AnyMessage, ToolCall, ToolMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import ensure_config, get_config_list, get_executor_for_config
from langchain_core.tools import BaseTool
from langchain_core.tools import tool as create_tool
from langchain_core.tools.base import TOOL_MESSAGE_BLOCK_TYPES
from pydantic import ValidationError

from plait._context import running_task
from plait._internal._io_primitives import arun_all, run_all
from plait.errors import GraphBubbleUp, is_invalid_resume
from plait.prebuilt._graph_state import execution_info, graph_state
from plait.prebuilt._injection import (
    InjectedArgs,
    InjectedState,
    InjectedStore,
    ToolRuntime,
    find_injected,
    inject,
)
from plait.prebuilt._tool_errors import (
    TOOL_CALL_ERROR_TEMPLATE,
    TOOL_EXECUTION_ERROR_TEMPLATE,
    TOOL_INVOCATION_ERROR_TEMPLATE,
    ErrorHandling,
    ToolInvocationError,
    default_handle_tool_errors,
    error_content,
    filter_validation_errors,
    handled_types,
)
from plait.prebuilt._tool_output import (
    InputKind,
    Output,
    combine,
    msg_content_output,
    normalize,
)
from plait.runtime import Runtime

__all__ = [
    "INVALID_TOOL_NAME_ERROR_TEMPLATE",
    "TOOL_CALL_ERROR_TEMPLATE",
    "TOOL_EXECUTION_ERROR_TEMPLATE",
    "TOOL_INVOCATION_ERROR_TEMPLATE",
    "TOOL_MESSAGE_BLOCK_TYPES",
    "AsyncToolCallWrapper",
    "InjectedState",
    "InjectedStore",
    "ToolCallRequest",
    "ToolCallWithContext",
    "ToolCallWrapper",
    "ToolInvocationError",
    "ToolNode",
    "ToolRuntime",
    "msg_content_output",
    "tools_condition",
]

INVALID_TOOL_NAME_ERROR_TEMPLATE = (
    "Error: {requested_tool} is not a valid tool, try one of [{available_tools}]."
)
"""The answer to a call that names no tool of the node."""


RUNTIME_CONFIG_KEY = "__pregel_runtime"
"""The ``configurable`` key under which a caller may hand a ``ToolNode`` its ``Runtime``."""

# LangGraph's private helper name, kept for code (and tests) that import it from here
_infer_handled_types = handled_types

_BUBBLE_UP = GraphBubbleUp  # never turned into error messages


def _runtime_source(config: RunnableConfig) -> Runtime[object]:
    """Where the tools' context, store and writer come from: the running plait node, else a
    ``Runtime`` passed in ``config["configurable"]["__pregel_runtime"]`` (LangGraph's key, which
    lets a ``ToolNode`` called on its own receive them), else nothing."""
    task = running_task()
    if task is not None:
        return Runtime(
            context=task.context, store=task.store, stream_writer=task.writer, execution_info=execution_info()
        )
    configurable: dict[str, Any] = config.get("configurable") or {}
    given = configurable.get(RUNTIME_CONFIG_KEY)
    if given is None:
        return Runtime()
    return Runtime(
        context=getattr(given, "context", None),
        store=getattr(given, "store", None),
        stream_writer=getattr(given, "stream_writer", None) or _drop,
        execution_info=getattr(given, "execution_info", None),
        server_info=getattr(given, "server_info", None),
    )


def _drop(_: object) -> None:
    return None


@dataclass
class ToolCallRequest:
    """One tool call as a ``wrap_tool_call`` interceptor sees it.

    Attributes:
        tool_call: The call (name, args, id).
        tool: The tool to run, or ``None`` when the node has no tool of that name.
        state: The graph state.
        runtime: The :class:`ToolRuntime` the tool would receive.
    """

    tool_call: ToolCall
    tool: BaseTool | None
    state: Any
    runtime: ToolRuntime[Any, Any]

    def __setattr__(self, name: str, value: object) -> None:
        if name in self.__dataclass_fields__ and hasattr(self, name):
            warnings.warn(
                f"Setting attribute '{name}' on ToolCallRequest is deprecated. "
                "Use the override() method instead to create a new instance with modified values.",
                DeprecationWarning,
                stacklevel=2,
            )
        object.__setattr__(self, name, value)

    def override(self, **overrides: Any) -> ToolCallRequest:
        """A copy with ``tool_call``, ``tool`` or ``state`` replaced (``state`` also in ``runtime``)."""
        request = replace(self, **overrides)
        if "state" in overrides and isinstance(request.runtime, ToolRuntime):  # pyright: ignore[reportUnnecessaryIsInstance]  # tests pass stand-ins
            request = replace(request, runtime=replace(request.runtime, state=request.state))
        return request


ToolCallWrapper = Callable[[ToolCallRequest, Callable[[ToolCallRequest], Any]], Any]
"""``wrap_tool_call(request, execute)``: may change the request, retry, or answer without running."""

AsyncToolCallWrapper = Callable[
    [ToolCallRequest, Callable[[ToolCallRequest], Awaitable[Any]]], Awaitable[Any]
]
"""The async form of :data:`ToolCallWrapper`."""


class ToolCallWithContext(TypedDict):
    """A single tool call sent to a ``ToolNode`` with ``Send``, carrying the state it was made in."""

    __type: Literal["tool_call_with_context"]
    tool_call: ToolCall
    state: Any


class ToolNode(Runnable[Any, Any]):
    """A graph node that runs the tool calls of the last ``AIMessage``.

    Input: a state with a ``messages`` key (or ``messages_key``), a list of messages,
    or a list of tool calls. Output: ``{"messages": [ToolMessage, ...]}`` (a list for
    list input), in call order; with tools returning ``Command``, a list of commands
    and updates.

    Args:
        tools: Tools, or plain functions (turned into tools).
        name: The node name.
        tags: Tags for callbacks.
        handle_tool_errors: Which errors become ``ToolMessage(status="error")``: ``True``
            (all, default text), a text, a function of the error (catches the types its first
            parameter is annotated with), exception types, or ``False`` (raise). The default
            answers bad arguments from the model and raises other errors.
        messages_key: The state key holding the messages.
        wrap_tool_call: Intercepts each call: ``wrap(request, execute)``.
        awrap_tool_call: The async form (``wrap_tool_call`` is used when missing).
    """

    def __init__(  # noqa: PLR0913 - LangGraph's signature
        self,
        tools: Sequence[BaseTool | Callable[..., Any]],
        *,
        name: str = "tools",
        tags: list[str] | None = None,
        handle_tool_errors: ErrorHandling = default_handle_tool_errors,
        messages_key: str = "messages",
        wrap_tool_call: ToolCallWrapper | None = None,
        awrap_tool_call: AsyncToolCallWrapper | None = None,
    ) -> None:
        self.name = name
        self.tags = tags
        self._handle_tool_errors = handle_tool_errors
        self._messages_key = messages_key
        self._wrap_tool_call = wrap_tool_call
        self._awrap_tool_call = awrap_tool_call
        self._tools_by_name: dict[str, BaseTool] = {}
        self._runnable: dict[str, BaseTool] = {}
        self._injected: dict[str, InjectedArgs] = {}
        for item in tools:
            tool = item if isinstance(item, BaseTool) else create_tool(item)
            self._tools_by_name[tool.name] = tool
            self._runnable[tool.name] = tool
            self._injected[tool.name] = find_injected(tool)

    @property
    def tools_by_name(self) -> dict[str, BaseTool]:
        """The node's tools by name."""
        return self._tools_by_name

    # -- input ------------------------------------------------------------------------------------

    def _parse_input(self, input: Any) -> tuple[list[ToolCall], InputKind]:  # noqa: A002
        if isinstance(input, list):
            items = list(cast("Sequence[Any]", input))
            if items and isinstance(items[-1], dict) and items[-1].get("type") == "tool_call":  # pyright: ignore[reportUnknownMemberType]  # isinstance leaves type arguments unknown
                return cast("list[ToolCall]", items), "tool_calls"
            messages: Sequence[Any] = items
            kind: InputKind = "list"
        elif (
            isinstance(input, dict)
            and cast("dict[str, Any]", input).get("__type") == "tool_call_with_context"
        ):
            return [cast("ToolCallWithContext", input)["tool_call"]], "tool_calls"
        elif isinstance(input, dict):
            messages, kind = cast("dict[str, Any]", input).get(self._messages_key) or [], "dict"
        else:
            messages, kind = getattr(input, self._messages_key, None) or [], "dict"
        if not messages:
            raise ValueError("No message found in input")
        last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        if last is None:
            raise ValueError("No AIMessage found in input")
        return list(last.tool_calls), kind

    def _runtimes(
        self, input: Any, calls: list[ToolCall], config: RunnableConfig
    ) -> list[ToolRuntime[Any, Any]]:  # noqa: A002
        given: Any = input
        if (
            isinstance(input, dict)
            and cast("dict[str, Any]", input).get("__type") == "tool_call_with_context"
        ):
            state: Any = cast("dict[str, Any]", input)["state"]
        elif isinstance(input, list) and input and isinstance(cast("Sequence[Any]", input)[-1], dict):
            found = graph_state()  # bare tool calls: the state of the graph running this node
            state = {} if found is None else found
        else:
            state = given
        source = _runtime_source(config)
        tools = list(self._tools_by_name.values())
        return [
            ToolRuntime(
                state=state,
                context=source.context,
                config=cast("dict[str, Any]", cfg),
                stream_writer=source.stream_writer,
                tool_call_id=call["id"],
                store=source.store,
                tools=tools,
                execution_info=source.execution_info,
                server_info=source.server_info,
            )
            for call, cfg in zip(calls, get_config_list(config, len(calls)), strict=True)
        ]

    def _unknown(self, call: ToolCall) -> ToolMessage:
        content = INVALID_TOOL_NAME_ERROR_TEMPLATE.format(
            requested_tool=call["name"], available_tools=", ".join(self._tools_by_name)
        )
        return ToolMessage(content, name=call["name"], tool_call_id=call["id"], status="error")

    def _error_message(self, error: Exception, call: ToolCall) -> ToolMessage:
        return ToolMessage(
            content=error_content(error, self._handle_tool_errors),
            name=call["name"],
            tool_call_id=call["id"],
            status="error",
        )

    def _prepared(self, request: ToolCallRequest) -> tuple[BaseTool, dict[str, Any]]:
        """The tool to run and its call, injected arguments filled in.

        Raises:
            ValueError, KeyError: the graph lacks what the tool asks to be injected.
        """
        tool = cast("BaseTool", request.tool)
        own = self._tools_by_name.get(tool.name) is tool  # else a wrapper swapped the tool
        injected = self._injected[tool.name] if own else find_injected(tool)
        call = inject(request.tool_call, request.runtime, injected, self._messages_key)
        return (self._runnable[tool.name] if own else tool), {**call, "type": "tool_call"}

    def _invocation_error(self, call: ToolCall, error: ValidationError) -> ToolInvocationError:
        kept = filter_validation_errors(error, self._injected.get(call["name"]))
        return ToolInvocationError(call["name"], error, call["args"], kept)

    def _handle(self, error: Exception, call: ToolCall) -> ToolMessage:
        """Raises: ``error`` when ``handle_tool_errors`` does not cover it."""
        types = handled_types(self._handle_tool_errors)
        if not self._handle_tool_errors or not isinstance(error, types) or is_invalid_resume(error):
            raise error
        return self._error_message(error, call)

    # -- running the calls (the sync code is generated from the async code) ---------------------

    # >>> async source
    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: object) -> Any:  # noqa: A002
        """Run every tool call of the input: concurrently on this event loop (in threads when sync).

        Raises:
            ValueError: the input holds no ``AIMessage``.
        """
        calls, kind = self._parse_input(input)
        runtimes = self._runtimes(input, calls, ensure_config(config))
        jobs = [partial(self._arun_one, c, kind, r) for c, r in zip(calls, runtimes, strict=True)]
        # one call in this thread, several in langchain's threads (sync) or on this event loop
        outputs = await arun_all(jobs, None, lambda _: get_executor_for_config(config))
        return combine(outputs, kind, self._messages_key, in_graph=running_task() is not None)

    async def _aexecute(self, request: ToolCallRequest, kind: InputKind) -> Output:
        call = request.tool_call
        if request.tool is None:
            return self._unknown(call)
        tool, args = self._prepared(request)
        try:
            try:
                response = await tool.ainvoke(args, cast("RunnableConfig", request.runtime.config))
            except ValidationError as exc:
                if is_invalid_resume(exc):  # an answer to interrupt(), not a bad argument
                    raise
                raise self._invocation_error(call, exc) from exc
            return normalize(response, call, kind, self._messages_key)
        except _BUBBLE_UP:
            raise
        except Exception as exc:  # noqa: BLE001 - handle_tool_errors decides
            return self._handle(exc, call)

    async def _arun_one(self, call: ToolCall, kind: InputKind, runtime: ToolRuntime[Any, Any]) -> Output:
        request = ToolCallRequest(call, self._tools_by_name.get(call["name"]), runtime.state, runtime)
        wrap = self._awrap_tool_call
        if wrap is None and self._wrap_tool_call is None:
            return await self._aexecute(request, kind)
        try:
            if wrap is not None:
                return await wrap(request, lambda req: self._aexecute(req, kind))  # type: ignore[no-any-return]
            # async, with a sync wrapper only: it wraps the sync call (never reached when sync)
            sync_wrap = cast("ToolCallWrapper", self._wrap_tool_call)
            return sync_wrap(request, lambda req: self._execute(req, kind))  # type: ignore[no-any-return]
        except _BUBBLE_UP:
            raise
        except Exception as exc:
            if not self._handle_tool_errors or is_invalid_resume(exc):
                raise
            return self._error_message(exc, request.tool_call)

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: object) -> Any:  # noqa: A002
        """Run every tool call of the input: concurrently on this event loop (in threads when sync).

        Raises:
            ValueError: the input holds no ``AIMessage``.
        """
        calls, kind = self._parse_input(input)
        runtimes = self._runtimes(input, calls, ensure_config(config))
        jobs = [partial(self._run_one, c, kind, r) for c, r in zip(calls, runtimes, strict=True)]
        # one call in this thread, several in langchain's threads (sync) or on this event loop
        outputs = run_all(jobs, None, lambda _: get_executor_for_config(config))
        return combine(outputs, kind, self._messages_key, in_graph=running_task() is not None)

    def _execute(self, request: ToolCallRequest, kind: InputKind) -> Output:
        call = request.tool_call
        if request.tool is None:
            return self._unknown(call)
        tool, args = self._prepared(request)
        try:
            try:
                response = tool.invoke(args, cast("RunnableConfig", request.runtime.config))
            except ValidationError as exc:
                if is_invalid_resume(exc):  # an answer to interrupt(), not a bad argument
                    raise
                raise self._invocation_error(call, exc) from exc
            return normalize(response, call, kind, self._messages_key)
        except _BUBBLE_UP:
            raise
        except Exception as exc:  # noqa: BLE001 - handle_tool_errors decides
            return self._handle(exc, call)

    def _run_one(self, call: ToolCall, kind: InputKind, runtime: ToolRuntime[Any, Any]) -> Output:
        request = ToolCallRequest(call, self._tools_by_name.get(call["name"]), runtime.state, runtime)
        wrap = self._wrap_tool_call
        if wrap is None and self._wrap_tool_call is None:
            return self._execute(request, kind)
        try:
            if wrap is not None:
                return wrap(request, lambda req: self._execute(req, kind))  # type: ignore[no-any-return]
            # async, with a sync wrapper only: it wraps the sync call (never reached when sync)
            sync_wrap = cast("ToolCallWrapper", self._wrap_tool_call)
            return sync_wrap(request, lambda req: self._execute(req, kind))  # type: ignore[no-any-return]
        except _BUBBLE_UP:
            raise
        except Exception as exc:
            if not self._handle_tool_errors or is_invalid_resume(exc):
                raise
            return self._error_message(exc, request.tool_call)

    # <<< generated sync


def tools_condition(state: object, messages_key: str = "messages") -> Literal["tools", "__end__"]:
    """Route to ``"tools"`` when the last message has tool calls, else to the end.

    Args:
        state: A state with a messages key (dict or object), or a list of messages.
        messages_key: The key holding the messages.

    Raises:
        ValueError: the state holds no messages.
    """
    if isinstance(state, list) and state:
        last = cast("list[AnyMessage]", state)[-1]
    elif isinstance(state, dict) and (messages := cast("dict[str, Any]", state).get(messages_key)):
        last = messages[-1]
    elif messages := getattr(state, messages_key, []):  # pyright: ignore[reportUnknownArgumentType]  # isinstance leaves type arguments unknown
        last = messages[-1]
    else:
        raise ValueError(f"No messages found in input state to tool_edge: {state}")
    return "tools" if getattr(last, "tool_calls", None) else "__end__"
