"""Long-term stores: memory that outlives a single thread.

The interface lives in :mod:`plait.store.base`; the stores are
:mod:`plait.store.memory`, :mod:`plait.store.sqlite` (and ``.aio``) and
:mod:`plait.store.postgres` (and ``.aio``, needs the ``postgres`` extra). The
main names are re-exported here for convenience; see ``docs/store.md``.
"""

from __future__ import annotations

from plait.store.base import BaseStore, InvalidNamespaceError, Item, SearchItem
from plait.store.memory import InMemoryStore

__all__ = ["BaseStore", "InMemoryStore", "InvalidNamespaceError", "Item", "SearchItem"]
