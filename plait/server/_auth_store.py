"""Custom auth on the store routes: what an ``@auth.on.store`` handler leaves in the action's value.

A handler may move an item into another namespace (``value["namespace"] = (ctx.user.identity,
*value["namespace"])``, LangGraph's per-user store): the route reads the namespace back, checked
again (a label is a non-empty string without ``.``: 422 otherwise). A search handler's filter joins
the request's filter on the items' values (equality only: the store's filters have no
``$contains``, ``$or`` or ``$and``).
"""

from __future__ import annotations

from typing import Any, Literal, cast

from plait.server._auth_filter import Filter
from plait.server._wire import ApiError, as_dict

__all__ = ["store_filter", "store_namespace"]


def store_namespace(
    value: dict[str, object], key: str = "namespace", *, empty: bool = True
) -> tuple[str, ...]:
    """``value[key]`` as a namespace (``None``: ``()``), once the handler had it.

    Raises:
        ApiError: 422, a label is not a non-empty string without ``.`` (or the namespace is empty
            when ``empty`` is false).
    """
    raw = value.get(key)
    sequence = isinstance(raw, (list, tuple))
    labels = list(cast("list[object] | tuple[Any, ...]", raw)) if sequence else None
    if raw is not None and labels is None:
        raise ApiError(
            422, f"{key} must be a list of labels, got {raw!r:.80} (from the auth's store handler?)"
        )
    for label in labels or []:
        if not isinstance(label, str) or not label or "." in label:
            raise ApiError(422, f"Namespace label {label!r} must be a non-empty string without periods")
    if not labels and not empty:
        raise ApiError(422, f"{key} must not be empty")
    return tuple(str(label) for label in labels or [])


def store_filter(given: dict[str, object] | None, auth: Filter | None) -> dict[str, object] | Literal[False]:
    """The request's filter on the items' values and the auth's, both to hold (``False``: they
    cannot both hold, nothing matches; ``{}``: no filter).

    Raises:
        ApiError: 500, the auth's filter uses an operator the store's filters do not have.
    """
    merged = dict(given or {})
    for key, condition in (auth or {}).items():
        ops = as_dict(condition) if isinstance(condition, dict) else {"$eq": condition}
        if key in ("$or", "$and") or set(ops) != {"$eq"}:
            raise ApiError(
                500,
                f"the auth's store handler returned the filter {auth!r:.120}; a store search takes "
                "equality only (key: value), on the items' values",
            )
        wanted = ops["$eq"]
        have = merged.get(key)
        if key not in merged:
            merged[key] = {"$eq": wanted}
        elif isinstance(have, dict) and have and all(str(k).startswith("$") for k in as_dict(have)):
            ops_have = as_dict(have)
            if "$eq" in ops_have and ops_have["$eq"] != wanted:
                return False
            merged[key] = {**ops_have, "$eq": wanted}
        elif have != wanted:
            return False
    return merged
