"""``BaseCache``: the interface of node caches (``compile(cache=)``, ``@entrypoint(cache=)``).

A cache maps ``(namespace, key)`` pairs to values that expire after a number of
seconds (or never). Values go through a serializer (plait's safe codec unless
another is given), so a cache never stores live objects and never unpickles.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Generic, TypeVar

from plait.checkpoint.serde.base import SerializerProtocol
from plait.checkpoint.serde.jsonplus import JsonPlusSerializer

__all__ = ["BaseCache", "FullKey", "Namespace", "ValueT"]

ValueT = TypeVar("ValueT")
Namespace = tuple[str, ...]
"""Groups keys: plait uses ``("__pregel_ns_writes", <function id>[, <node>])`` per node or task."""
FullKey = tuple[Namespace, str]
"""A namespace and a key within it."""


class BaseCache(ABC, Generic[ValueT]):
    """A key-value cache with namespaces and per-entry time to live.

    Args:
        serde: Turns values into ``(tag, bytes)`` and back (default: plait's codec).
    """

    serde: SerializerProtocol

    def __init__(self, *, serde: SerializerProtocol | None = None) -> None:
        self.serde = serde if serde is not None else JsonPlusSerializer()

    @abstractmethod
    def get(self, keys: Sequence[FullKey]) -> dict[FullKey, ValueT]:
        """The values of ``keys`` that are cached and not expired (missing keys are left out)."""

    @abstractmethod
    async def aget(self, keys: Sequence[FullKey]) -> dict[FullKey, ValueT]:
        """Async :meth:`get`."""

    @abstractmethod
    def set(self, pairs: Mapping[FullKey, tuple[ValueT, int | None]]) -> None:
        """Store ``{key: (value, ttl seconds or None)}``."""

    @abstractmethod
    async def aset(self, pairs: Mapping[FullKey, tuple[ValueT, int | None]]) -> None:
        """Async :meth:`set`."""

    @abstractmethod
    def clear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        """Delete every entry of ``namespaces`` (``None``: of all namespaces)."""

    @abstractmethod
    async def aclear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        """Async :meth:`clear`."""


def check_ttl(ttl: object) -> float | None:
    """``ttl`` as seconds, or ``None`` for no expiry.

    Raises:
        ValueError: ``ttl`` is not ``None`` or a number of seconds >= 0.
    """
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not ttl >= 0:
        raise ValueError(f"A cache ttl must be None or a number of seconds >= 0, got {ttl!r}")
    return float(ttl)
