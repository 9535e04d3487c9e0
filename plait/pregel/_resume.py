"""Answers to interrupts: which paused task gets which ``Command(resume=...)`` value."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from plait.types import Interrupt

__all__ = ["pending", "queue_resume"]


def queue_resume(
    interrupted: Mapping[str, list[Interrupt]], resumes: dict[str, list[Any]], resume: Any
) -> None:
    """Hand ``resume`` to the paused tasks: one value, or ``{interrupt id: value}``.

    A task paused by a subgraph with several pending interrupts gets its share of the map as one
    value (the subgraph resumes with it).

    Args:
        interrupted: The interrupts each paused task (by task id) raised.
        resumes: The answers each task got so far; updated.
        resume: What ``Command(resume=...)`` carries.

    Raises:
        RuntimeError: one value while several interrupts are pending.
    """
    by_id = {i.id: tid for tid, items in interrupted.items() for i in items}
    if isinstance(resume, Mapping):
        by_interrupt = cast("Mapping[str, Any]", resume)  # interrupt id -> resume value, perhaps
        if by_interrupt and all(k in by_id for k in by_interrupt):
            shares: dict[str, dict[str, Any]] = {}
            for key, value in by_interrupt.items():
                shares.setdefault(by_id[key], {})[key] = value
            for tid, share in shares.items():
                several = pending(interrupted, resumes, tid) > 1
                resumes.setdefault(tid, []).append(share if several else next(iter(share.values())))
            return
    if sum(pending(interrupted, resumes, tid) for tid in interrupted) > 1:
        raise RuntimeError(
            "When there are multiple pending interrupts, you must specify the interrupt id when resuming. "
            "Resume with Command(resume={interrupt.id: value, ...}) using the ids from "
            "get_state(config).interrupts."
        )
    for tid in interrupted:
        resumes.setdefault(tid, []).append(resume)


def pending(interrupted: Mapping[str, list[Interrupt]], resumes: Mapping[str, list[Any]], tid: str) -> int:
    """Interrupts of a paused task that no answer was given for yet (at least one)."""
    return max(1, len(interrupted.get(tid, ())) - len(resumes.get(tid, ())))
