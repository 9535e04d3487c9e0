"""Task ids: the key a task's pending writes are stored under, and the form earlier plait versions stored.

A task's id is a UUID derived from the checkpoint its step follows, the node and the task's
index among that node's tasks in the step, so a resumed run finds the writes of the same task.
Subgraph namespaces show it as ``node:<task id>``, the form LangGraph clients split on ``:``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from functools import lru_cache
from hashlib import sha1
from typing import Any

from xxhash import xxh3_128_hexdigest

from plait.checkpoint.base import INTERRUPT, RESUME

__all__ = ["current_writes", "interrupt_key", "legacy_segments", "legacy_task_key", "task_key"]

_SPACE = uuid.UUID("6f1e2a8c-4b7d-5e90-8a3c-2d1f0b9e7c64")
"""plait's UUID namespace for task ids (any fixed UUID; changing it orphans stored pending writes)."""


_SPACE_BYTES = _SPACE.bytes


@lru_cache(maxsize=4096)
def task_key(checkpoint_id: str | None, name: str, index: int) -> str:
    """The id of the ``index``-th task of node ``name`` in the step after ``checkpoint_id``.

    Stored with every pending write, so the recipe is fixed (``run`` stands for no checkpoint):
    ``str(uuid.uuid5(_SPACE, legacy_task_key(...)))``, computed here without building a ``UUID``.
    """
    digest = bytearray(
        sha1(_SPACE_BYTES + legacy_task_key(checkpoint_id, name, index).encode()).digest()[:16]
    )
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # the RFC 4122 variant
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def legacy_task_key(checkpoint_id: str | None, name: str, index: int) -> str:
    """The id earlier plait versions gave that task (:func:`task_key` derives today's from it)."""
    return f"{checkpoint_id or 'run'}:{name}:{index}"


def legacy_segments(node: str, old_task_id: str, call: int) -> list[str]:
    """The namespace segments earlier versions gave a task's ``call``-th subgraph call (counted
    from 0), newest form first: ``node:<task id>`` (later calls ``|<call>``), then ``node:<task id>:<call>``."""
    return [
        f"{node}:{old_task_id}|{call}" if call else f"{node}:{old_task_id}",
        f"{node}:{old_task_id}:{call}",
    ]


def interrupt_key(namespace: str, task_id: str, answered: int) -> str:
    """The id of a task's next ``interrupt()``, as LangGraph derives it: the xxh3-128 hex digest of
    the task's namespace (``node:<task id>``, under its graph's), plus ``|<answered>`` once the task
    has ``answered`` answers (the slot the answer fills), so clients compute the same ids.

    A functional-API task's (``<root task id>/<name>:<n>``) keeps its task id as a prefix: the
    node that called it tells its own questions from its calls' by that prefix. Ids stored by
    earlier versions (UUID hex, ``<task id>:<n>``) still answer: a resume matches stored ids.
    """
    if "/" in task_id:
        return f"{task_id}:{answered}"
    return xxh3_128_hexdigest((f"{namespace}|{answered}" if answered else namespace).encode())


def _current(checkpoint_id: str, tid: str) -> str:
    """``tid`` in today's form: plait stored ``<checkpoint id>:<node>:<index>[suffix]`` before.

    The suffix (an error handler's ``:<node>``, a functional task's ``/...``) is kept after the
    translated root id, as today's ids build it.
    """
    head = checkpoint_id + ":"
    if not tid.startswith(head):
        return tid
    name, _, rest = tid[len(head) :].partition(":")
    digits = len(rest) - len(rest.lstrip("0123456789"))
    if not name or not digits or rest[digits:][:1] not in ("", ":", "/"):
        return tid
    return task_key(checkpoint_id, name, int(rest[:digits])) + rest[digits:]


def current_writes(
    checkpoint_id: str | None, writes: Iterable[tuple[str, str, object]]
) -> list[tuple[str, str, object]]:
    """A checkpoint's pending writes with task ids stored in the old form translated.

    A thread an earlier version paused, resumed and paused again holds a task's writes under
    both ids: the newer ones replace the older, as a saver's later writes of a task do (its
    question and answer rows are kept unless the newer writes hold their own).
    """
    rows = list(writes)
    if checkpoint_id is None:
        return rows
    ids = [_current(checkpoint_id, tid) for tid, _, _ in rows]
    fresh: dict[str, set[str]] = {}
    for (tid, key, _), new in zip(rows, ids, strict=True):
        if new == tid:
            fresh.setdefault(tid, set()).add(key)
    out: list[tuple[str, str, Any]] = []
    for (tid, key, value), new in zip(rows, ids, strict=True):
        if new != tid and new in fresh and (key not in (INTERRUPT, RESUME) or key in fresh[new]):
            continue  # superseded by the task's writes under its new id
        out.append((new, key, value))
    return out
