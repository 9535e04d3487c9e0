"""Time to live of threads and store items: the config's defaults, a request's ``ttl``, expiry times.

A thread's ``ttl`` (minutes, or ``{"strategy": "delete" | "keep_latest", "ttl": minutes}``)
counts from when it is set (the thread's creation, or the update that sets it): once it has
passed, a sweep deletes the thread (its runs, crons and checkpoints), or with
``keep_latest`` prunes its checkpoints to the newest one and clears the ttl. A store item's
``ttl`` counts from its last write, and from each read that refreshes it (``refresh_ttl``,
by default the config's ``refresh_on_read``, else true); an expired item is never read,
before or after the sweep that deletes it.

The config (``langgraph.json`` keys, as LangGraph's platform reads them)::

    "checkpointer": {"ttl": {"strategy": "delete", "default_ttl": 43200, "sweep_interval_minutes": 60,
                             "sweep_limit": 1000}},
    "store": {"ttl": {"default_ttl": 10080, "refresh_on_read": true, "sweep_interval_minutes": 60}}
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

from plait.server._wire import ApiError, as_dict, as_float
from plait.store._ttl import DEFAULT_SWEEP_MINUTES

__all__ = [
    "MAX_MINUTES",
    "ThreadTtl",
    "expiry",
    "store_ttl_config",
    "sweep_seconds",
    "thread_ttl",
    "thread_ttl_config",
    "ttl_minutes",
]

STRATEGIES = ("delete", "keep_latest")
_THREAD_KEYS = frozenset({"strategy", "default_ttl", "sweep_interval_minutes", "sweep_limit"})
_STORE_KEYS = frozenset({"default_ttl", "refresh_on_read", "sweep_interval_minutes"})


class ThreadTtl(NamedTuple):
    """What happens to a thread (``strategy``) once ``minutes`` have passed."""

    strategy: str
    minutes: float


MAX_MINUTES = 100 * 365 * 24 * 60
"""The longest ttl taken: a hundred years."""


def ttl_minutes(value: Any, what: str) -> float:
    """``value``, a positive number of minutes up to :data:`MAX_MINUTES`, as a float; else ValueError naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_MINUTES:
        raise ValueError(
            f"{what} must be a positive number of minutes (at most {MAX_MINUTES}), got {value!r}"
        )
    return float(value)


def expiry(minutes: float | None, now: float | None = None) -> float | None:
    """The epoch time ``minutes`` from ``now`` (``None``: never)."""
    if minutes is None:
        return None
    return (time.time() if now is None else now) + minutes * 60


def thread_ttl(raw: Any, default: dict[str, object] | None = None) -> ThreadTtl | None:
    """A request's thread ``ttl`` (else the config's ``default_ttl``), or ``None`` for none.

    Raises:
        ApiError: 422, a ``ttl`` that is not minutes or ``{"strategy", "ttl"}``.
    """
    config = default or {}
    if raw is None:
        if config.get("default_ttl") is None:
            return None
        return ThreadTtl(str(config.get("strategy") or "delete"), as_float(config["default_ttl"]))
    spec = as_dict(raw) if isinstance(raw, dict) else {"ttl": raw}
    unknown = set(spec) - {"strategy", "ttl"}
    strategy = spec.get("strategy") or "delete"
    try:
        if unknown:
            raise ValueError(f"ttl takes 'strategy' and 'ttl', not {sorted(unknown)}")
        if strategy not in STRATEGIES:
            raise ValueError(f"ttl strategy must be one of {list(STRATEGIES)}, got {strategy!r}")
        return ThreadTtl(str(strategy), ttl_minutes(spec.get("ttl"), "ttl"))
    except ValueError as exc:
        raise ApiError(422, str(exc)) from None


def _section(raw: Any, keys: frozenset[str], where: str) -> dict[str, object]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ValueError(f"{where} must be an object")
    config = as_dict(raw)
    unknown = sorted(set(config) - keys)
    if unknown:
        raise ValueError(f"{where}: {unknown} not supported by plait serve; it reads {sorted(keys)}")
    for key in ("default_ttl", "sweep_interval_minutes"):
        if config.get(key) is not None:
            ttl_minutes(config[key], f"{where}.{key}")
    return dict(config)


def thread_ttl_config(raw: Any, where: str) -> dict[str, object]:
    """The config's ``checkpointer.ttl``, checked.

    Raises:
        ValueError: an unknown key, a strategy plait does not have, or a non-positive number.
    """
    config = _section(raw, _THREAD_KEYS, where)
    limit = config.get("sweep_limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"{where}.sweep_limit must be a positive integer, got {limit!r}")
    strategy = config.get("strategy")
    if strategy is not None and strategy not in STRATEGIES:
        raise ValueError(f"{where}.strategy must be one of {list(STRATEGIES)}, got {strategy!r}")
    return config


def store_ttl_config(raw: Any, where: str) -> dict[str, object]:
    """The config's ``store.ttl``, checked.

    Raises:
        ValueError: an unknown key, a non-positive number or a ``refresh_on_read`` that is no bool.
    """
    config = _section(raw, _STORE_KEYS, where)
    refresh = config.get("refresh_on_read")
    if refresh is not None and not isinstance(refresh, bool):
        raise ValueError(f"{where}.refresh_on_read must be true or false, got {refresh!r}")
    return config


def sweep_seconds(*configs: dict[str, object]) -> float:
    """Seconds between sweeps: the shortest interval a config names, else :data:`DEFAULT_SWEEP_MINUTES`."""
    named = [as_float(c["sweep_interval_minutes"]) for c in configs if c.get("sweep_interval_minutes")]
    return 60 * min(named, default=DEFAULT_SWEEP_MINUTES)
