"""The transformers plait ships: ``values``, ``messages``, ``lifecycle`` and ``subgraphs`` (always
on) and the opt-in raw modes.

Each projects the events of its own scope only (``()``: the root graph); events of
subgraphs stay in the run's main event log. ``LifecycleTransformer``, ``SubgraphTransformer``
and their base ``_TasksLifecycleBase`` are defined in ``plait.stream._lifecycle``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sized
from typing import Any, ClassVar, cast

from langchain_core.language_models._compat_bridge import message_to_events  # pyright: ignore[reportPrivateUsage]
from langchain_core.language_models.chat_model_stream import AsyncChatModelStream, ChatModelStream
from langchain_core.messages import BaseMessage, BaseMessageChunk, ToolMessage

from plait.stream._lifecycle import (
    LifecycleTransformer,
    SubgraphTransformer,
    _TasksLifecycleBase,  # pyright: ignore[reportPrivateUsage]  # LangChain's agents subclass it
)
from plait.stream._types import LifecyclePayload, ProtocolEvent, StreamTransformer, SubgraphStatus
from plait.stream.stream_channel import StreamChannel

__all__ = [
    "CheckpointsTransformer",
    "CustomTransformer",
    "DebugTransformer",
    "LifecyclePayload",
    "LifecycleTransformer",
    "MessagesTransformer",
    "SubgraphStatus",
    "SubgraphTransformer",
    "TasksTransformer",
    "UpdatesTransformer",
    "ValuesTransformer",
    "_TasksLifecycleBase",
]

AnyModelStream = ChatModelStream | AsyncChatModelStream


def in_scope(transformer: StreamTransformer, event: ProtocolEvent) -> bool:
    """Whether ``event`` comes from exactly the graph ``transformer`` projects."""
    return tuple(event["params"]["namespace"]) == transformer.scope


class ValuesTransformer(StreamTransformer):
    """``run.values``: the state after the input and after each step (root graph)."""

    required_stream_modes = ("values",)
    _native = True

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._log: StreamChannel[dict[str, Any]] = StreamChannel()
        self._interrupted = False
        self._interrupts: list[object] = []
        self._error: BaseException | None = None

    def init(self) -> dict[str, object]:
        return {"values": self._log}

    @property
    def error(self) -> BaseException | None:
        """What the run failed with, if it failed."""
        return self._error

    def process(self, event: ProtocolEvent) -> bool:
        if event["method"] == "values" and in_scope(self, event):
            params = event["params"]
            self._log.push(params["data"])
            interrupts = params.get("interrupts") or ()
            if interrupts:
                self._interrupted = True
                self._interrupts = list(interrupts)
        return True

    def fail(self, err: BaseException) -> None:
        self._error = err


class _ModeTransformer(StreamTransformer):
    """Projects the payloads of one stream mode, unchanged, as ``run.<mode>``."""

    mode: ClassVar[str] = ""
    _native = True

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._log: StreamChannel[object] = StreamChannel()

    def init(self) -> dict[str, object]:
        return {self.mode: self._log}

    def process(self, event: ProtocolEvent) -> bool:
        if event["method"] == self.mode and in_scope(self, event):
            self._log.push(event["params"]["data"])
        return True


class UpdatesTransformer(_ModeTransformer):
    """``run.updates``: what each node returned (``stream_mode="updates"`` payloads)."""

    mode = "updates"
    required_stream_modes = ("updates",)


class CustomTransformer(_ModeTransformer):
    """``run.custom``: what nodes wrote with their stream writer."""

    mode = "custom"
    required_stream_modes = ("custom",)


class CheckpointsTransformer(_ModeTransformer):
    """``run.checkpoints``: the checkpoints the run saved (needs a checkpointer)."""

    mode = "checkpoints"
    required_stream_modes = ("checkpoints",)


class DebugTransformer(_ModeTransformer):
    """``run.debug``: ``stream_mode="debug"`` envelopes (checkpoints, tasks, task results)."""

    mode = "debug"
    required_stream_modes = ("debug",)


class TasksTransformer(_ModeTransformer):
    """``run.tasks``: task starts and results (``stream_mode="tasks"`` payloads)."""

    mode = "tasks"
    required_stream_modes = ("tasks",)


class MessagesTransformer(StreamTransformer):
    """``run.messages``: one ``ChatModelStream`` per chat-model message (root graph).

    A model call streams its content-block events (``message-start`` … ``message-finish``)
    into its stream as they come; a message a node returned whole arrives as a finished
    stream. Tool messages and v1 message chunks are left out. Async runs yield
    ``AsyncChatModelStream`` objects.
    """

    required_stream_modes = ("messages",)
    _native = True

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._log: StreamChannel[object] = StreamChannel()
        self._by_run: dict[str, AnyModelStream] = {}
        self._ignored_runs: set[str] = set()  # model calls answering as a tool: not chat messages
        self._pump_fn: Callable[[], bool] | None = None
        self._apump_fn: Callable[[], Awaitable[bool]] | None = None

    def init(self) -> dict[str, object]:
        return {"messages": self._log}

    def _bind_pump(self, fn: Callable[[], bool]) -> None:
        """Pull the run with ``fn`` when a message stream needs more events (the mux hands it over)."""
        self._pump_fn = fn

    def _bind_apump(self, fn: Callable[[], Awaitable[bool]]) -> None:
        """Async :meth:`_bind_pump`."""
        self._apump_fn = fn

    def _new(self, meta: Mapping[str, Any], message_id: str | None, event: ProtocolEvent) -> AnyModelStream:
        namespace = list(event["params"]["namespace"])
        node = meta.get("langgraph_node")
        stream: AnyModelStream
        if self._log._is_async:  # pyright: ignore[reportPrivateUsage]
            stream = AsyncChatModelStream(namespace=namespace, node=node, message_id=message_id)
            if self._apump_fn is not None:
                stream.set_arequest_more(self._apump_fn)
        else:
            stream = ChatModelStream(namespace=namespace, node=node, message_id=message_id)
            if self._pump_fn is not None:
                stream.set_request_more(self._pump_fn)
        self._log.push(stream)
        return stream

    def process(self, event: ProtocolEvent) -> bool:
        if event["method"] != "messages" or not in_scope(self, event):
            return True
        data: object = event["params"]["data"]
        if not isinstance(data, (tuple, list)) or len(cast("Sized", data)) != 2:
            return True
        payload, found = cast("tuple[object, object]", data)
        meta: Mapping[str, Any] = cast("Mapping[str, Any]", found) if isinstance(found, Mapping) else {}
        if isinstance(payload, BaseMessage):
            if isinstance(payload, (BaseMessageChunk, ToolMessage)):  # v1 chunks; tool output
                return True
            stream = self._new(meta, payload.id, event)
            for item in message_to_events(payload, message_id=payload.id):
                stream.dispatch(item)
        elif isinstance(payload, Mapping) and "event" in payload:
            self._route(cast("Mapping[str, Any]", payload), meta, event)
        return True

    def _route(self, payload: Mapping[str, Any], meta: Mapping[str, Any], event: ProtocolEvent) -> None:
        """One content-block event of a model call: it goes to the stream of its call (``run_id``)."""
        key = str(meta.get("run_id") or "")
        kind = payload["event"]
        if key in self._ignored_runs:
            if kind in ("message-finish", "error"):
                self._ignored_runs.discard(key)
            return
        if kind == "message-start":
            if payload.get("role") == "tool":
                self._ignored_runs.add(key)
                return
            given = payload.get("id") or payload.get("message_id")
            self._by_run[key] = self._new(meta, given or meta.get("run_id"), event)
        stream = self._by_run.get(key)
        if stream is None:  # the start of this message was not seen (it began before the run)
            return
        stream.dispatch(payload)
        if kind in ("message-finish", "error"):
            del self._by_run[key]

    def finalize(self) -> None:
        for stream in self._by_run.values():
            stream.fail(RuntimeError("the run ended before this message finished"))
        self._by_run.clear()
        self._ignored_runs.clear()

    def fail(self, err: BaseException) -> None:
        for stream in self._by_run.values():
            stream.fail(err)
        self._by_run.clear()
