"""What a run asks of plait's SQL savers, seen from the outside: subclass hooks, leases, read-ahead.

Runs batch their saves through the engine; a subclass that overrides ``put``/``put_writes``
(auditing, encryption, tenant tags) must still see every call, and a stream consumed step by
step in copied contexts (as Starlette's thread pool does) must release its thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import operator
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from _pg import pg_saver
from typing_extensions import TypedDict

from plait.checkpoint.base import empty_checkpoint
from plait.checkpoint.sqlite import SqliteSaver
from plait.graph import START, StateGraph


class S(TypedDict):
    x: Annotated[list[str], operator.add]


def _graph(saver: Any) -> Any:
    return (
        StateGraph(S)
        .add_node("a", lambda s: {"x": ["a"]})
        .add_node("b", lambda s: {"x": ["b"]})
        .add_edge(START, "a")
        .add_edge("a", "b")
        .compile(checkpointer=saver)
    )


@pytest.fixture(params=["sqlite", "postgres"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "sqlite":
        with SqliteSaver.from_conn_string(tmp_path / "cp.db") as s:
            yield s
    else:
        yield from pg_saver("plait_hooks")


def test_a_subclass_sees_every_put_and_put_writes_of_a_run(saver: Any) -> None:
    calls: list[str] = []
    base = type(saver)

    class Audited(base):  # type: ignore[misc,valid-type]
        def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any, **kw: Any) -> Any:
            calls.append(f"put:{metadata['source']}")
            return super().put(config, checkpoint, metadata, new_versions, **kw)

        def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
            calls.append("writes")
            super().put_writes(config, writes, task_id, task_path)

    audited = Audited.__new__(Audited)
    audited.__dict__.update(saver.__dict__)
    config = {"configurable": {"thread_id": "t"}}
    assert _graph(audited).invoke({"x": ["in"]}, config) == {"x": ["in", "a", "b"]}
    # as LangGraph: the input, then each step: its tasks' writes (kept for history's task results), its checkpoint
    assert calls == ["put:input", "writes", "put:loop", "writes", "put:loop", "writes", "put:loop"]
    with saver.lease("t", wait=False):  # the run gave the thread back
        pass


def test_a_stream_consumed_in_copied_contexts_releases_its_thread(saver: Any) -> None:
    config = {"configurable": {"thread_id": "t"}}
    events = _graph(saver).stream({"x": ["in"]}, config)
    chunks = []
    while True:  # every step in a fresh copy of the context, as a thread pool would
        chunk = contextvars.copy_context().run(next, events, None)
        if chunk is None:
            break
        chunks.append(chunk)
    assert [list(c) for c in chunks] == [["a"], ["b"]]
    with saver.lease("t", wait=False):
        pass
    assert _graph(saver).invoke({"x": ["again"]}, config)["x"][-3:] == ["again", "a", "b"]


def test_an_async_stream_closed_from_another_task_releases_its_thread(tmp_path: Path) -> None:
    from plait.checkpoint.sqlite.aio import AsyncSqliteSaver

    async def main() -> None:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "a.db")) as saver:
            config = {"configurable": {"thread_id": "t"}}
            events = _graph(saver).astream({"x": ["in"]}, config)
            await events.__anext__()
            await asyncio.get_running_loop().create_task(events.aclose())
            async with await saver.alease("t", wait=False):
                pass

    asyncio.run(main())


def test_a_write_inside_a_lease_is_seen_by_the_next_head_read(saver: Any) -> None:
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    first: dict[str, Any] = {**empty_checkpoint(), "id": "1"}
    saver.put(config, first, {"source": "input", "step": -1}, {})
    with saver.lease("t"):
        second: dict[str, Any] = {**empty_checkpoint(), "id": "2"}
        saver.put({"configurable": {**config["configurable"], "checkpoint_id": "1"}}, second, {"step": 0}, {})
        head = saver.get_tuple({"configurable": {"thread_id": "t"}})
        assert head is not None and head.checkpoint["id"] == "2"


def test_postgres_saver_subclass_hooks_see_the_async_calls_too() -> None:
    from _pg import private_schema

    from plait.checkpoint.postgres.aio import AsyncPostgresSaver

    calls: list[str] = []

    class Audited(AsyncPostgresSaver):
        async def aput(
            self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any, **kw: Any
        ) -> Any:
            calls.append("aput")
            return await super().aput(config, checkpoint, metadata, new_versions, **kw)

    async def main(dsn: str) -> None:
        async with Audited.from_conn_string(dsn) as saver:
            out = await _graph(saver).ainvoke({"x": ["in"]}, {"configurable": {"thread_id": "t"}})
            assert out == {"x": ["in", "a", "b"]}

    with private_schema("plait_hooks") as dsn:
        asyncio.run(main(dsn))
    assert calls == ["aput"] * 4
