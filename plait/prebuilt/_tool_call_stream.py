"""``ToolCallStream``: one tool call of a v3 run, as ``run.tool_calls`` yields it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from langchain_core.messages import ToolMessage

from plait._internal._narrow import is_str_mapping
from plait.stream.stream_channel import StreamChannel

__all__ = ["ToolCallStream"]


def _content(output: object) -> object:
    """What a tool call returned: a ``ToolMessage``'s content (also in its serialized form), else as is."""
    if isinstance(output, ToolMessage):
        return output.content
    data: object = output
    if is_str_mapping(data):
        ident = data.get("id")
        kwargs = data.get("kwargs")
        if (
            data.get("lc") == 1
            and data.get("type") == "constructor"
            and isinstance(ident, list)
            and ident
            and ident[-1] == "ToolMessage"
            and is_str_mapping(kwargs)
        ):
            return kwargs.get("content")
    return output


class ToolCallStream:
    """A tool call being run by a ``ToolNode``: its identity, its streamed output, how it ended.

    Iterating it (or :attr:`output_deltas`) yields what the tool streamed with
    ``runtime.emit_output_delta(...)``, as it comes; the run advances as needed.

    Attributes:
        tool_call_id: The id of the call (from the model's message).
        tool_name: The tool called.
        input: The arguments the model gave.
        output: What the tool returned (a ``ToolMessage``'s content), once it finished.
        error: The error message, if the tool raised.
        completed: Whether the call finished (returned or raised).
    """

    def __init__(self, tool_call_id: str, tool_name: str, input: dict[str, Any] | None = None) -> None:  # noqa: A002
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
        self.input = input
        self.output: Any = None
        self.error: str | None = None
        self.completed = False
        self._output_deltas: StreamChannel[Any] = StreamChannel()

    @property
    def output_deltas(self) -> StreamChannel[Any]:
        """The output pieces the tool streamed (one consumer; ends when the call does)."""
        return self._output_deltas

    def _bind(self, *, is_async: bool) -> None:
        self._output_deltas._bind(is_async=is_async)  # pyright: ignore[reportPrivateUsage]

    def _push_delta(self, delta: object) -> None:
        if not self._output_deltas._closed:  # pyright: ignore[reportPrivateUsage]
            self._output_deltas.push(delta)

    def _finish(self, output: object) -> None:
        self.output = _content(output)
        self.completed = True
        self._output_deltas.close()

    def _fail(self, message: str) -> None:
        self.error = message
        self.completed = True
        self._output_deltas.close()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._output_deltas)

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._output_deltas.__aiter__()

    def __repr__(self) -> str:
        status = "failed" if self.error is not None else "completed" if self.completed else "running"
        return f"ToolCallStream(tool_call_id={self.tool_call_id!r}, tool_name={self.tool_name!r}, status={status})"
