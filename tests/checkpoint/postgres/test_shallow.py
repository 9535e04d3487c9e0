"""ShallowPostgresSaver / AsyncShallowPostgresSaver: only the newest checkpoint of each thread namespace
is kept, on the real PostgreSQL (deprecated, as in LangGraph)."""

from __future__ import annotations

import operator
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any

import psycopg
import pytest
from _pg import private_schema
from typing_extensions import TypedDict

from plait.checkpoint.postgres import PostgresSaver, ShallowPostgresSaver
from plait.checkpoint.postgres.aio import AsyncShallowPostgresSaver
from plait.checkpoint.postgres.shallow import AsyncShallowPostgresSaver as FromShallow
from plait.graph import START, StateGraph
from plait.types import Command, interrupt

pytestmark = pytest.mark.filterwarnings("ignore:.*ShallowPostgresSaver is deprecated:DeprecationWarning")


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def _graph(saver: Any, *, ask: bool = False) -> Any:
    def a(state: Log) -> dict[str, Any]:
        return {"log": ["a"]}

    def b(state: Log) -> dict[str, Any]:
        answer = interrupt("go on?") if ask else "b"
        return {"log": [answer]}

    builder = StateGraph(Log)
    builder.add_node("a", a).add_node("b", b)
    builder.add_edge(START, "a").add_edge("a", "b")
    return builder.compile(checkpointer=saver)


def _rows(dsn: str, thread: str) -> int:
    with psycopg.connect(dsn) as conn:
        found = conn.execute(
            "SELECT count(*) FROM plait_checkpoints WHERE thread_id = %s", [thread]
        ).fetchone()
    return 0 if found is None else int(found[0])


@pytest.fixture
def dsn() -> Iterator[str]:
    with private_schema("plait_shallow") as found:
        yield found


def test_keeps_only_the_newest_checkpoint(dsn: str) -> None:
    config = {"configurable": {"thread_id": "t"}}
    warned = pytest.warns(DeprecationWarning, match="durability='exit'")
    with warned, ShallowPostgresSaver.from_conn_string(dsn) as saver:
        graph = _graph(saver)
        assert graph.invoke({"log": []}, config) == {"log": ["a", "b"]}
        assert graph.invoke({"log": ["x"]}, config) == {"log": ["a", "b", "x", "a", "b"]}
        assert _rows(dsn, "t") == 1
        history = list(graph.get_state_history(config))
        assert [s.values for s in history] == [{"log": ["a", "b", "x", "a", "b"]}]
        assert history[0].parent_config is None
        head = saver.get_tuple(config)
        assert head is not None
        old = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "0" * 36}}
        assert saver.get_tuple(old) == head  # a checkpoint_id is ignored, as in LangGraph
    with PostgresSaver.from_conn_string(dsn) as full:  # the full saver reads what it left
        assert _graph(full).get_state(config).values == {"log": ["a", "b", "x", "a", "b"]}


def test_interrupt_and_resume(dsn: str) -> None:
    config = {"configurable": {"thread_id": "i"}}
    with ShallowPostgresSaver.from_conn_string(dsn) as saver:
        graph = _graph(saver, ask=True)
        graph.invoke({"log": []}, config)
        state = graph.get_state(config)
        assert state.next == ("b",)
        assert [i.value for i in state.interrupts] == ["go on?"]
        assert graph.invoke(Command(resume="yes"), config) == {"log": ["a", "yes"]}
        assert _rows(dsn, "i") == 1


@pytest.fixture
async def async_saver(dsn: str) -> AsyncIterator[Any]:
    async with AsyncShallowPostgresSaver.from_conn_string(dsn) as saver:
        yield saver


async def test_async_twin(dsn: str, async_saver: Any) -> None:
    assert FromShallow is AsyncShallowPostgresSaver
    config = {"configurable": {"thread_id": "a"}}
    graph = _graph(async_saver)
    await graph.ainvoke({"log": []}, config)
    assert await graph.ainvoke({"log": ["x"]}, config) == {"log": ["a", "b", "x", "a", "b"]}
    assert _rows(dsn, "a") == 1
    history = [s async for s in graph.aget_state_history(config)]
    assert len(history) == 1
    assert history[0].parent_config is None
