"""Long-term stores: memory that outlives a single thread.

The interface lives in :mod:`plait.store.base` and the in-memory
implementation in :mod:`plait.store.memory`; the main names are re-exported
here for convenience.
"""

from __future__ import annotations

from plait.store.base import BaseStore, InvalidNamespaceError, Item, SearchItem
from plait.store.memory import InMemoryStore

__all__ = ["BaseStore", "InMemoryStore", "InvalidNamespaceError", "Item", "SearchItem"]
