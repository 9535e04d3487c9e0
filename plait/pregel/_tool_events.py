"""``stream_mode="tools"``: the progress of LangChain tool calls made inside nodes.

While a run streams ``tools``, each task runs with :class:`ToolEventHandler` among
its callbacks, so every tool a node runs (a ``ToolNode``'s, or one invoked directly)
reports ``tool-started``, then ``tool-output-delta`` for each piece the tool sends with
:func:`emit_output_delta` (``ToolRuntime.emit_output_delta``), then ``tool-finished``
(with what the tool returned) or ``tool-error``. A tool that pauses the run
(``interrupt()``, a drained run) reports no end: it runs again when the run goes on.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from plait.errors import GraphDrained, GraphInterrupt

__all__ = ["ToolEventHandler", "emit_output_delta"]

Emit = Callable[[dict[str, Any]], None]

_CALL: contextvars.ContextVar[tuple[Emit, str] | None] = contextvars.ContextVar(
    "plait_tool_call", default=None
)
"""Where the tool call running here reports, and its id (``None``: not reported)."""


def emit_output_delta(delta: Any) -> None:
    """Report a piece of the running tool call's output (nothing when the run does not stream tools)."""
    current = _CALL.get()
    if current is not None:
        emit, call_id = current
        emit({"event": "tool-output-delta", "tool_call_id": call_id, "delta": delta})


class ToolEventHandler(BaseCallbackHandler):
    """Turns tool callbacks into ``tools`` events.

    Args:
        emit: Receives each event (a dict with ``event`` and ``tool_call_id``).
    """

    run_inline = True  # on_tool_start sets the context the tool body runs in

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self._calls: dict[UUID, tuple[str, contextvars.Token[tuple[Emit, str] | None]]] = {}

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        inputs: dict[str, Any] | None = None,
        tool_call_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        """A tool starts: report it (the model's call id, else the run's) and let its body report deltas."""
        call_id = tool_call_id or str(run_id)
        name = (serialized or {}).get("name") or kwargs.get("name") or ""
        self.emit(
            {
                "event": "tool-started",
                "tool_call_id": call_id,
                "tool_name": name,
                "input": inputs if inputs is not None else input_str,
            }
        )
        self._calls[run_id] = (call_id, _CALL.set((self.emit, call_id)))

    def _end(self, run_id: UUID) -> str | None:
        found = self._calls.pop(run_id, None)
        if found is None:
            return None
        call_id, token = found
        try:
            _CALL.reset(token)
        except ValueError:  # ended in another context than it started in
            _CALL.set(None)
        return call_id

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """The tool returned ``output``."""
        call_id = self._end(run_id)
        if call_id is not None:
            self.emit({"event": "tool-finished", "tool_call_id": call_id, "output": output})

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """The tool raised (a pause of the run is no error: the call runs again later)."""
        call_id = self._end(run_id)
        if call_id is not None and not isinstance(error, (GraphInterrupt, GraphDrained)):
            self.emit({"event": "tool-error", "tool_call_id": call_id, "message": str(error)})
