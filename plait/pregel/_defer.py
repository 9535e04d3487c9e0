"""Scheduling helpers of the superstep: deferred nodes (``defer=True``) and key versions."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plait.pregel._step import RunState

__all__ = ["hold_deferred", "next_version"]


def next_version(current: int | None, channel: None = None) -> int:
    """The version a key gets when a step writes it (plait's own counter)."""
    return 1 if current is None else current + 1


def hold_deferred(deferred: frozenset[str], run: RunState) -> None:
    """Hold the deferred nodes of ``run.next`` back until nothing else is scheduled; then run each once."""
    held = [n for n in run.next if n in deferred]
    if held:
        run.next = [n for n in run.next if n not in deferred]
        run.deferred.update(held)
    if not run.next and not run.sends and run.deferred:
        run.next, run.deferred = sorted(run.deferred), set()
