"""A connection whose ``search_path`` is ``pg_temp``: plait's tables and put function are private to it.

PostgreSQL finds tables in the temporary schema unqualified, but never functions; the savers
must still reach ``plait_put`` there.
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any

from _pg import PG_DSN, require_pg
from typing_extensions import TypedDict

from plait.checkpoint.postgres import PostgresSaver
from plait.checkpoint.postgres.aio import AsyncPostgresSaver
from plait.graph import START, StateGraph

TEMP_DSN = f"{PG_DSN}{'&' if '?' in PG_DSN else '?'}options=-csearch_path%3Dpg_temp"


class S(TypedDict):
    x: Annotated[list[str], operator.add]


def _builder() -> StateGraph[S]:
    return StateGraph(S).add_node("a", lambda s: {"x": ["a"]}).add_edge(START, "a")


def test_sync_saver_writes_and_reads_in_a_temporary_schema() -> None:
    require_pg()
    config = {"configurable": {"thread_id": "t"}}
    with PostgresSaver.from_conn_string(TEMP_DSN, pool_size=1) as saver:
        graph = _builder().compile(checkpointer=saver)
        assert graph.invoke({"x": ["in"]}, config) == {"x": ["in", "a"]}
        saver.setup()  # idempotent
        assert graph.invoke({"x": ["again"]}, config) == {"x": ["in", "a", "again", "a"]}
        assert len(list(graph.get_state_history(config))) == 6  # input, start, a; twice


def test_async_saver_writes_and_reads_in_a_temporary_schema() -> None:
    require_pg()
    config = {"configurable": {"thread_id": "t"}}

    async def main() -> None:
        async with AsyncPostgresSaver.from_conn_string(TEMP_DSN) as saver:
            graph = _builder().compile(checkpointer=saver)
            assert await graph.ainvoke({"x": ["in"]}, config) == {"x": ["in", "a"]}
            assert await graph.ainvoke({"x": ["again"]}, config) == {"x": ["in", "a", "again", "a"]}

    asyncio.run(main())


def test_async_saver_on_a_pool_whose_connections_set_pg_temp_themselves() -> None:
    """The conninfo does not say ``pg_temp``, so the saver takes leases: its lease functions are in pg_temp too."""
    require_pg()
    from psycopg_pool import AsyncConnectionPool

    config = {"configurable": {"thread_id": "t"}}

    async def main() -> None:
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            PG_DSN,
            min_size=1,
            max_size=1,
            open=False,
            kwargs={"autocommit": True, "options": "-csearch_path=pg_temp"},
        )
        await pool.open()
        try:
            graph = _builder().compile(checkpointer=AsyncPostgresSaver(pool))
            assert await graph.ainvoke({"x": ["in"]}, config) == {"x": ["in", "a"]}
            assert await graph.ainvoke({"x": ["again"]}, config) == {"x": ["in", "a", "again", "a"]}
        finally:
            await pool.close()

    asyncio.run(main())
