"""The filters an ``@auth.on`` handler returns, applied to a resource's metadata.

A filter is a dict, every entry of which must hold (LangGraph's ``Auth.types.FilterType``):

* ``"key": value`` or ``"key": {"$eq": value}``: the metadata has ``key``, equal to ``value``;
* ``"key": {"$contains": x}``: the metadata's ``key`` is a list holding ``x`` (every item of ``x``
  when ``x`` is a list);
* ``"$or": [f1, f2, ...]`` / ``"$and": [f1, f2, ...]`` (two filters or more): any / all of them;
  groups nest two levels deep at most.

:func:`check_filter` refuses anything else (a 500 naming the handler's mistake: an unknown operator
would otherwise match everything). :func:`permits` applies a filter to a metadata dict in Python,
:func:`filter_sql` and :func:`thread_filter_sql` as a SQL condition (SQLite through the
``plait_auth_match`` function, PostgreSQL through ``jsonb`` containment and equality, which its
GIN index on threads' metadata serves).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from plait.server._wire import ApiError, as_dict, as_list, dumps, loads

__all__ = ["Filter", "auth_match", "check_filter", "filter_sql", "permits", "thread_filter_sql"]

Filter = dict[str, Any]
"""A checked filter (see the module docstring)."""

_GROUPS = ("$or", "$and")
_OPS = ("$eq", "$contains")
MAX_DEPTH = 2
"""How deep ``$or``/``$and`` groups may nest (as LangGraph's server)."""


def _refuse(detail: str) -> ApiError:
    return ApiError(500, f"Your auth handler returned an invalid filter: {detail}. Check its return value.")


def check_filter(raw: Any, depth: int = 0) -> Filter:
    """``raw`` when it is a filter of the module docstring; an :class:`ApiError` 500 otherwise."""
    if depth > MAX_DEPTH:
        raise _refuse(f"$or/$and groups nest more than {MAX_DEPTH} levels deep")
    if not isinstance(raw, dict):
        raise _refuse(f"a filter is a dict, got {type(raw).__name__}")
    found = as_dict(raw)
    for key, value in found.items():
        if not isinstance(cast("Any", key), str):
            raise _refuse(f"metadata keys are strings, got {key!r}")
        if key in _GROUPS:
            groups = as_list(value)
            if len(groups) < 2:
                raise _refuse(f"{key} takes a list of at least 2 filters, got {value!r:.80}")
            for group in groups:
                check_filter(group, depth + 1)
        elif isinstance(value, dict):
            ops = as_dict(value)
            if not ops or not set(ops) <= set(_OPS):
                raise _refuse(f"{key}: operators are {list(_OPS)}, got {sorted(map(str, ops))}")
    return found


def _holds(have: Any, item: Any) -> bool:
    return any(_equal(x, item) for x in as_list(have))


def _entry(metadata: Mapping[str, Any], key: str, value: Any) -> bool:
    if key == "$or":
        return any(permits(group, metadata) for group in value)
    if key == "$and":
        return all(permits(group, metadata) for group in value)
    if key not in metadata:
        return False
    have = metadata[key]
    ops = as_dict(value) if isinstance(value, dict) else {"$eq": value}
    for op, wanted in ops.items():
        if op == "$eq" and not _equal(have, wanted):
            return False
        if op == "$contains":
            items = as_list(wanted) if isinstance(wanted, list) else [wanted]
            if not isinstance(have, list) or not all(_holds(have, item) for item in items):
                return False
    return True


def _equal(have: Any, wanted: Any) -> bool:
    """JSON equality: ``True`` is not ``1`` (as PostgreSQL's ``jsonb`` compares them)."""
    if isinstance(have, bool) or isinstance(wanted, bool):
        return type(have) is type(wanted) and have == wanted
    return bool(have == wanted)


def permits(filters: Filter | None, metadata: Any) -> bool:
    """Whether ``metadata`` (a resource's metadata dict) passes ``filters`` (``None``: no filter)."""
    if not filters:
        return True
    found: Mapping[str, Any] = cast("Mapping[str, Any]", metadata) if isinstance(metadata, Mapping) else {}
    return all(_entry(found, key, value) for key, value in filters.items())


def auth_match(metadata: str | None, filters: str) -> bool:
    """SQLite's ``plait_auth_match(metadata_json, filter_json)``: :func:`permits` on JSON text."""
    return permits(loads(filters), loads(metadata) if metadata else {})


def _json(value: Any) -> str:
    return dumps(value).decode()


def _pg(meta: str, filters: Filter) -> tuple[str, list[Any]]:
    """PostgreSQL: each entry as ``jsonb`` containment (the GIN index's operator) and equality."""
    parts: list[str] = []
    params: list[Any] = []
    for key, value in filters.items():
        if key in _GROUPS:
            subs = [_pg(meta, group) for group in value]
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
    return "(" + " AND ".join(parts) + ")", params


def filter_sql(dialect: str, filters: Filter, meta: str) -> tuple[str, list[Any]]:
    """A SQL condition (and its parameters) true for the rows whose metadata passes ``filters``.

    Args:
        dialect: ``"sqlite"`` or ``"postgres"``.
        filters: A filter :func:`check_filter` accepted (not empty).
        meta: The SQL expression of a row's metadata: JSON text on SQLite
            (``json_extract(doc, '$.metadata')``), ``jsonb`` on PostgreSQL (``(doc::jsonb) -> 'metadata'``).
    """
    if dialect == "postgres":
        return _pg(meta, filters)
    return f"plait_auth_match({meta}, ?)", [_json(filters)]


_THREAD_META_SQLITE = "json_extract(doc, '$.metadata')"
_THREAD_META_PG = "((doc::jsonb) -> 'metadata')"
_PICK = "thread_id IN (SELECT thread_id FROM plait_server_thread_meta WHERE key = ? AND "


def _side_table(key: str, value: Any) -> tuple[str, list[Any]] | None:
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


def thread_filter_sql(dialect: str, filters: Filter) -> tuple[str, list[Any]]:
    """:func:`filter_sql` on ``plait_server_threads`` rows, served by their metadata index (the GIN
    index on PostgreSQL; on SQLite the side table for each top-level equality with a scalar)."""
    if dialect == "postgres":
        return filter_sql(dialect, filters, _THREAD_META_PG)
    parts: list[str] = []
    params: list[Any] = []
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
        sql, more = filter_sql(dialect, rest, _THREAD_META_SQLITE)
        parts.append(sql)
        params += more
    return "(" + " AND ".join(parts) + ")", params
