"""Runner replacement for langgraph-prebuilt's tests/conftest_checkpointer.py.

Exports the names upstream's conftest.py imports.  ``langgraph`` is imported
lazily, so under the alias a saver that plait lacks fails only its tests.
The memory saver is upstream's ``MemorySaverAssertImmutable`` when the
implementation can build it (it relies on private LangGraph helpers), else a
plain ``InMemorySaver()``.  The PostgreSQL savers are not run (upstream's fast
mode, the default, never selects them); asking for one skips the test.
"""

from contextlib import asynccontextmanager, contextmanager

import pytest


def _new_memory_saver():
    try:
        from tests.memory_assert import MemorySaverAssertImmutable

        return MemorySaverAssertImmutable()
    except (ImportError, TypeError, AttributeError):
        from langgraph.checkpoint.memory import InMemorySaver

        return InMemorySaver()


@contextmanager
def _checkpointer_memory():
    saver = _new_memory_saver()
    try:
        yield saver
    finally:
        stack = getattr(saver, "stack", None)
        if stack is not None and hasattr(stack, "close"):
            stack.close()


@contextmanager
def _checkpointer_sqlite():
    from langgraph.checkpoint.sqlite import SqliteSaver

    with SqliteSaver.from_conn_string(":memory:") as checkpointer:
        yield checkpointer


@asynccontextmanager
async def _checkpointer_sqlite_aio():
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with AsyncSqliteSaver.from_conn_string(":memory:") as checkpointer:
        yield checkpointer


@contextmanager
def _no_postgres():
    pytest.skip("postgres savers are not run by tools/prebuilt_tests.py")
    yield None  # pragma: no cover


@asynccontextmanager
async def _no_postgres_aio():
    pytest.skip("postgres savers are not run by tools/prebuilt_tests.py")
    yield None  # pragma: no cover


_checkpointer_postgres = _checkpointer_postgres_pipe = _checkpointer_postgres_pool = _no_postgres
_checkpointer_postgres_aio = _checkpointer_postgres_aio_pipe = _no_postgres_aio
_checkpointer_postgres_aio_pool = _no_postgres_aio

__all__ = [
    "_checkpointer_memory",
    "_checkpointer_sqlite",
    "_checkpointer_postgres",
    "_checkpointer_postgres_pipe",
    "_checkpointer_postgres_pool",
    "_checkpointer_sqlite_aio",
    "_checkpointer_postgres_aio",
    "_checkpointer_postgres_aio_pipe",
    "_checkpointer_postgres_aio_pool",
]
