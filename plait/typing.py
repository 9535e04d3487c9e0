"""Type variables of the public API (LangGraph's ``langgraph.typing``).

``StateGraph[State, Context, Input, Output]`` and the compiled graph it builds are
generic in these; ``Context``, ``Input`` and ``Output`` have defaults, so
``StateGraph[State]`` is enough.
"""

from __future__ import annotations

from typing_extensions import TypeVar

__all__ = ["ContextT", "InputT", "OutputT", "StateT"]

StateT = TypeVar("StateT")
"""The graph's state schema (a TypedDict, dataclass or pydantic model)."""

ContextT = TypeVar("ContextT", default=None)
"""The run-scoped context (``context_schema``); ``None`` when the graph has none."""

InputT = TypeVar("InputT", default=StateT)
"""What ``invoke``/``stream`` take as input; the state schema unless ``input_schema`` is given."""

OutputT = TypeVar("OutputT", default=StateT)
"""The output schema; the state schema unless ``output_schema`` is given."""
