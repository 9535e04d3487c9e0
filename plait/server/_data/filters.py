"""The auth's filters (:mod:`plait.server._auth_filter`) as SQL conditions on a table's rows.

SQLite matches through the ``plait_auth_match`` function (:func:`~plait.server._auth_filter.auth_match`)
and, for threads, the indexed ``plait_server_thread_meta`` side table; PostgreSQL through ``jsonb``
containment and equality, which its GIN index on threads' metadata serves.
"""

from __future__ import annotations

from typing import Any

from plait.server._auth_filter import Filter
from plait.server._wire import as_dict, as_list, dumps

__all__ = ["doc_filter_sql", "filter_sql", "holds_sql", "thread_filter_sql"]

_GROUPS = ("$or", "$and")


def _json(value: Any) -> str:
    return dumps(value).decode()


def _pg(meta: str, filters: Filter) -> tuple[str, list[object]]:
    """PostgreSQL: each entry as ``jsonb`` containment (the GIN index's operator) and equality."""
    parts: list[str] = []
    params: list[object] = []
    for key, value in filters.items():
        if key in _GROUPS:
            subs = [_pg(meta, as_dict(group)) for group in as_list(value)]
            joiner = " OR " if key == "$or" else " AND "
            parts.append("(" + joiner.join(s[0] for s in subs) + ")")
            params += [p for s in subs for p in s[1]]
            continue
        ops = as_dict(value) if isinstance(value, dict) else {"$eq": value}
        for op, wanted in ops.items():
            if op == "$eq":  # (equal values contain one another: @> narrows, = decides)
                parts.append(f"{meta} @> CAST(? AS jsonb) AND {meta} -> CAST(? AS text) = CAST(? AS jsonb)")
                params += [_json({key: wanted}), key, _json(wanted)]
            else:
                items = as_list(wanted) if isinstance(wanted, list) else [wanted]
                parts.append(f"{meta} @> CAST(? AS jsonb)")
                params.append(_json({key: items}))
                for item in items:  # (@> also takes a part of an object or array: such an item held as is)
                    if isinstance(item, dict | list):
                        parts.append(_HOLDS.format(meta=meta))
                        params += [key, key, _json(item)]
    if not parts:  # an empty filter holds for every row
        return "TRUE", []
    return "(" + " AND ".join(parts) + ")", params


_HOLDS = (
    "EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof({meta} -> CAST(? AS text)) = 'array' "
    "THEN {meta} -> CAST(? AS text) ELSE '[]'::jsonb END) AS e(item) WHERE e.item = CAST(? AS jsonb))"
)


def filter_sql(dialect: str, filters: Filter, meta: str) -> tuple[str, list[object]]:
    """A SQL condition (and its parameters) true for the rows whose metadata passes ``filters``.

    Args:
        dialect: ``"sqlite"`` or ``"postgres"``.
        filters: A filter :func:`~plait.server._auth_filter.check_filter` accepted (not empty).
        meta: The SQL expression of a row's metadata: JSON text on SQLite
            (``json_extract(doc, '$.metadata')``), ``jsonb`` on PostgreSQL (``(doc::jsonb) -> 'metadata'``).
    """
    if dialect == "postgres":
        return _pg(meta, filters)
    return f"plait_auth_match({meta}, ?)", [_json(filters)]


_META_SQLITE = "json_extract(doc, '$.metadata')"
_META_PG = "((doc::jsonb) -> 'metadata')"


def doc_filter_sql(dialect: str, filters: Filter) -> tuple[str, list[object]]:
    """:func:`filter_sql` on the metadata inside a row's ``doc`` (threads, crons, assistants)."""
    return filter_sql(dialect, filters, _META_PG if dialect == "postgres" else _META_SQLITE)


def holds_sql(dialect: str, metadata: dict[str, object]) -> tuple[str, list[object]]:
    """A SQL condition (and its parameters) true for the rows whose ``doc``'s metadata holds each key
    of ``metadata`` with an equal value (a ``None`` value: the key absent or null), as
    ``stored.get(key) == value`` answers in Python; ``("", [])`` when ``metadata`` is empty."""
    if not metadata:
        return "", []
    if dialect != "postgres":
        return f"plait_meta_holds({_META_SQLITE}, ?)", [_json(metadata)]
    present = {k: v for k, v in metadata.items() if v is not None}
    parts = [f"{_META_PG} @> CAST(? AS jsonb)"] if present else []
    params: list[object] = [_json(present)] if present else []
    for key, value in metadata.items():  # (@> also takes a part of a nested value: each equal)
        if value is None:
            parts.append(f"COALESCE({_META_PG} -> CAST(? AS text), 'null'::jsonb) = 'null'::jsonb")
            params.append(str(key))
        else:
            parts.append(f"{_META_PG} -> CAST(? AS text) = CAST(? AS jsonb)")
            params += [str(key), _json(value)]
    return "(" + " AND ".join(parts) + ")", params


_PICK = "thread_id IN (SELECT thread_id FROM plait_server_thread_meta WHERE key = ? AND "


def _side_table(key: str, value: Any) -> tuple[str, list[object]] | None:
    """SQLite: ``key == value`` through the threads' (key, value) side table (indexed), for a scalar."""
    if value is None:
        return _PICK + "value IS NULL AND type = 'null')", [key]
    if isinstance(value, bool):
        return _PICK + "value = ? AND type = ?)", [key, int(value), "true" if value else "false"]
    if isinstance(value, int | float):
        return _PICK + "value = ? AND type IN ('integer', 'real'))", [key, value]
    if isinstance(value, str):
        return _PICK + "value = ? AND type = 'text')", [key, value]
    return None


def thread_filter_sql(dialect: str, filters: Filter) -> tuple[str, list[object]]:
    """:func:`filter_sql` on ``plait_server_threads`` rows, served by their metadata index (the GIN
    index on PostgreSQL; on SQLite the side table for each top-level equality with a scalar)."""
    if dialect == "postgres":
        return filter_sql(dialect, filters, _META_PG)
    parts: list[str] = []
    params: list[object] = []
    rest: Filter = {}
    for key, value in filters.items():
        wanted = as_dict(value).get("$eq") if isinstance(value, dict) else value
        plain = not isinstance(value, dict) or set(as_dict(value)) == {"$eq"}
        found = _side_table(key, wanted) if plain and key not in _GROUPS else None
        if found is None:
            rest[key] = value
        else:
            parts.append(found[0])
            params += found[1]
    if rest:
        sql, more = filter_sql(dialect, rest, _META_SQLITE)
        parts.append(sql)
        params += more
    return "(" + " AND ".join(parts) + ")", params
