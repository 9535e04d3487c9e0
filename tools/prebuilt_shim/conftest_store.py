"""Runner replacement for langgraph-prebuilt's tests/conftest_store.py.

Only the in-memory store is provided (upstream's fast mode, the default,
selects nothing else); asking for a PostgreSQL store skips the test.
"""

from contextlib import asynccontextmanager, contextmanager

import pytest


@contextmanager
def _store_memory():
    from langgraph.store.memory import InMemoryStore

    yield InMemoryStore()


@contextmanager
def _no_postgres():
    pytest.skip("postgres stores are not run by tools/prebuilt_tests.py")
    yield None  # pragma: no cover


@asynccontextmanager
async def _no_postgres_aio():
    pytest.skip("postgres stores are not run by tools/prebuilt_tests.py")
    yield None  # pragma: no cover


_store_postgres = _store_postgres_pipe = _store_postgres_pool = _no_postgres
_store_postgres_aio = _store_postgres_aio_pipe = _store_postgres_aio_pool = _no_postgres_aio

__all__ = [
    "_store_memory",
    "_store_postgres",
    "_store_postgres_pipe",
    "_store_postgres_pool",
    "_store_postgres_aio",
    "_store_postgres_aio_pipe",
    "_store_postgres_aio_pool",
]
