"""The snapshot types (:class:`Interrupt`, :class:`PregelTask`, :class:`StateSnapshot`), public as
:mod:`plait.types`' own: defined below it so the stream parts can name them without a cycle."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = ["Interrupt", "PregelTask", "StateSnapshot"]


@dataclass(frozen=True, slots=True)
class Interrupt:
    """A pause requested by a node, surfaced to the caller.

    Attributes:
        value: What the node asked the caller about.
        id: Identifier used to resume this interrupt.
        response_schema: JSON Schema of the answer expected (from ``interrupt(response_schema=)``),
            or ``None``.
    """

    value: Any
    id: str = ""
    response_schema: dict[str, Any] | Any | None = None


class PregelTask(NamedTuple):
    """A task of a snapshot: a node scheduled (or run) at that checkpoint."""

    id: str
    name: str
    path: tuple[Any, ...] = ()
    error: Exception | None = None
    interrupts: tuple[Interrupt, ...] = ()
    state: Any = None
    result: Any | None = None


class StateSnapshot(NamedTuple):
    """The state of a thread at one checkpoint."""

    values: dict[str, Any] | Any
    """Values of the state keys."""
    next: tuple[str, ...]
    """Nodes that run next from this checkpoint."""
    config: dict[str, Any]
    """Config that addresses exactly this checkpoint."""
    metadata: dict[str, Any] | None
    """``source`` (input / loop / update / fork), ``step``, ``parents`` and user metadata."""
    created_at: str | None
    """ISO-8601 timestamp (UTC) of the checkpoint."""
    parent_config: dict[str, Any] | None
    """Config of the previous checkpoint, if any."""
    tasks: tuple[PregelTask, ...]
    """Tasks scheduled at this checkpoint, with their results when known."""
    interrupts: tuple[Interrupt, ...] = ()
    """Interrupts pending at this checkpoint."""


for _kind in (Interrupt, PregelTask, StateSnapshot):  # their public home (reprs, pickles, the serde's names)
    _kind.__module__ = "plait.types"
