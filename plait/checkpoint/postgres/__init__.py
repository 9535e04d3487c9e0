"""PostgreSQL checkpoint savers: :class:`PostgresSaver` and (in ``.aio``) ``AsyncPostgresSaver``.

Needs the ``postgres`` extra: ``pip install 'plait[postgres]'`` (psycopg 3 and
psycopg_pool). See ``docs/storage.md`` for the storage layout.
"""

from __future__ import annotations

try:
    import psycopg  # noqa: F401  # pyright: ignore[reportUnusedImport]  # imported only to check the extra is installed
    import psycopg_pool  # noqa: F401  # pyright: ignore[reportUnusedImport]  # imported only to check the extra is installed
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        f"plait.checkpoint.postgres needs psycopg 3 and psycopg_pool ({exc.name} is missing); "
        "install them with: pip install 'plait[postgres]'"
    ) from exc

from plait.checkpoint.postgres._saver import PostgresSaver
from plait.checkpoint.postgres._shallow import ShallowPostgresSaver

__all__ = ["PostgresSaver", "ShallowPostgresSaver"]
