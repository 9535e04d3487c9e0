"""``InMemoryStore``: a dict-backed long-term store for tests and prototypes.

Data lives in the process only; each new instance starts empty. The public
API mirrors ``langgraph.store.memory.InMemoryStore``; the differences are:

* No semantic index. ``InMemoryStore(index=...)`` raises
  ``NotImplementedError``, the ``index`` argument of ``put`` is ignored, and a
  search ``query`` is ignored: results come in storage order (namespace
  first-write order, then key first-write order) with ``score=None``. This is
  what LangGraph's store does when it has no index.
* TTL is implemented (``supports_ttl`` is ``True``): an item put with ``ttl``
  (minutes, or the ``default_ttl`` of the ``ttl`` config) expires that long
  after its last write, or its last read when reads refresh TTLs. Expired
  items are never returned; they are dropped at the start of the next store
  call rather than by a background sweeper, so ``sweep_interval_minutes`` is
  ignored.
* The operations of one ``batch`` run in order, each seeing the effect of the
  ones before it, and the whole batch runs under the store's lock.
* Overwriting an item keeps its ``created_at``.
* Deleting the last item of a namespace removes the namespace from
  ``list_namespaces``.
* Items returned by reads carry a shallow copy of the stored value, so
  reassigning its keys does not change the store (nested objects are shared).
"""

from __future__ import annotations

import heapq
import itertools
import operator
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, cast

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

_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "$eq": operator.eq,
    "$ne": operator.ne,
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lt": operator.lt,
    "$lte": operator.le,
}


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
            index: Semantic-search settings; not supported, must be ``None``.
            ttl: TTL defaults (``default_ttl`` in minutes, ``refresh_on_read``).

        Raises:
            NotImplementedError: If ``index`` is given.
        """
        if index is not None:
            raise NotImplementedError(
                "plait's InMemoryStore has no semantic index; create it without `index`."
            )
        self.ttl_config = ttl
        self._data: dict[Namespace, dict[str, Item]] = {}
        self._expiry: dict[tuple[Namespace, str], tuple[float, datetime]] = {}
        self._heap: list[tuple[datetime, int, Namespace, str]] = []
        self._seq = itertools.count()
        self._lock = threading.RLock()

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
        with self._lock:
            now = _now()
            self._purge_expired(now)
            return [self._run(op, now) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async twin of :meth:`batch`.

        Args:
            ops: The operations to run.

        Returns:
            One result per operation.
        """
        return self.batch(ops)

    def _run(self, op: Op, now: datetime) -> Result:
        if isinstance(op, GetOp):
            return self._get(op, now)
        if isinstance(op, SearchOp):
            return self._search(op, now)
        if isinstance(op, PutOp):
            self._put(op, now)
            return None
        return self._list_namespaces(op)

    def _get(self, op: GetOp, now: datetime) -> Item | None:
        item = self._data.get(op.namespace, {}).get(op.key)
        if item is None:
            return None
        if op.refresh_ttl:
            self._refresh_expiry(op.namespace, op.key, now)
        return Item(
            value=dict(item.value),
            key=item.key,
            namespace=item.namespace,
            created_at=item.created_at,
            updated_at=item.updated_at,
        )

    def _search(self, op: SearchOp, now: datetime) -> list[SearchItem]:
        prefix, size = op.namespace_prefix, len(op.namespace_prefix)
        stop = op.offset + op.limit if min(op.offset, op.limit) >= 0 else None
        hits: list[Item] = []
        for namespace, items in self._data.items():
            if namespace[:size] != prefix:
                continue
            hits.extend(
                item for item in items.values() if not op.filter or _matches_filter(item.value, op.filter)
            )
            if stop is not None and len(hits) >= stop:
                break
        hits = hits[op.offset : op.offset + op.limit]
        if op.refresh_ttl:
            for item in hits:
                self._refresh_expiry(item.namespace, item.key, now)
        return [
            SearchItem(item.namespace, item.key, dict(item.value), item.created_at, item.updated_at)
            for item in hits
        ]

    def _put(self, op: PutOp, now: datetime) -> None:
        namespace, key = op.namespace, op.key
        items = self._data.get(namespace)
        if op.value is None:
            if items is not None:
                items.pop(key, None)
                if not items:
                    del self._data[namespace]
            self._expiry.pop((namespace, key), None)
            return
        old = items.get(key) if items is not None else None
        self._data.setdefault(namespace, {})[key] = Item(
            value=dict(op.value),
            key=key,
            namespace=namespace,
            created_at=old.created_at if old is not None else now,
            updated_at=now,
        )
        if op.ttl is None:
            self._expiry.pop((namespace, key), None)
        else:
            self._set_expiry(namespace, key, op.ttl, now)

    def _list_namespaces(self, op: ListNamespacesOp) -> list[Namespace]:
        conditions = op.match_conditions or ()
        found: Iterable[Namespace] = [
            ns for ns in self._data if all(_namespace_matches(cond, ns) for cond in conditions)
        ]
        if op.max_depth is not None:
            found = {ns[: op.max_depth] for ns in found}
        return sorted(found)[op.offset : op.offset + op.limit]

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


def _validate(op: Any) -> None:
    """Reject an operation the store cannot run, before anything runs."""
    if not isinstance(op, (GetOp, SearchOp, PutOp, ListNamespacesOp)):
        raise ValueError(f"Unknown operation type: {type(op)}")
    validate_op_namespace(op)
    if isinstance(op, PutOp) and op.value is not None and not isinstance(op.value, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]  # runtime guard: batch() callers may pass anything
        raise TypeError(f"Store values must be mappings, got {type(op.value).__name__}.")
    if isinstance(op, SearchOp) and op.filter:
        _check_filter(op.filter)
    if isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            if condition.match_type not in ("prefix", "suffix"):
                raise ValueError(f"Unsupported match type: {condition.match_type!r}")


def _check_filter(expected: Any) -> None:
    """Raise ``ValueError`` if a filter uses an operator the store lacks."""
    if isinstance(expected, dict):
        fields = cast("Mapping[object, Any]", expected)  # isinstance leaves the key and value types unknown
        operators = [name for name in fields if isinstance(name, str) and name.startswith("$")]
        if operators and len(operators) != len(fields):
            raise ValueError(f"A filter dict cannot mix operators and field names: {expected!r}")
        for name in operators:
            if name not in _OPERATORS:
                raise ValueError(f"Unsupported filter operator: {name!r}. Use one of {sorted(_OPERATORS)}.")
        for sub in fields.values():
            _check_filter(sub)
    elif isinstance(expected, (list, tuple)):
        for sub in cast("Sequence[Any]", expected):  # isinstance leaves the item type unknown
            _check_filter(sub)


def _matches_filter(value: Mapping[str, Any], conditions: Mapping[str, Any]) -> bool:
    """Whether a stored value satisfies every top-level filter condition."""
    return all(_matches(value.get(key), expected) for key, expected in conditions.items())


def _matches(actual: Any, expected: Any) -> bool:
    """Compare a stored value with a filter value, recursing into dicts and lists.

    A dict whose keys start with ``$`` is a set of operators; values of types
    that cannot be ordered against each other never satisfy ``$gt`` and kin.
    """
    # The isinstance checks below leave key and item types unknown: the casts only name them.
    if isinstance(expected, dict):
        fields = cast("Mapping[Any, Any]", expected)
        if any(isinstance(name, str) and name.startswith("$") for name in fields):
            return all(_apply_operator(actual, name, arg) for name, arg in fields.items())
        return isinstance(actual, dict) and _matches_filter(cast("dict[str, Any]", actual), fields)
    if isinstance(expected, (list, tuple)):
        items = cast("Sequence[Any]", expected)
        if not isinstance(actual, (list, tuple)):
            return False
        found = cast("Sequence[Any]", actual)
        return len(found) == len(items) and all(_matches(a, e) for a, e in zip(found, items, strict=True))
    return bool(actual == expected)


def _apply_operator(actual: Any, name: str, arg: Any) -> bool:
    try:
        return bool(_OPERATORS[name](actual, arg))
    except TypeError:
        return False


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
    return all(want in ("*", got) for want, got in zip(path, part, strict=True))
