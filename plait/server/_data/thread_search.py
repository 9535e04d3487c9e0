"""The SQL of ``/threads/search`` and ``/threads/count``: filters, order and page run in the database.

Metadata and values match key by key (each wanted top-level key holds an equal value). Metadata is
served by an index: PostgreSQL's GIN index on ``doc::jsonb -> 'metadata'`` (``@>``, then exact
equality per key), SQLite's ``plait_server_thread_meta`` side table (key, value) -> thread.
"""

from __future__ import annotations

from typing import Any

from plait.server._wire import ApiError, dumps

__all__ = ["SORTS", "order_sql", "where_sql"]

SORTS = ("thread_id", "status", "created_at", "updated_at", "state_updated_at")

_PG_META = "(doc::jsonb) -> 'metadata'"


def _json(value: Any) -> str:
    return dumps(value).decode()


def _sqlite_meta(key: str, value: Any) -> tuple[str, list[object]]:
    """One ``key == value`` metadata condition on the side table (its index on (key, value))."""
    pick = "thread_id IN (SELECT thread_id FROM plait_server_thread_meta WHERE key = ? AND "
    if value is None:
        return pick + "value IS NULL AND type = 'null')", [key]
    if isinstance(value, bool):
        return pick + "value = ? AND type = ?)", [key, int(value), "true" if value else "false"]
    if isinstance(value, int | float):
        return pick + "value = ? AND type IN ('integer', 'real'))", [key, value]
    if isinstance(value, str):
        return pick + "value = ? AND type = 'text')", [key, value]
    kind = "object" if isinstance(value, dict) else "array"
    return pick + "type = ? AND plait_json_equal(value, ?))", [key, kind, _json(value)]


def _metadata(dialect: str, metadata: dict[str, object]) -> tuple[list[str], list[object]]:
    if not metadata:
        return [], []
    if dialect != "postgres":
        parts = [_sqlite_meta(str(k), v) for k, v in metadata.items()]
        return [p[0] for p in parts], [x for p in parts for x in p[1]]
    where, params = [f"{_PG_META} @> CAST(? AS jsonb)"], list[object]([_json(metadata)])
    for key, value in metadata.items():  # @> also takes nested subsets: each key's value equal
        where.append(f"{_PG_META} -> CAST(? AS text) = CAST(? AS jsonb)")
        params += [str(key), _json(value)]
    return where, params


def _values(dialect: str, values: dict[str, object]) -> tuple[list[str], list[object]]:
    if not values:
        return [], []
    if dialect != "postgres":
        return ["plait_json_subset(vals, ?)"], [_json(values)]
    where, params = ["vals IS NOT NULL"], list[object]()
    for key, value in values.items():
        where.append("(vals::jsonb) -> CAST(? AS text) = CAST(? AS jsonb)")
        params += [str(key), _json(value)]
    return where, params


def where_sql(
    dialect: str,
    metadata: dict[str, object],
    values: dict[str, object],
    status: str | None,
    ids: list[str] | None,
) -> tuple[str, list[object]]:
    """`` WHERE ...`` (or ``""``) and its parameters for a search's filters."""
    where, params = _metadata(dialect, metadata)
    more, more_params = _values(dialect, values)
    where, params = where + more, params + more_params
    if status is not None:
        where.append("status = ?")
        params.append(status)
    if ids is not None:
        wanted = list(dict.fromkeys(ids))
        where.append(f"thread_id IN ({', '.join('?' * len(wanted))})" if wanted else "1 = 0")
        params += wanted
    return (" WHERE " + " AND ".join(where) if where else ""), params


def order_sql(dialect: str, sort_by: str, order: str) -> str:
    """`` ORDER BY ...`` for a search (code point order, as the strings compare in Python)."""
    if sort_by not in SORTS:
        raise ApiError(422, f"sort_by must be {', '.join(SORTS[:-1])} or {SORTS[-1]}, got {sort_by!r}")
    if order not in ("asc", "desc"):
        raise ApiError(422, f"sort_order must be 'asc' or 'desc', got {order!r}")
    postgres = dialect == "postgres"
    column = sort_by
    if sort_by == "state_updated_at":
        column = (
            "((doc::jsonb) ->> 'state_updated_at')" if postgres else "json_extract(doc, '$.state_updated_at')"
        )
    collate = ' COLLATE "C"' if postgres else ""
    tie = "" if sort_by == "thread_id" else f", thread_id{collate}"
    return f" ORDER BY {column}{collate} {order.upper()}{tie}"
