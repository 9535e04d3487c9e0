"""The filters an ``@auth.on`` handler returns, applied to a resource's metadata.

A filter is a dict, every entry of which must hold (LangGraph's ``Auth.types.FilterType``):

* ``"key": value`` or ``"key": {"$eq": value}``: the metadata has ``key``, equal to ``value``;
* ``"key": {"$contains": x}``: the metadata's ``key`` is a list holding ``x`` (every item of ``x``
  when ``x`` is a list);
* ``"$or": [f1, f2, ...]`` / ``"$and": [f1, f2, ...]`` (two filters or more): any / all of them;
  groups nest two levels deep at most.

:func:`check_filter` refuses anything else (a 500 naming the handler's mistake: an unknown operator
would otherwise match everything). :func:`permits` applies a filter to a metadata dict in Python;
the data layer turns one into a SQL condition (:mod:`plait.server._data.filters`; SQLite calls
:func:`auth_match` there).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from plait.server._wire import ApiError, as_dict, as_list, loads

__all__ = ["Filter", "auth_match", "check_filter", "permits"]

Filter = dict[str, object]
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


def _entry(metadata: Mapping[str, object], key: str, value: Any) -> bool:
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
    found: Mapping[str, object] = (
        cast("Mapping[str, object]", metadata) if isinstance(metadata, Mapping) else {}
    )
    return all(_entry(found, key, value) for key, value in filters.items())


def auth_match(metadata: str | None, filters: str) -> bool:
    """SQLite's ``plait_auth_match(metadata_json, filter_json)``: :func:`permits` on JSON text."""
    return permits(loads(filters), loads(metadata) if metadata else {})
