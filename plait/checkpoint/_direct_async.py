"""Async methods that call the sync ones on the event loop, for savers whose work never blocks (in memory).

The base class runs each sync call in a worker thread (``asyncio.to_thread``), which is right for a
database and pure overhead for a dict: an in-memory saver's calls take microseconds under a lock no
one holds for longer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plait.checkpoint.base import Checkpoint, CheckpointMetadata, CheckpointTuple

__all__ = ["DirectAsync"]


def _sync(saver: object) -> Any:
    return saver  # (the saver this is mixed into has the sync methods)


class DirectAsync:
    """Mixed in before :class:`~plait.checkpoint.base.BaseCheckpointSaver`: ``a*`` methods call the sync ones."""

    async def aget_tuple(self, config: dict[str, Any]) -> CheckpointTuple | None:
        """Async :meth:`get_tuple`, on the loop."""
        found: CheckpointTuple | None = _sync(self).get_tuple(config)
        return found

    async def alist(
        self,
        config: dict[str, Any] | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002 - LangGraph's name
        before: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list`, on the loop."""
        for item in _sync(self).list(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(
        self,
        config: dict[str, Any],
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: Mapping[str, int],
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Async :meth:`put`, on the loop."""
        saved: dict[str, Any] = _sync(self).put(config, checkpoint, metadata, new_versions, **kwargs)
        return saved

    async def aput_writes(
        self, config: dict[str, Any], writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Async :meth:`put_writes`, on the loop."""
        _sync(self).put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`, on the loop."""
        _sync(self).delete_thread(thread_id)
