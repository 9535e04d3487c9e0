"""``TracePolicy``: what a node's own trace run records of its input and output."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["TracePolicy", "omit_payload", "recorded"]


@dataclass(frozen=True, slots=True)
class TracePolicy:
    """How a node's run is recorded by tracers (LangSmith, callbacks): only that run, not its children.

    Not a redaction tool: runs nested in the node (model calls…) still record what they see.

    Attributes:
        process_inputs: Turns the node's input into what its run records (``None``: as is).
        process_outputs: Turns the node's output into what its run records (``None``: as is).
    """

    process_inputs: Callable[[Any], Any] | None = None
    process_outputs: Callable[[Any], Any] | None = None


def omit_payload(_value: object) -> dict[str, object]:
    """A :class:`TracePolicy` processor that records an empty payload (the run and its timing stay)."""
    return {}


def recorded(value: object, process: Callable[[Any], object] | None) -> object:
    """What a run records of ``value`` under ``process`` (a processor that fails records the value as is)."""
    if process is None:
        return value
    try:
        return process(value)
    except Exception:  # a tracing aid must never fail the node
        return value
