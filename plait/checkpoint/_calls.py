"""Saver calls as data: what a run asks its checkpointer to store, batched by savers that can."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import EllipsisType
from typing import Any

__all__ = ["PutCheckpoint", "PutWrites", "SaveOp"]


@dataclass(slots=True)  # not frozen: made several times a run, and a frozen init costs four times as much
class PutCheckpoint:
    """Store a checkpoint (``saver.put``).

    Attributes:
        config: The parent's config (thread, namespace, parent checkpoint id).
        checkpoint: The checkpoint to store.
        metadata: Its metadata (source, step, parents).
        versions: The keys the step changed, with their new versions.
        expected_head: The thread head this write builds on; ``...`` means "do not check" (a fork).
    """

    config: dict[str, Any]
    checkpoint: dict[str, Any]
    metadata: dict[str, Any]
    versions: Mapping[str, int]
    expected_head: str | None | EllipsisType = ...


@dataclass(slots=True)  # (not frozen, as PutCheckpoint)
class PutWrites:
    """Store the writes of one task of a step that has not completed (``saver.put_writes``).

    Attributes:
        config: The config of the checkpoint the task's step follows.
        writes: ``(key, value)`` pairs.
        task_id: The task's id.
    """

    config: dict[str, Any]
    writes: Sequence[tuple[str, object]]
    task_id: str


SaveOp = PutCheckpoint | PutWrites
"""One saver call."""
