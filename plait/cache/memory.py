"""``InMemoryCache``: a node cache in this process's memory."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence

from plait.cache.base import BaseCache, FullKey, Namespace, ValueT, check_ttl
from plait.checkpoint.serde.base import SerializerProtocol

__all__ = ["InMemoryCache"]


class InMemoryCache(BaseCache[ValueT]):
    """A cache held in a dict; safe to share between threads.

    Values are stored serialized, so a cached result never aliases a live object.

    Args:
        serde: Serializer for the values (default: plait's codec).
    """

    def __init__(self, *, serde: SerializerProtocol | None = None) -> None:
        super().__init__(serde=serde)
        # namespace -> key -> (tag, bytes, expiry as time.time() or None)
        self._cache: dict[Namespace, dict[str, tuple[str, bytes, float | None]]] = {}
        self._lock = threading.RLock()

    def get(self, keys: Sequence[FullKey]) -> dict[FullKey, ValueT]:
        """The values of ``keys`` that are cached and not expired (expired ones are dropped)."""
        found: dict[FullKey, ValueT] = {}
        if not keys:
            return found
        now = time.time()
        with self._lock:
            for ns, key in keys:
                entries = self._cache.get(tuple(ns))
                entry = entries.get(key) if entries is not None else None
                if entry is None or entries is None:
                    continue
                tag, data, expiry = entry
                if expiry is not None and now >= expiry:
                    del entries[key]
                    continue
                found[(tuple(ns), key)] = self.serde.loads_typed((tag, data))
        return found

    async def aget(self, keys: Sequence[FullKey]) -> dict[FullKey, ValueT]:
        """Async :meth:`get` (memory access does not block)."""
        return self.get(keys)

    def set(self, pairs: Mapping[FullKey, tuple[ValueT, int | None]]) -> None:
        """Store ``{key: (value, ttl seconds or None)}``.

        Raises:
            ValueError: a ttl is negative or not a number.
        """
        now = time.time()
        rows: list[tuple[Namespace, str, str, bytes, float | None]] = []
        for (ns, key), (value, ttl) in pairs.items():
            seconds = check_ttl(ttl)
            tag, data = self.serde.dumps_typed(value)
            rows.append((tuple(ns), key, tag, data, None if seconds is None else now + seconds))
        with self._lock:
            for ns, key, tag, data, expiry in rows:
                self._cache.setdefault(ns, {})[key] = (tag, data, expiry)

    async def aset(self, pairs: Mapping[FullKey, tuple[ValueT, int | None]]) -> None:
        """Async :meth:`set`."""
        self.set(pairs)

    def clear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        """Delete every entry of ``namespaces`` (``None``: everything)."""
        with self._lock:
            if namespaces is None:
                self._cache.clear()
                return
            for ns in namespaces:
                self._cache.pop(tuple(ns), None)

    async def aclear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        """Async :meth:`clear`."""
        self.clear(namespaces)
