"""The SQL stores' logic, written once for SQLite and PostgreSQL, sync and async.

A batch is run by generators that *yield* :class:`Sql` statements and receive
their rows: the sync stores execute them on a connection, the async ones await
them, and nothing here does I/O. Embeddings are computed before the batch's
transaction opens (:meth:`IndexSpec.embed`), so a slow embedder holds no lock.
What differs between databases (DDL, placeholders, vector search) is a
:class:`Dialect` in ``sqlite/_sql.py`` and ``postgres/_sql.py``.

Operations run in order in one transaction, each seeing the effects of those
before it (as in ``InMemoryStore``); runs of consecutive puts are written in
bulk, the last put of a key winning.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from plait.store._codec import encode_value
from plait.store._embed import Embedded, IndexSpec
from plait.store._filter import Term, check_filter, scalar_terms
from plait.store._search import SearchDialect, among, run_search
from plait.store._statement import Rows, Sql, Step, ns_text
from plait.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchOp,
    validate_op_namespace,
)

__all__ = ["Dialect", "Engine", "Rows", "Sql", "Step"]

ITEM_COLUMNS = "s.prefix, s.key, s.value, s.created_at, s.updated_at"
SEEKS = 64
"""``list_namespaces`` finds up to this many namespaces by an index seek each, then scans instead."""
GETS = 500
"""Most consecutive gets of a batch read by one statement."""


class Dialect(SearchDialect, Protocol):
    """What a database contributes: SQL text and value conversions (a search's share in :class:`SearchDialect`)."""

    safe_filter_keys: bool
    """Whether search filter keys must be plain names (LangGraph's SQLite store), see :func:`check_filter`."""

    def put_rows(self, rows: list[tuple[Any, ...]]) -> list[Sql]:
        """Upserts of ``(prefix, key, json, now, expires_at, ttl_minutes)``."""
        ...

    def put_vectors(self, rows: list[tuple[str, str, str, list[float]]]) -> list[Sql]:
        """Inserts of ``(prefix, key, field, vector)``."""
        ...

    def drop_vectors(self, keys: list[tuple[str, str]]) -> list[Sql]:
        """Delete the vectors of these items."""
        ...

    def lock(self, keys: list[tuple[str, str]]) -> list[Sql]:
        """Lock the existing rows of these items in key order (nothing where writes lock the database)."""
        ...

    def sweep(self, now: Any) -> Sql:
        """Delete the items expired at ``now``, ``RETURNING 1`` per item."""
        ...


@dataclass
class Prepared:
    """A validated batch: operations and their encoded values."""

    ops: list[Op]
    values: dict[int, str] = field(default_factory=dict[int, str])
    alone: bool = False
    """One operation whose statements each stand alone: no transaction is needed around them
    (a put without an index is one statement; reads only read, or restart TTL clocks)."""


class Engine:
    """Runs batches of store operations as SQL, for any :class:`Dialect`."""

    def __init__(self, dialect: Dialect, index: IndexSpec | None, order: str = "updated") -> None:
        """Bind a dialect, the store's semantic index and its order of unranked search results.

        Args:
            dialect: The database's SQL.
            index: The semantic index, if any.
            order: ``"updated"`` or ``"written"`` (see :mod:`plait.store._search`).
        """
        self.d = dialect
        self.index = index
        self.order = order

    def prepare(self, ops: Sequence[Any]) -> Prepared:
        """Check every operation (and encode every value) before anything runs.

        Raises:
            InvalidNamespaceError: On a bad namespace.
            InvalidValueError: On a value that is not a JSON object.
            ValueError: On an unknown operation, filter operator or a negative limit.
        """
        prepared = Prepared(list(ops))
        for i, op in enumerate(prepared.ops):
            if not isinstance(op, (GetOp, SearchOp, PutOp, ListNamespacesOp)):  # pyright: ignore[reportUnnecessaryIsInstance]  # runtime guard
                raise ValueError(f"Unknown operation type: {type(op)}")
            validate_op_namespace(op)
            if isinstance(op, PutOp) and op.value is not None:
                prepared.values[i] = encode_value(op.namespace, op.key, op.value)
            elif isinstance(op, (SearchOp, ListNamespacesOp)):
                if op.limit < 0 or op.offset < 0:
                    raise ValueError(
                        f"limit and offset must be >= 0, got limit={op.limit}, offset={op.offset}"
                    )
                if isinstance(op, SearchOp) and op.filter:
                    check_filter(op.filter, safe_keys=self.d.safe_filter_keys)
            if isinstance(op, ListNamespacesOp):
                for cond in op.match_conditions or ():
                    if cond.match_type not in ("prefix", "suffix"):
                        raise ValueError(f"Unsupported match type: {cond.match_type!r}")
        prepared.alone = self.alone(prepared.ops)
        return prepared

    def alone(self, ops: Sequence[Op], *, shared: bool = False) -> bool:
        """Whether a batch needs no transaction around its statements (each commits by itself).

        So it is for one operation, unless it is a put with an index (several statements) or a
        ranked search (several reads of one snapshot), and for puts that all write a value
        without an index (one statement). ``shared``: the operations are the one-operation
        batches of several callers, whose reads need no common snapshot: reads only need none.
        """
        if len(ops) == 1:
            op = ops[0]
            if isinstance(op, PutOp):
                return self.index is None
            return not (isinstance(op, SearchOp) and op.query and self.index is not None)
        if self.index is None and all(isinstance(op, PutOp) and op.value is not None for op in ops):
            return True
        reads = all(
            not isinstance(op, PutOp)
            and not (isinstance(op, SearchOp) and op.query and self.index is not None)
            for op in ops
        )
        return shared and reads

    def run(self, prepared: Prepared, embedded: Embedded | None, now: float) -> Step:
        """Execute a prepared batch; returns one result per operation."""
        results: list[Result] = []
        ops = prepared.ops
        i = 0
        while i < len(ops):
            op = ops[i]
            if isinstance(op, PutOp):
                end = i
                while end < len(ops) and isinstance(ops[end], PutOp):
                    end += 1
                yield from self._puts(prepared, range(i, end), embedded, now)
                results.extend([None] * (end - i))
                i = end
                continue
            if isinstance(op, GetOp):
                end = i + 1
                while end < len(ops) and isinstance(ops[end], GetOp) and end - i < GETS:
                    end += 1
                if end - i > 1:  # consecutive gets: one statement reads them all
                    results.extend((yield from self._gets(ops[i:end], now)))  # type: ignore[arg-type]  # all GetOps
                    i = end
                    continue
                results.append((yield from self._get(op, now)))
            elif isinstance(op, SearchOp):
                qvec = embedded.queries.get(op.query) if embedded and op.query else None
                results.append((yield from run_search(self, op, qvec, now)))
            elif isinstance(op, ListNamespacesOp):  # pyright: ignore[reportUnnecessaryIsInstance]
                results.append((yield from self._list(op, now)))
            i += 1
        return results

    def _puts(self, prepared: Prepared, span: range, embedded: Embedded | None, now: float) -> Step:
        latest: dict[tuple[str, str], int] = {}
        for i in span:
            op = prepared.ops[i]
            assert isinstance(op, PutOp)  # noqa: S101 - the caller groups puts
            latest[(ns_text(op.namespace), op.key)] = i
        # in key order, so that concurrent batches lock rows in one order (no deadlocks)
        deletes = sorted(k for k, i in latest.items() if i not in prepared.values)
        upserts = sorted((k, i) for k, i in latest.items() if i in prepared.values)
        p, when = self.d.p, self.d.now(now)
        if deletes and upserts:  # two statements: lock their rows in one order first
            for sql in self.d.lock(sorted(latest)):
                _ = yield sql
        if deletes:
            yield Sql(f"DELETE FROM plait_store WHERE prefix = {p} AND key = {p}", deletes, many=True)
        rows: list[tuple[Any, ...]] = []
        for (prefix, key), i in upserts:
            ttl = _ttl(prepared.ops[i])
            expires = self.d.now(now + ttl * 60) if ttl is not None else None
            rows.append((prefix, key, prepared.values[i], when, expires, ttl))
        for sql in self.d.put_rows(rows):
            _ = yield sql
        if self.index is not None and upserts:
            for sql in self.d.drop_vectors([k for k, _ in upserts]):
                _ = yield sql
            docs = embedded.docs if embedded else {}
            vectors = [(pk[0], pk[1], f, v) for pk, i in upserts for f, v in docs.get(i, [])]
            for sql in self.d.put_vectors(vectors) if vectors else []:
                _ = yield sql

    def _get(self, op: GetOp, now: float) -> Step:
        p = self.d.p
        alive, params = self.d.alive(self.d.now(now))
        rows = yield Sql(
            f"SELECT {ITEM_COLUMNS}, s.ttl_minutes FROM plait_store s "
            f"WHERE s.prefix = {p} AND s.key = {p} AND {alive}",
            [ns_text(op.namespace), op.key, *params],
        )
        if not rows:
            return None
        if op.refresh_ttl and rows[0][5] is not None:
            for sql in self.d.refresh([(rows[0][0], rows[0][1])], self.d.now(now)):
                _ = yield sql
        return self.item(rows[0])

    def _gets(self, ops: list[GetOp], now: float) -> Step:
        """Several gets in one statement (and one TTL refresh for those of them that have a TTL)."""
        alive, params = self.d.alive(self.d.now(now))
        keys = list(dict.fromkeys((ns_text(op.namespace), op.key) for op in ops))
        rows = yield Sql(
            f"{among(self.d.p, len(keys))} SELECT {ITEM_COLUMNS}, s.ttl_minutes FROM w "
            f"JOIN plait_store s ON s.prefix = w.p AND s.key = w.k WHERE {alive}",
            [x for key in keys for x in key] + params,
        )
        found = {(row[0], row[1]): row for row in rows}
        wanted = [found.get((ns_text(op.namespace), op.key)) for op in ops]
        timed = sorted(
            {
                (r[0], r[1])
                for op, r in zip(ops, wanted, strict=True)
                if op.refresh_ttl and r and r[5] is not None
            }
        )
        if timed:
            for sql in self.d.refresh(timed, self.d.now(now)):
                _ = yield sql
        items: list[Item | None] = []
        seen: set[int] = set()
        for row in wanted:
            item = None if row is None else self.item(row)
            if item is not None and id(row) in seen:  # the same item got twice: each its own value
                item.value = copy.deepcopy(item.value)
            seen.add(id(row))
            items.append(item)
        return items

    def item(self, row: tuple[Any, ...]) -> Item:
        """An :class:`Item` from ``prefix, key, value, created_at, updated_at`` columns."""
        return Item(
            namespace=tuple(row[0].split(".")),
            key=row[1],
            value=self.d.value(row[2]),
            created_at=self.d.timestamp(row[3]),
            updated_at=self.d.timestamp(row[4]),
        )

    def _list(self, op: ListNamespacesOp, now: float) -> Step:
        """The namespaces: found by one index seek each, or (past :data:`SEEKS` of them) by one scan."""
        p = self.d.p
        where, params = self.d.alive(self.d.now(now))
        for cond in op.match_conditions or ():
            literal = tuple(cond.path[: cond.path.index("*")] if "*" in cond.path else cond.path)
            # a prefix: the text range that holds its namespaces ('/' follows '.'); _fits decides below
            if cond.match_type == "prefix" and literal:
                where = f"s.prefix >= {p} AND s.prefix < {p} AND {where}"
                params = [ns_text(literal), ns_text(literal) + "/", *params]
        rows = yield Sql(
            "WITH RECURSIVE n(prefix) AS ("
            f"SELECT (SELECT MIN(s.prefix) FROM plait_store s WHERE {where}) UNION ALL "
            f"SELECT (SELECT MIN(s.prefix) FROM plait_store s WHERE s.prefix > n.prefix AND {where}) "
            f"FROM n WHERE n.prefix IS NOT NULL) SELECT prefix FROM n WHERE prefix IS NOT NULL LIMIT {p}",
            [*params, *params, SEEKS],
        )
        if len(rows) == SEEKS:  # many namespaces: scanning the items costs less than a seek per namespace
            rows = yield Sql(f"SELECT DISTINCT s.prefix FROM plait_store s WHERE {where}", params)
        found = {tuple(r[0].split(".")) for r in rows}
        found = {
            ns
            for ns in found
            if all(_fits(c.match_type, tuple(c.path), ns) for c in op.match_conditions or ())
        }
        if op.max_depth is not None:
            found = {ns[: op.max_depth] for ns in found}
        return sorted(found)[op.offset : op.offset + op.limit]

    def sweep(self, now: float) -> Step:
        """Delete expired items; returns how many went."""
        rows = yield self.d.sweep(self.d.now(now))
        return len(rows)


def _fits(kind: str, path: tuple[str, ...], ns: tuple[str, ...]) -> bool:
    if len(path) > len(ns):
        return False
    part = ns[: len(path)] if kind == "prefix" else ns[len(ns) - len(path) :]
    return all(want in ("*", got) for want, got in zip(path, part, strict=True))


def _ttl(op: Op) -> float | None:
    assert isinstance(op, PutOp)  # noqa: S101 - only puts have a ttl
    return None if op.ttl is None else float(op.ttl)


def terms_or_none(op: SearchOp) -> list[Term] | None:
    """The SQL terms of a search's filter (``None``: evaluate it in Python)."""
    return scalar_terms(op.filter)
