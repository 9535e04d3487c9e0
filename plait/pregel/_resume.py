"""Answers to interrupts: which paused task gets which ``Command(resume=...)`` value."""

from __future__ import annotations

import string
import threading
from collections.abc import Collection, Mapping

from plait._internal._narrow import is_mapping
from plait.errors import UnknownInterruptError
from plait.pregel._stream import STATIC
from plait.types import Interrupt

__all__ = ["SpareAnswer", "pending", "pending_ids", "queue_resume"]

_MULTIPLE = (
    "When there are multiple pending interrupts, you must specify the interrupt id when resuming. "
    "Resume with Command(resume={interrupt.id: value, ...}) using the ids from "
    "get_state(config).interrupts."
)
_HEX = frozenset(string.hexdigits.lower())


def _looks_like_id(key: object, known: Mapping[str, str], tasks: Collection[str]) -> bool:
    """An interrupt id: a pending one, one of a task of this step (``task_id:n``, answered ones
    included), or LangGraph's form (32 lowercase hex digits)."""
    if not isinstance(key, str):
        return False
    return key in known or key.rpartition(":")[0] in tasks or (len(key) == 32 and set(key) <= _HEX)


class SpareAnswer:
    """One ``Command(resume=value)`` given while no task waits for an answer (say, after
    ``update_state`` moved the thread on): the run's first ``interrupt()`` call that has no
    answer of its own takes it, once (as LangGraph's)."""

    __slots__ = ("_lock", "_values")

    def __init__(self, value: object) -> None:
        self._values = [value]
        self._lock = threading.Lock()

    def take(self) -> tuple[bool, object]:
        """``(True, value)`` for the first caller, then ``(False, None)``."""
        with self._lock:
            return (True, self._values.pop()) if self._values else (False, None)


def queue_resume(
    interrupted: Mapping[str, list[Interrupt]],
    resumes: dict[str, list[object]],
    resume: object,
    *,
    strict: bool = False,
    tasks: Collection[str] = (),
) -> SpareAnswer | None:
    """Hand ``resume`` to the paused tasks: one value, or ``{interrupt id: value}``; one value
    no task waits for is returned as a :class:`SpareAnswer`.

    A task paused by a subgraph with several pending interrupts gets its share of the map as one
    value (the subgraph resumes with it). A map whose keys are all interrupt ids is a resume map
    even when some are not pending: those answers are dropped (``strict`` refuses them).

    Args:
        interrupted: The interrupts each paused task (by task id) raised.
        resumes: The answers each task got so far; updated.
        resume: What ``Command(resume=...)`` carries.
        strict: Refuse a map naming interrupts that are not pending, an empty map, and one value
            while several interrupts are pending.
        tasks: Ids of the step's tasks that asked questions, finished ones included (their
            interrupt ids make a map a resume map).

    Raises:
        RuntimeError: one value while several interrupts are pending.
        UnknownInterruptError: ``strict``, and the resume does not match the pending interrupts
            (raised before anything changes).
    """
    by_id = {i.id: tid for tid, items in interrupted.items() for i in items}
    if is_mapping(resume):  # interrupt id -> resume value, perhaps
        by_interrupt = {k: v for k, v in resume.items() if isinstance(k, str)}
        if len(by_interrupt) == len(resume) and all(_looks_like_id(k, by_id, tasks) for k in by_interrupt):
            if strict:
                _check_map(by_interrupt, pending_ids(interrupted))
            shares: dict[str, dict[str, object]] = {}
            for key, value in by_interrupt.items():
                if key in by_id:
                    shares.setdefault(by_id[key], {})[key] = value
            for tid, share in shares.items():
                several = pending(interrupted, resumes, tid) > 1
                resumes.setdefault(tid, []).append(share if several else next(iter(share.values())))
            return None
    if sum(pending(interrupted, resumes, tid) for tid in interrupted) > 1:
        if strict:
            open_ids = pending_ids(interrupted)
            if len(open_ids) > 1:
                raise UnknownInterruptError(_MULTIPLE, reason="ambiguous", pending_ids=open_ids)
        else:
            raise RuntimeError(_MULTIPLE)
    if not interrupted:
        return SpareAnswer(resume)
    for tid in interrupted:
        resumes.setdefault(tid, []).append(resume)
    return None


def _check_map(answers: Mapping[str, object], open_ids: list[str]) -> None:
    if not answers:
        raise UnknownInterruptError(
            "The resume map names no interrupt", reason="empty_map", pending_ids=open_ids
        )
    unknown = sorted(set(answers) - set(open_ids))
    if unknown:
        raise UnknownInterruptError(
            f"Unknown or already-consumed interrupt: {unknown[0]}",
            reason="not_pending",
            interrupt_ids=unknown,
            pending_ids=open_ids,
        )


def pending_ids(interrupted: Mapping[str, list[Interrupt]]) -> list[str]:
    """The ids of the questions still waiting for an answer, sorted (breakpoint markers left out).

    A paused task's saved questions are the ones it asked after using up its answers so far.
    """
    return sorted({i.id for items in interrupted.values() for i in items if i.id not in STATIC})


def pending(interrupted: Mapping[str, list[Interrupt]], resumes: Mapping[str, list[object]], tid: str) -> int:
    """Interrupts of a paused task that no answer was given for yet (at least one)."""
    return max(1, len(interrupted.get(tid, ())) - len(resumes.get(tid, ())))
