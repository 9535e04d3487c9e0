"""SQLite checkpoint savers: :class:`SqliteSaver` and (in ``.aio``) ``AsyncSqliteSaver``.

Uses only the standard library's ``sqlite3``. See ``docs/storage.md`` for the
storage layout (values stored only when changed, lists stored as deltas).
"""

from __future__ import annotations

from plait.checkpoint.sqlite._saver import SqliteSaver

__all__ = ["SqliteSaver"]
