"""What the SQLite and PostgreSQL stores share: batches, embedding, TTL sweeping.

A subclass says how to run a step generator in one transaction
(:meth:`SqlStore._transact`, and :meth:`SqlStore._atransact` for native async
drivers); everything else -- validation, embedding before the transaction,
the SQL itself -- is here and in :mod:`plait.store._engine`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from abc import abstractmethod
from collections.abc import Callable, Iterable
from typing import Literal, cast

from plait.store._embed import Embedded, IndexSpec
from plait.store._engine import Dialect, Engine, Prepared
from plait.store._group import Groups, ThreadGroups
from plait.store._search import ORDERS
from plait.store._statement import Step
from plait.store._ttl import Sweeper, checked_ttl, interval_seconds
from plait.store.base import BaseStore, IndexConfig, Op, Result, TTLConfig

__all__ = ["SearchOrder", "SqlStore"]

MakeStep = Callable[[float], Step]
SearchOrder = Literal["updated", "written"]
"""How a search without a query orders its results: ``"updated"`` (LangGraph's SQL stores: the
last written first) or ``"written"`` (``InMemoryStore`` and LangGraph's server: namespaces in the
order of their oldest item, each one's items in the order they were first written; an update keeps
an item's place)."""


class SqlStore(BaseStore):
    """A :class:`BaseStore` whose batches run as SQL through an :class:`Engine`.

    Attributes:
        index_config: The ``index`` setting, or ``None``.
        embeddings: The index's LangChain ``Embeddings`` (a function is wrapped), or ``None``.
        ttl_config: The ``ttl`` setting, or ``None``.
    """

    supports_ttl = True
    shares_transactions = False
    """Whether concurrent async calls share transactions (the async stores; see :mod:`plait.store._group`)."""
    distances: tuple[str, ...] = ("cosine",)
    """The ``index["distance_type"]`` values the store ranks by."""

    def __init__(
        self,
        dialect: Dialect,
        *,
        index: IndexConfig | None,
        ttl: TTLConfig | None,
        search_order: SearchOrder = "updated",
    ) -> None:
        """Bind the SQL dialect and parse the settings.

        Args:
            dialect: The database's SQL.
            index: Semantic-search settings.
            ttl: TTL settings.
            search_order: The order of search results without a query (:data:`SearchOrder`).

        Raises:
            ValueError: An unknown ``search_order``.
        """
        if search_order not in ORDERS:
            raise ValueError(f"search_order must be one of {sorted(ORDERS)}, got {search_order!r}")
        self.index_spec = IndexSpec.parse(index, self.distances) if index is not None else None
        self.index_config = self.index_spec.config if self.index_spec else None
        self.embeddings = self.index_spec.embeddings if self.index_spec else None
        self.ttl_config = checked_ttl(ttl)
        self.engine = Engine(dialect, self.index_spec, search_order)
        self._sweeper = Sweeper(lambda: SqlStore.sweep_ttl(self))
        self._groups = (
            Groups(self.engine, lambda make_step, alone: self._atransact(make_step, alone=alone))
            if self.shares_transactions
            else None
        )
        self._threads: ThreadGroups | None = None  # the sync form of _groups: the calls of waiting threads

    @abstractmethod
    def _transact(self, make_step: MakeStep, *, alone: bool = False) -> object:
        """Run ``make_step(now)`` in one transaction and return its result.

        ``alone``: each of its statements may run on its own, without a transaction
        around them (see ``Prepared.alone``).
        """

    async def _atransact(self, make_step: MakeStep, *, alone: bool = False) -> object:
        """Async :meth:`_transact`; by default it runs in a worker thread."""
        return await asyncio.to_thread(self._transact, make_step, alone=alone)

    # >>> async source
    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run operations in order, in one transaction.

        Every operation is checked, and every embedding computed, before the
        transaction opens: an invalid batch changes nothing.

        Args:
            ops: The operations.

        Returns:
            One result per operation.
        """
        prepared = self.engine.prepare(list(ops))
        embedded = await self.index_spec.aembed(prepared.ops) if self.index_spec else None
        return await self._arun_prepared(prepared, embedded)

    async def _arun_prepared(self, prepared: Prepared, embedded: Embedded | None) -> list[Result]:
        """Run a checked batch whose vectors are computed: with the batches of concurrent calls (a
        store whose calls share transactions), else in a transaction of its own."""
        if self._groups is not None:
            return await self._groups.run(prepared, embedded)
        return cast(
            "list[Result]",
            await self._atransact(lambda now: self.engine.run(prepared, embedded, now), alone=prepared.alone),
        )

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run operations in order, in one transaction.

        Every operation is checked, and every embedding computed, before the
        transaction opens: an invalid batch changes nothing.

        Args:
            ops: The operations.

        Returns:
            One result per operation.
        """
        prepared = self.engine.prepare(list(ops))
        embedded = self.index_spec.embed(prepared.ops) if self.index_spec else None
        return self._run_prepared(prepared, embedded)

    def _run_prepared(self, prepared: Prepared, embedded: Embedded | None) -> list[Result]:
        """Run a checked batch whose vectors are computed: with the batches of concurrent calls (a
        store whose calls share transactions), else in a transaction of its own."""
        if self._threads is not None:
            return self._threads.run(prepared, embedded)
        return cast(
            "list[Result]",
            self._transact(lambda now: self.engine.run(prepared, embedded, now), alone=prepared.alone),
        )

    # <<< generated sync

    def sweep_ttl(self) -> int:
        """Delete the expired items now.

        Returns:
            How many items were deleted.
        """
        return cast("int", self._transact(self.engine.sweep))

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweep expired items periodically on a background thread.

        Args:
            sweep_interval_minutes: Minutes between sweeps; defaults to the ``ttl``
                setting's ``sweep_interval_minutes``, else 5.

        Returns:
            A future that completes when the sweeper stops.
        """
        return self._sweeper.start(interval_seconds(self.ttl_config, sweep_interval_minutes))

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the background sweeper.

        Args:
            timeout: Seconds to wait for it.

        Returns:
            Whether it stopped in time.
        """
        return self._sweeper.stop(timeout)


def now() -> float:
    """Seconds since the epoch: the stores' clock."""
    return time.time()
