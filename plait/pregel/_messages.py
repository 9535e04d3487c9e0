"""``stream_mode="messages"``: chat-model tokens and messages as nodes produce them.

While a run streams messages, each task runs with a LangChain child config
whose callbacks include :class:`MessageStreamHandler`, so any chat model a
node invokes (without passing a config) reports its tokens here. Messages a
node returns that were not streamed token by token are emitted after the node.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any, TypeVar
from uuid import UUID, uuid4
from weakref import ref

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk, LLMResult

from plait._internal._narrow import is_list, is_str_mapping
from plait.constants import TAG_NOSTREAM
from plait.pregel._context import running_task

__all__ = ["MessageStreamHandler"]

Meta = dict[str, object]
T = TypeVar("T")


class MessageStreamHandler(BaseCallbackHandler):
    """Forwards chat-model output to the run's ``messages`` stream.

    Args:
        emit: Receives ``(message_or_chunk, metadata)`` pairs.
        owner: The event sink of the run this handler streams; model calls made by the tasks of
            another run (a graph invoked inside a node) are left out unless ``subgraphs``.
        subgraphs: The run streams its subgraphs too.
    """

    run_inline = True

    def __init__(
        self,
        emit: Callable[[tuple[BaseMessage, Meta]], None],
        owner: object | None = None,
        subgraphs: bool = True,
    ) -> None:
        self.emit = emit
        self._owner = None if owner is None else ref(owner)  # weak: the sink holds this handler
        self.subgraphs = subgraphs
        self._runs: dict[UUID, Meta] = {}
        self._streamed: set[UUID] = set()
        self._foreign: set[UUID] = set()  # model calls of nested runs, left out
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    # Having these two methods makes LangChain chat models stream tokens even
    # when the node calls ``invoke`` (they check for this protocol).
    def tap_output_iter(self, run_id: UUID, output: Iterator[T]) -> Iterator[T]:
        """Pass streamed output through unchanged."""
        return output

    def tap_output_aiter(self, run_id: UUID, output: AsyncIterator[T]) -> AsyncIterator[T]:
        """Pass streamed output through unchanged."""
        return output

    def on_chat_model_start(
        self,
        serialized: dict[str, object],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        tags: list[str] | None = None,
        metadata: dict[str, object] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remember which node started this model call."""
        if tags and TAG_NOSTREAM in tags:
            return
        sink = self._foreign_sink()
        # a nested run's model call: its node's output reaches this stream when the node returns;
        # with subgraphs, the nested run streams its messages here itself (EventSink.mirror)
        if sink is not None and (not self.subgraphs or getattr(sink, "mirrors_messages", False)):
            self._foreign.add(run_id)
            return
        meta = dict(metadata or {})
        if "langgraph_node" in meta:
            self._runs[run_id] = meta

    def on_llm_new_token(  # type: ignore[override]  # LangChain passes only str tokens to chat handlers
        self,
        token: str,
        *,
        chunk: Any = None,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        """Emit one streamed chunk."""
        meta = self._runs.get(run_id)
        if meta is not None and isinstance(chunk, ChatGenerationChunk):
            self._streamed.add(run_id)
            self.emit((chunk.message, meta))

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """Emit the whole message when the model did not stream tokens."""
        if run_id in self._foreign:
            self._foreign.discard(run_id)
            return
        meta = self._runs.pop(run_id, None)
        streamed = run_id in self._streamed
        self._streamed.discard(run_id)
        for generations in response.generations:
            for generation in generations:
                message = getattr(generation, "message", None)
                if isinstance(message, BaseMessage):
                    if message.id:
                        self._mark(message.id)
                    if meta is not None and not streamed:
                        self.emit((message, meta))

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Forget a failed model call."""
        self._foreign.discard(run_id)
        self._runs.pop(run_id, None)
        self._streamed.discard(run_id)

    def _foreign_sink(self) -> object | None:
        """The event sink of the run whose task makes this model call, when it is not this handler's run."""
        task = running_task()
        sink = None if task is None or task.loop is None else getattr(task.loop, "sink", None)
        owner = None if self._owner is None else self._owner()
        return sink if sink is not None and owner is not None and sink is not owner else None

    def _mark(self, message_id: str) -> bool:
        with self._lock:
            fresh = message_id not in self._seen
            self._seen.add(message_id)
            return fresh

    def seen(self, message: object) -> None:
        """``message`` reached the stream elsewhere (a subgraph's run): never emit it from here."""
        if isinstance(message, BaseMessage) and message.id:
            self._mark(message.id)

    def share(self, outer: MessageStreamHandler) -> None:
        """Count the messages ``outer`` has seen as seen here, and the other way round: a subgraph's
        run and the run it streams into are one stream (a message shows once in it)."""
        self._seen, self._lock = outer._seen, outer._lock

    def seen_in(self, state: object) -> None:
        """The messages a task receives (its input's top-level messages and message lists) are not new."""
        if is_str_mapping(state):
            values: list[object] = list(state.values())
        elif hasattr(state, "__dict__") and not isinstance(state, BaseMessage):
            values = list(vars(state).values())  # a pydantic or dataclass state
        else:
            values = [state]
        for value in values:
            items: list[object] = list(value) if is_list(value) else [value]
            for item in items:
                self.seen(item)

    def push(self, message: BaseMessage, meta: Meta) -> None:
        """Emit ``message`` now (``push_message``); it is not emitted again when its node finishes."""
        if message.id:
            self._mark(message.id)
        self.emit((message, meta))

    def emit_written(self, messages: Iterable[BaseMessage], meta: Meta) -> None:
        """Emit messages a node returned, unless a model already streamed them."""
        for message in messages:
            if message.type == "remove":
                continue
            if message.id is None:  # as LangGraph: the id streamed is the one the state keeps
                message.id = str(uuid4())
            if self._mark(message.id):
                self.emit((message, meta))
