"""``InMemoryStore``: a dict-backed long-term store for tests and prototypes.

Data lives in the process only; each new instance starts empty. The public
API mirrors ``langgraph.store.memory.InMemoryStore``; the differences are:

* Semantic search with ``index={"dims", "embed", "fields"}``: a search with a
  ``query`` ranks items by cosine similarity (the best of their embedded
  fields) and sets ``score``; matching items without vectors follow with
  ``score=None``. Without an index, or without a query, results come in
  storage order (namespace first-write order, then key first-write order)
  with ``score=None``, and the ``index`` argument of ``put`` has no effect.
* TTL is implemented (``supports_ttl`` is ``True``): an item put with ``ttl``
  (minutes, or the ``default_ttl`` of the ``ttl`` config) expires that long
  after its last write, or its last read when reads refresh TTLs. Expired
  items are never returned; they are dropped at the start of the next store
  call (and by :meth:`InMemoryStore.sweep_ttl`).
* The operations of one ``batch`` run in order, each seeing the effect of the
  ones before it, and the whole batch runs under the store's lock.
* Overwriting an item keeps its ``created_at``.
* Deleting the last item of a namespace removes the namespace from
  ``list_namespaces``.
* Values must be JSON objects, as in the SQL stores (``InvalidValueError``).
* Items returned by reads carry a shallow copy of the stored value, so
  reassigning its keys does not change the store (nested objects are shared).
"""

from __future__ import annotations

import concurrent.futures
import heapq
import itertools
import threading
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from itertools import islice

from plait.store._codec import check_value
from plait.store._embed import Embedded, IndexSpec
from plait.store._filter import Test, check_filter, matcher
from plait.store._ops import _check_labels  # pyright: ignore[reportPrivateUsage]  # the namespace check, shared on purpose
from plait.store._rank import cosine
from plait.store._ttl import Sweeper, checked_ttl, interval_seconds
from plait.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)

__all__ = ["InMemoryStore"]

Namespace = tuple[str, ...]
_NONE: dict[str, Item] = {}


class _Batch:
    """The answer of ``InMemoryStore._direct_op`` for an operation that needs a batch."""


_BATCH = _Batch()


def _now() -> datetime:
    """Current UTC time; tests replace this to move the clock."""
    return datetime.now(timezone.utc)


class InMemoryStore(BaseStore):
    """Long-term store that keeps every item in process memory.

    Thread-safe: each ``batch`` runs under a lock. ``abatch`` runs the same
    code without awaiting anything, since there is no I/O.

    Example:
        >>> store = InMemoryStore()
        >>> store.put(("users", "u1"), "prefs", {"theme": "dark"})
        >>> store.get(("users", "u1"), "prefs").value
        {'theme': 'dark'}
    """

    supports_ttl = True

    def __init__(self, *, index: IndexConfig | None = None, ttl: TTLConfig | None = None) -> None:
        """Create an empty store.

        Args:
            index: Semantic-search settings: ``dims``, ``embed`` (an ``Embeddings``,
                a function, or a ``"provider:model"`` string) and ``fields``.
            ttl: TTL defaults (``default_ttl`` in minutes, ``refresh_on_read``).
        """
        self.index_spec = IndexSpec.parse(index) if index is not None else None
        self.index_config = self.index_spec.config if self.index_spec else None
        self.embeddings = self.index_spec.embeddings if self.index_spec else None
        self.ttl_config = checked_ttl(ttl)
        self._data: dict[Namespace, dict[str, Item]] = {}
        self._vectors: dict[tuple[Namespace, str], list[tuple[str, list[float]]]] = {}
        self._expiry: dict[tuple[Namespace, str], tuple[float, datetime]] = {}
        self._heap: list[tuple[datetime, int, Namespace, str]] = []
        self._seq = itertools.count()
        self._lock = threading.RLock()
        self._sweeper = Sweeper(self.sweep_ttl)
        self._embedded: Embedded | None = None
        self._sorted: list[Namespace] | None = None  # the namespaces, sorted (None: changed since)
        # the convenience methods skip building a batch unless a subclass runs batches its own way
        self._direct = type(self).batch is InMemoryStore.batch and type(self).abatch is InMemoryStore.abatch

    # >>> async source
    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run operations in order and return their results.

        Every operation is validated before any runs, so an invalid batch
        changes nothing.

        Args:
            ops: The operations to run.

        Returns:
            One result per operation (see :meth:`BaseStore.batch`).

        Raises:
            InvalidNamespaceError: If an operation carries a bad namespace.
            ValueError: On an unknown operation or filter operator.
            TypeError: If a put's value is not a mapping.
        """
        ops = list(ops)
        for op in ops:
            _validate(op)
        return self._execute(ops, await self.index_spec.aembed(ops) if self.index_spec else None)

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run operations in order and return their results.

        Every operation is validated before any runs, so an invalid batch
        changes nothing.

        Args:
            ops: The operations to run.

        Returns:
            One result per operation (see :meth:`BaseStore.batch`).

        Raises:
            InvalidNamespaceError: If an operation carries a bad namespace.
            ValueError: On an unknown operation or filter operator.
            TypeError: If a put's value is not a mapping.
        """
        ops = list(ops)
        for op in ops:
            _validate(op)
        return self._execute(ops, self.index_spec.embed(ops) if self.index_spec else None)

    # <<< generated sync

    # >>> async source
    async def _arun_op(self, op: Op) -> Result:
        """One operation of a convenience method (``get``, ``put``, ...): without a batch unless it must embed."""
        result = self._direct_op(op)
        return await super()._arun_op(op) if isinstance(result, _Batch) else result

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def _run_op(self, op: Op) -> Result:
        """One operation of a convenience method (``get``, ``put``, ...): without a batch unless it must embed."""
        result = self._direct_op(op)
        return super()._run_op(op) if isinstance(result, _Batch) else result

    # <<< generated sync

    def get(self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None) -> Item | None:
        """:meth:`BaseStore.get` without an operation object (same checks, same result): the hot path."""
        if not self._direct:
            return super().get(namespace, key, refresh_ttl=refresh_ttl)
        _check_labels(namespace)
        return self._read(namespace, key if type(key) is str else str(key), refresh_ttl)

    def _read(self, namespace: Namespace, key: str, refresh_ttl: bool | None) -> Item | None:
        if not self._heap:  # nothing expires: one dict lookup (atomic under the GIL; puts replace items)
            item = self._data.get(namespace, _NONE).get(key)
            return None if item is None else _copy(item)
        with self._lock:
            now = self._purge() if self._heap else None
            item = self._data.get(namespace, _NONE).get(key)
            if item is not None and now is not None and self._refresh(refresh_ttl):
                self._refresh_expiry(namespace, key, now)
        return None if item is None else _copy(item)

    def _direct_op(self, op: Op) -> Result | _Batch:
        """``op`` run without building a batch (same checks, same result as a batch).

        Returns:
            The result, or ``_BATCH`` when the operation needs a batch: a subclass runs batches
            its own way, a put or a ranked search must embed, or a put deletes.
        """
        if not self._direct:
            return _BATCH
        if isinstance(op, GetOp):
            return self._read(op.namespace, op.key, op.refresh_ttl)
        if isinstance(op, PutOp):
            return self._direct_put(op)
        if isinstance(op, SearchOp):
            if op.query and self.index_spec is not None:
                return _BATCH
            if op.filter:
                check_filter(op.filter)
            with self._lock:
                found = self._search(op, self._purge() if self._heap else None, None)
            return _hits(found)
        with self._lock:
            if self._heap:
                self._purge()
            return self._list_namespaces(op)  # the one other operation of BaseStore

    def _direct_put(self, op: PutOp) -> _Batch | None:
        if op.value is None or self.index_spec is not None:
            return _BATCH
        check_value(op.namespace, op.key, op.value)
        item = _fresh(op)  # made before the lock: threads putting at once hold it briefly
        with self._lock:
            now = _now()  # under the lock: an item's times follow the order puts take effect in
            if self._heap:
                self._purge_expired(now)
            self._put(op, now, item)
        return None

    def _purge(self) -> datetime:
        """Drop the expired items (under the lock); returns the time it used."""
        now = _now()
        self._purge_expired(now)
        return now

    def _execute(self, ops: list[Op], embedded: Embedded | None) -> list[Result]:
        with self._lock:
            now = _now()
            self._purge_expired(now)
            self._embedded = embedded
            return [self._run(i, op, now) for i, op in enumerate(ops)]

    def sweep_ttl(self) -> int:
        """Delete the expired items now.

        Returns:
            How many items were deleted.
        """
        with self._lock:
            before = sum(len(items) for items in self._data.values())
            self._purge_expired(_now())
            return before - sum(len(items) for items in self._data.values())

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweep expired items periodically on a background thread.

        Args:
            sweep_interval_minutes: Minutes between sweeps (default: the ``ttl``
                setting's ``sweep_interval_minutes``, else 5).

        Returns:
            A future that completes when the sweeper stops.
        """
        return self._sweeper.start(interval_seconds(self.ttl_config, sweep_interval_minutes))

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the background sweeper; ``True`` when it stopped within ``timeout`` seconds."""
        return self._sweeper.stop(timeout)

    def _run(self, i: int, op: Op, now: datetime) -> Result:
        if isinstance(op, GetOp):
            return self._get(op, now)
        if isinstance(op, SearchOp):
            qvec = self._embedded.queries.get(op.query) if self._embedded and op.query else None
            return _hits(self._search(op, now, qvec))
        if isinstance(op, PutOp):
            self._put(op, now)
            if self.index_spec is not None and op.value is not None:
                docs = self._embedded.docs.get(i, []) if self._embedded else []
                self._vectors[(op.namespace, op.key)] = docs
            return None
        return self._list_namespaces(op)

    def _get(self, op: GetOp, now: datetime) -> Item | None:
        item = self._data.get(op.namespace, _NONE).get(op.key)
        if item is None:
            return None
        if op.refresh_ttl:
            self._refresh_expiry(op.namespace, op.key, now)
        return _copy(item)

    def _search(
        self, op: SearchOp, now: datetime | None, qvec: list[float] | None
    ) -> list[tuple[Item, float | None]]:
        """The page of stored items a search finds (``now``: ``None`` when no item has a TTL)."""
        prefix, size = op.namespace_prefix, len(op.namespace_prefix)
        stop = op.offset + op.limit if min(op.offset, op.limit) >= 0 and qvec is None else None
        test: Test | None = matcher(op.filter) if op.filter else None
        hits: list[Item] = []
        for namespace, items in self._data.items():
            if namespace[:size] != prefix:
                continue
            found = items.values() if test is None else (i for i in items.values() if test(i.value))
            hits.extend(found if stop is None else islice(found, stop - len(hits)))
            if stop is not None and len(hits) >= stop:
                break
        scored: list[tuple[Item, float | None]] = (
            self._rank(hits, qvec) if qvec is not None else [(item, None) for item in hits]
        )
        scored = scored[op.offset : op.offset + op.limit]
        if op.refresh_ttl and now is not None:
            for item, _ in scored:
                self._refresh_expiry(item.namespace, item.key, now)
        return scored

    def _rank(self, hits: list[Item], query: list[float]) -> list[tuple[Item, float | None]]:
        """Items with vectors by their best cosine score, then the others in storage order."""
        flat = [
            (n, v)
            for n, item in enumerate(hits)
            for _, v in self._vectors.get((item.namespace, item.key), [])
        ]
        scores = cosine(query, [v for _, v in flat])
        best: dict[int, float] = {}
        for (n, _), score in zip(flat, scores, strict=True):
            best[n] = max(score, best.get(n, score))
        order = sorted(best, key=lambda n: -best[n])
        rest = [(item, None) for n, item in enumerate(hits) if n not in best]
        ranked: list[tuple[Item, float | None]] = [(hits[n], best[n]) for n in order]
        return ranked + rest

    def _put(self, op: PutOp, now: datetime, item: Item | None = None) -> None:
        """Apply ``op`` (under the lock); ``item``: the new item, made from ``op`` already."""
        namespace, key = op.namespace, op.key
        items = self._data.get(namespace)
        if op.value is None:
            if items is not None:
                items.pop(key, None)
                if not items:
                    del self._data[namespace]
                    self._sorted = None
            self._expiry.pop((namespace, key), None)
            self._vectors.pop((namespace, key), None)
            return
        if items is None:
            items = self._data[namespace] = {}
            self._sorted = None
        old = items.get(key)
        if item is None:
            item = _fresh(op)
        item.updated_at = now
        item.created_at = now if old is None else old.created_at
        items[key] = item
        if op.ttl is None:
            if self._expiry:
                self._expiry.pop((namespace, key), None)
        else:
            self._set_expiry(namespace, key, op.ttl, now)

    def _list_namespaces(self, op: ListNamespacesOp) -> list[Namespace]:
        if self._sorted is None:
            self._sorted = sorted(self._data)
        found = self._sorted
        for condition in op.match_conditions or ():
            found = [ns for ns in found if _namespace_matches(condition, ns)]
        if op.max_depth is not None:
            found = sorted({ns[: op.max_depth] for ns in found})
        return found[op.offset : op.offset + op.limit]

    # ------------------------------------------------------------------ TTL

    def _set_expiry(self, namespace: Namespace, key: str, minutes: float, now: datetime) -> None:
        expires_at = now + timedelta(minutes=minutes)
        self._expiry[(namespace, key)] = (minutes, expires_at)
        heapq.heappush(self._heap, (expires_at, next(self._seq), namespace, key))
        if len(self._heap) > 2 * len(self._expiry) + 64:  # drop entries made stale by refreshes
            self._heap = [(at, next(self._seq), ns, k) for (ns, k), (_, at) in self._expiry.items()]
            heapq.heapify(self._heap)

    def _refresh_expiry(self, namespace: Namespace, key: str, now: datetime) -> None:
        entry = self._expiry.get((namespace, key))
        if entry is not None:
            self._set_expiry(namespace, key, entry[0], now)

    def _purge_expired(self, now: datetime) -> None:
        while self._heap and self._heap[0][0] <= now:
            expires_at, _, namespace, key = heapq.heappop(self._heap)
            entry = self._expiry.get((namespace, key))
            if entry is not None and entry[1] == expires_at:
                self._put(PutOp(namespace, key, None), now)


def _validate(op: object) -> None:
    """Reject an operation the store cannot run, before anything runs."""
    if not isinstance(op, (GetOp, SearchOp, PutOp, ListNamespacesOp)):
        raise ValueError(f"Unknown operation type: {type(op)}")
    validate_op_namespace(op)
    if isinstance(op, PutOp) and op.value is not None:
        check_value(op.namespace, op.key, op.value)
    if isinstance(op, SearchOp) and op.filter:
        check_filter(op.filter)
    if isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            if condition.match_type not in ("prefix", "suffix"):
                raise ValueError(f"Unsupported match type: {condition.match_type!r}")


def _namespace_matches(condition: MatchCondition, namespace: Namespace) -> bool:
    """Whether ``namespace`` fits a prefix/suffix pattern (``"*"`` = any label)."""
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = (
        namespace[: len(path)]
        if condition.match_type == "prefix"
        else namespace[len(namespace) - len(path) :]
    )
    return part == path or (
        "*" in path and all(want in ("*", got) for want, got in zip(path, part, strict=True))
    )


_new = object.__new__


def _fresh(op: PutOp) -> Item:
    """The item ``op`` stores (its own copy of the value), its times not set yet."""
    item: Item = _new(Item)
    item.value, item.key, item.namespace = dict(op.value or {}), op.key, op.namespace
    return item


def _copy(item: Item) -> Item:
    """A copy of a stored item for a caller: its own (shallow) copy of the value."""
    copy: Item = _new(Item)
    copy.value, copy.key, copy.namespace = dict(item.value), item.key, item.namespace
    copy.created_at, copy.updated_at = item.created_at, item.updated_at
    return copy


def _hits(found: list[tuple[Item, float | None]]) -> list[SearchItem]:
    """Search results for a caller, each with its own (shallow) copy of the value."""
    hits: list[SearchItem] = []
    for item, score in found:
        hit: SearchItem = _new(SearchItem)
        hit.value, hit.key, hit.namespace = dict(item.value), item.key, item.namespace
        hit.created_at, hit.updated_at, hit.score = item.created_at, item.updated_at, score
        hits.append(hit)
    return hits
