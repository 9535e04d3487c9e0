"""The server's data-access layer: every SQL statement on the server's own tables, as typed functions.

Route, worker and run modules call these functions and hold no SQL of their own; each module here
owns the statements of one resource (:mod:`~plait.server._data.runs`, :mod:`~plait.server._data.threads`).
The SQL is written once with ``?`` placeholders for both databases (see :mod:`plait.server._db`);
a function takes the :class:`~plait.server._db.Database`, or a transaction (``Tx``) when the caller
groups several statements.
"""

from __future__ import annotations

__all__: list[str] = []
