"""``max_concurrency`` (a run config key): how many tasks of one step run at the same time."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from plait.errors import InvalidConfigError

__all__ = ["max_concurrency"]


def max_concurrency(config: Mapping[str, Any] | None) -> int | None:
    """The config's ``max_concurrency`` (``None``: no limit).

    Raises:
        InvalidConfigError: it is not a positive int.
    """
    if not isinstance(config, Mapping):  # no config (a malformed one is refused elsewhere)
        return None
    limit = config.get("max_concurrency")
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidConfigError(
            f"max_concurrency must be a positive int (or None: no limit), got {limit!r}",
            field="max_concurrency",
            value=limit,
        )
    return limit
