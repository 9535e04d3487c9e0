"""Node caches: :mod:`plait.cache.base` (the interface), ``.memory`` and ``.sqlite`` (the backends)."""

from __future__ import annotations

__all__: list[str] = []
