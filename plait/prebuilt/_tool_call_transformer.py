"""``ToolCallTransformer``: ``run.tool_calls``, one :class:`ToolCallStream` per tool call of a v3 run.

Register it with ``graph.stream_events(version="v3", transformers=[ToolCallTransformer])``
(or ``compile(transformers=[...])``): the run then streams the ``tools`` mode, which
``ToolNode`` feeds while its tools run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from plait.prebuilt._tool_call_stream import ToolCallStream
from plait.stream._types import ProtocolEvent, StreamTransformer
from plait.stream.stream_channel import StreamChannel
from plait.stream.transformers import in_scope

__all__ = ["ToolCallTransformer"]


class ToolCallTransformer(StreamTransformer):
    """Projects ``tools`` events of its scope into ``run.tool_calls``.

    ``tool-started`` yields a new :class:`ToolCallStream`; ``tool-output-delta`` feeds its
    ``output_deltas``; ``tool-finished`` / ``tool-error`` complete it. Events of other
    scopes (subgraphs) only pass through the main event log.

    Args:
        scope: The namespace projected (``()``: the root graph).
    """

    required_stream_modes = ("tools",)
    _native = True

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._log: StreamChannel[ToolCallStream] = StreamChannel()
        self._active: dict[str, ToolCallStream] = {}
        self._mux: Any = None

    def init(self) -> dict[str, object]:
        return {"tool_calls": self._log}

    def _on_register(self, mux: object) -> None:
        self._mux = mux

    def _new_stream(
        self, tool_call_id: str, tool_name: str, tool_input: dict[str, Any] | None
    ) -> ToolCallStream:
        stream = ToolCallStream(tool_call_id, tool_name, tool_input)
        if self._mux is not None:
            stream.output_deltas._bind_mux(self._mux)  # pyright: ignore[reportPrivateUsage]
        elif self._log._is_async is not None:  # pyright: ignore[reportPrivateUsage]
            stream._bind(is_async=self._log._is_async)  # pyright: ignore[reportPrivateUsage]
        return stream

    def process(self, event: ProtocolEvent) -> bool:
        if event["method"] != "tools" or not in_scope(self, event):
            return True
        data = event["params"]["data"]
        if not isinstance(data, Mapping):
            return True
        info = cast("Mapping[str, Any]", data)
        kind, call_id = info.get("event"), str(info.get("tool_call_id") or "")
        if kind == "tool-started":
            started = self._new_stream(call_id, str(info.get("tool_name") or ""), info.get("input"))
            self._active[call_id] = started
            self._log.push(started)
            return True
        stream = self._active.get(call_id)
        if stream is None:  # its start was not seen (another scope's, or before the run)
            return True
        if kind == "tool-output-delta":
            stream._push_delta(info.get("delta"))  # pyright: ignore[reportPrivateUsage]
        elif kind == "tool-finished":
            del self._active[call_id]
            stream._finish(info.get("output"))  # pyright: ignore[reportPrivateUsage]
        elif kind == "tool-error":
            del self._active[call_id]
            stream._fail(str(info.get("message") or ""))  # pyright: ignore[reportPrivateUsage]
        return True

    def finalize(self) -> None:
        """Calls still running (the run paused inside them) end their output without completing."""
        for stream in self._active.values():
            stream.output_deltas.close()
        self._active.clear()

    def fail(self, err: BaseException) -> None:
        for stream in self._active.values():
            stream.output_deltas.fail(err)
        self._active.clear()
