"""A compiled graph's threads: their state, history and updates, read and written through its saver.

:class:`~plait.pregel.Pregel` takes these from :class:`ThreadAccess`; running the graph is its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from plait.checkpoint.base import get_checkpoint_id
from plait.pregel._cache import namespaces
from plait.pregel._history import empty_snapshot, snapshot, supersteps_of
from plait.pregel._plan import Plan
from plait.pregel._root import root_snapshot
from plait.pregel._subgraphs import (
    aread_snapshot,
    awith_task_states,
    own_namespace,
    owner_of,
    read_snapshot,
    subgraphs_of,
    with_task_states,
)
from plait.pregel._thread import ThreadRef
from plait.pregel._travel import mapped
from plait.pregel._update import aupdate_thread, update_thread
from plait.types import StateSnapshot, StateUpdate

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

__all__ = ["ThreadAccess"]


class ThreadAccess:
    """The thread methods of a compiled graph (``get_state``, ``get_state_history``, ``update_state``…)."""

    plan: Plan
    checkpointer: Any
    subgraph_saving: str

    def _saver(self) -> Any:
        if self.checkpointer is None:
            raise ValueError("No checkpointer set: compile(checkpointer=...) to use threads and get_state")
        return self.checkpointer

    # >>> async source
    async def aget_state(self, config: RunnableConfig, *, subgraphs: bool = False) -> StateSnapshot:
        """The thread's newest checkpoint (or the one ``checkpoint_id`` names) as a snapshot.

        Args:
            config: Names the thread (and perhaps a checkpoint).
            subgraphs: Fill each subgraph task's ``state`` with the subgraph's own snapshot
                (else its config).
        """
        return await owner_of(self, config, self._saver).astate_here(config, subgraphs=subgraphs)

    async def astate_here(self, config: RunnableConfig, *, subgraphs: bool = False) -> StateSnapshot:
        """:meth:`get_state` read with this graph's channels, whatever namespace ``config`` names."""
        ref = ThreadRef.from_config(own_namespace(self, config))
        saved = await self._saver().aget_tuple(ref.config())
        if saved is None:
            return empty_snapshot(config)
        snap = snapshot(self.plan, mapped(saved), ref.checkpoint_id is None)
        if subgraphs:
            snap = await awith_task_states(self.plan, snap, partial(aread_snapshot, self.checkpointer))
        else:
            snap = with_task_states(self.plan, snap, None)
        return root_snapshot(self.plan, snap)

    async def aget_subgraphs(
        self, *, namespace: str | None = None, recurse: bool = False
    ) -> AsyncIterator[tuple[str, Any]]:
        """The graph's subgraph nodes as ``(name, graph)`` pairs (``namespace``: the one at that path)."""
        for item in subgraphs_of(self.plan, namespace, recurse):
            yield item

    async def aget_state_history(
        self,
        config: RunnableConfig,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002
        before: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[StateSnapshot]:
        """The thread's checkpoints as snapshots, newest first, read lazily."""
        owner = owner_of(self, config, self._saver)
        plan, ref = owner.plan, ThreadRef.from_config(own_namespace(owner, config))
        get_checkpoint_id(before)  # raises InvalidConfigError for a malformed ``before``
        async for saved in self._saver().alist(ref.config(), filter=filter, before=before, limit=limit):
            yield root_snapshot(plan, with_task_states(plan, snapshot(plan, saved), None))

    async def aupdate_state(
        self, config: RunnableConfig, values: Any, as_node: str | None = None, task_id: str | None = None
    ) -> dict[str, Any]:
        """Write ``values`` to the thread through the reducers, as if ``as_node`` had returned them.

        Returns:
            The config of the new checkpoint.
        """
        return await self.abulk_update_state(config, [[StateUpdate(values, as_node, task_id)]])

    async def abulk_update_state(
        self, config: RunnableConfig, supersteps: Sequence[Sequence[Any]]
    ) -> dict[str, Any]:
        """Apply several supersteps of updates, one checkpoint each; return the last one's config.

        Each superstep is a list of :class:`~plait.types.StateUpdate` (or ``(values, as_node)``)
        whose writes merge as one step's do.
        """
        steps = supersteps_of(supersteps)
        return await owner_of(self, config, self._saver, for_update=True).aupdate_here(config, steps)

    async def aupdate_here(
        self, config: RunnableConfig, supersteps: Sequence[Sequence[Any]]
    ) -> dict[str, Any]:
        """:meth:`bulk_update_state` with this graph's nodes and channels, in any namespace."""
        self._saver()
        return await aupdate_thread(self, own_namespace(self, config), supersteps)

    async def aclear_cache(self, nodes: Sequence[str] | None = None) -> None:
        """Delete the cached results of ``nodes`` (``None``: of every node).

        Raises:
            ValueError: the graph was compiled without a cache.
        """
        cache, spaces = namespaces(self.plan, nodes)
        await cache.aclear(spaces)

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def get_state(self, config: RunnableConfig, *, subgraphs: bool = False) -> StateSnapshot:
        """The thread's newest checkpoint (or the one ``checkpoint_id`` names) as a snapshot.

        Args:
            config: Names the thread (and perhaps a checkpoint).
            subgraphs: Fill each subgraph task's ``state`` with the subgraph's own snapshot
                (else its config).
        """
        return owner_of(self, config, self._saver).state_here(config, subgraphs=subgraphs)

    def state_here(self, config: RunnableConfig, *, subgraphs: bool = False) -> StateSnapshot:
        """:meth:`get_state` read with this graph's channels, whatever namespace ``config`` names."""
        ref = ThreadRef.from_config(own_namespace(self, config))
        saved = self._saver().get_tuple(ref.config())
        if saved is None:
            return empty_snapshot(config)
        snap = snapshot(self.plan, mapped(saved), ref.checkpoint_id is None)
        if subgraphs:
            snap = with_task_states(self.plan, snap, partial(read_snapshot, self.checkpointer))
        else:
            snap = with_task_states(self.plan, snap, None)
        return root_snapshot(self.plan, snap)

    def get_subgraphs(
        self, *, namespace: str | None = None, recurse: bool = False
    ) -> Iterator[tuple[str, Any]]:
        """The graph's subgraph nodes as ``(name, graph)`` pairs (``namespace``: the one at that path)."""
        yield from subgraphs_of(self.plan, namespace, recurse)

    def get_state_history(
        self,
        config: RunnableConfig,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002
        before: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> Iterator[StateSnapshot]:
        """The thread's checkpoints as snapshots, newest first, read lazily."""
        owner = owner_of(self, config, self._saver)
        plan, ref = owner.plan, ThreadRef.from_config(own_namespace(owner, config))
        get_checkpoint_id(before)  # raises InvalidConfigError for a malformed ``before``
        for saved in self._saver().list(ref.config(), filter=filter, before=before, limit=limit):
            yield root_snapshot(plan, with_task_states(plan, snapshot(plan, saved), None))

    def update_state(
        self, config: RunnableConfig, values: Any, as_node: str | None = None, task_id: str | None = None
    ) -> dict[str, Any]:
        """Write ``values`` to the thread through the reducers, as if ``as_node`` had returned them.

        Returns:
            The config of the new checkpoint.
        """
        return self.bulk_update_state(config, [[StateUpdate(values, as_node, task_id)]])

    def bulk_update_state(
        self, config: RunnableConfig, supersteps: Sequence[Sequence[Any]]
    ) -> dict[str, Any]:
        """Apply several supersteps of updates, one checkpoint each; return the last one's config.

        Each superstep is a list of :class:`~plait.types.StateUpdate` (or ``(values, as_node)``)
        whose writes merge as one step's do.
        """
        steps = supersteps_of(supersteps)
        return owner_of(self, config, self._saver, for_update=True).update_here(config, steps)

    def update_here(self, config: RunnableConfig, supersteps: Sequence[Sequence[Any]]) -> dict[str, Any]:
        """:meth:`bulk_update_state` with this graph's nodes and channels, in any namespace."""
        self._saver()
        return update_thread(self, own_namespace(self, config), supersteps)

    def clear_cache(self, nodes: Sequence[str] | None = None) -> None:
        """Delete the cached results of ``nodes`` (``None``: of every node).

        Raises:
            ValueError: the graph was compiled without a cache.
        """
        cache, spaces = namespaces(self.plan, nodes)
        cache.clear(spaces)

    # <<< generated sync
