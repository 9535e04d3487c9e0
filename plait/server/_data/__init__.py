"""The server's data-access layer: every SQL statement on the server's own tables, as typed functions.

Route, worker and run modules call these functions and hold no SQL of their own
(``tests/server/test_layout_server.py`` checks it); each module here owns the statements of one
resource: :mod:`~plait.server._data.assistants`, :mod:`~plait.server._data.threads` (its searches'
conditions in :mod:`~plait.server._data.thread_search`), :mod:`~plait.server._data.runs`,
:mod:`~plait.server._data.thread_runs`, :mod:`~plait.server._data.events`,
:mod:`~plait.server._data.crons` and :mod:`~plait.server._data.checkpoints` (the saver's tables, read
for a thread's storage). The auth's filters become SQL conditions in :mod:`~plait.server._data.filters`:
route modules pass the filters, never SQL.

The SQL is written once with ``?`` placeholders for both databases (see :mod:`plait.server._db`);
a function takes the :class:`~plait.server._db.Database`, or a transaction (``Tx``) when the caller
groups several statements. A function whose statement depends on the database (a row lock on
PostgreSQL) takes the ``dialect`` beside a ``Tx``; the locks are taken in the order the callers'
comments give (a thread's row before its runs').
"""

from __future__ import annotations

__all__: list[str] = []
