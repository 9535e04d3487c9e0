"""Shallow PostgreSQL savers: only the newest checkpoint of each thread namespace is kept.

A shallow saver is the PostgreSQL saver pruning the thread to its head after each ``put``
(:meth:`~plait.checkpoint._engine.SqlSaverBase.prune` with ``keep_last=1``, in its own
transaction, safe beside other writers), and answering as LangGraph's does: ``get_tuple``
returns the newest checkpoint whatever ``checkpoint_id`` asks for, and no checkpoint has a
parent. So there is no history to travel back to. LangGraph deprecates these savers in favour
of ``invoke(..., durability="exit")`` on the full saver; so does plait (a ``DeprecationWarning``).
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator, Iterator, Mapping
from types import EllipsisType
from typing import Any

from plait.checkpoint._engine import SqlSaverBase
from plait.checkpoint.base import Checkpoint, CheckpointMetadata, CheckpointTuple
from plait.checkpoint.postgres._saver import PostgresSaver

__all__ = ["ShallowPostgresSaver", "ShallowSaver", "deprecated"]


def _newest(config: dict[str, object]) -> dict[str, object]:
    """``config`` without its ``checkpoint_id``: a shallow saver has only the newest checkpoint."""
    configurable = config.get("configurable")
    if not isinstance(configurable, Mapping) or "checkpoint_id" not in configurable:
        return config
    kept = {k: v for k, v in configurable.items() if k != "checkpoint_id"}  # pyright: ignore[reportUnknownVariableType]  # a Mapping of the caller's
    return {**config, "configurable": kept}


def _alone(item: CheckpointTuple | None) -> CheckpointTuple | None:
    return None if item is None else item._replace(parent_config=None)


def deprecated(name: str) -> None:
    """Warn that the shallow saver ``name`` is deprecated, as LangGraph does."""
    warnings.warn(
        f"{name} is deprecated (as in LangGraph 2.0.20, to be removed in 3.0.0): use the full saver and "
        "invoke the graph with durability='exit' to save only the last checkpoint of a run.",
        DeprecationWarning,
        stacklevel=3,
    )


class ShallowSaver(SqlSaverBase):
    """Mixed in before a SQL saver: prune the namespace to its head after every ``put``.

    The sync methods are generated from the async ones (``aput`` also takes LangGraph's ``**kwargs``).
    """

    # >>> async source
    async def aput(
        self,
        config: dict[str, Any],
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: Mapping[str, int],
        *,
        expected_head: str | None | EllipsisType = ...,
        # >>> async only
        **kwargs: object,  # LangGraph's aput signature: any other keyword is refused by the saver's
        # <<< async only
    ) -> dict[str, Any]:
        """Store ``checkpoint``, then delete the older ones of its thread."""
        saved = await super().aput(
            config,
            checkpoint,
            metadata,
            new_versions,
            expected_head=expected_head,
            # >>> async only
            **kwargs,
            # <<< async only
        )
        await self.aprune(saved["configurable"]["thread_id"], keep_last=1)
        return saved

    async def aget_tuple(self, config: dict[str, Any]) -> CheckpointTuple | None:
        """The newest checkpoint of the namespace (a ``checkpoint_id`` is ignored), without parent."""
        return _alone(await super().aget_tuple(_newest(config)))

    async def alist(
        self,
        config: dict[str, Any] | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002 - LangGraph's name
        before: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """The newest checkpoint of each namespace (the only ones kept), without parents."""
        async for item in super().alist(config, filter=filter, before=before, limit=limit):
            yield item._replace(parent_config=None)

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def put(
        self,
        config: dict[str, Any],
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: Mapping[str, int],
        *,
        expected_head: str | None | EllipsisType = ...,
    ) -> dict[str, Any]:
        """Store ``checkpoint``, then delete the older ones of its thread."""
        saved = super().put(
            config,
            checkpoint,
            metadata,
            new_versions,
            expected_head=expected_head,
        )
        self.prune(saved["configurable"]["thread_id"], keep_last=1)
        return saved

    def get_tuple(self, config: dict[str, Any]) -> CheckpointTuple | None:
        """The newest checkpoint of the namespace (a ``checkpoint_id`` is ignored), without parent."""
        return _alone(super().get_tuple(_newest(config)))

    def list(
        self,
        config: dict[str, Any] | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002 - LangGraph's name
        before: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """The newest checkpoint of each namespace (the only ones kept), without parents."""
        for item in super().list(config, filter=filter, before=before, limit=limit):
            yield item._replace(parent_config=None)

    # <<< generated sync


class ShallowPostgresSaver(ShallowSaver, PostgresSaver):
    """A :class:`~plait.checkpoint.postgres.PostgresSaver` keeping only each thread namespace's newest
    checkpoint (deprecated, as in LangGraph: prefer ``durability="exit"``).

    Args:
        conn: A ``psycopg.Connection`` or a ``psycopg_pool.ConnectionPool``.
        **kwargs: As :class:`~plait.checkpoint.postgres.PostgresSaver` takes them.
    """

    def __init__(self, conn: Any, **kwargs: Any) -> None:
        deprecated(type(self).__name__)
        super().__init__(conn, **kwargs)
