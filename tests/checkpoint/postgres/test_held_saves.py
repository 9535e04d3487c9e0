"""``durability="async"`` (the default) on PostgreSQL: a step's saves go out with the next step's.

A chat turn then costs two round trips (lease and head read; every checkpoint and the release)
instead of three; a step that runs longer than the grace period has the saves before it sent
meanwhile; values are serialized when the step ends, so a reducer that changes them in place
later cannot alter what is stored; a held save that fails is raised by the run.
"""

from __future__ import annotations

import asyncio
import operator
import time
from collections.abc import Iterator
from typing import Annotated, Any

import psycopg
import pytest
from _pg import pg_saver, private_schema
from _save_calls import put_call
from typing_extensions import TypedDict

from plait.checkpoint.base import BaseCheckpointSaver
from plait.checkpoint.postgres import PostgresSaver
from plait.checkpoint.postgres.aio import AsyncPostgresSaver
from plait.errors import CheckpointConflictError
from plait.graph import END, START, StateGraph
from plait.pregel import _held
from plait.pregel._effects import Save


@pytest.fixture
def saver() -> Iterator[PostgresSaver]:
    yield from pg_saver("plait_held")


class Chat(TypedDict):
    log: Annotated[list[str], operator.add]


def extend(old: list[str], new: list[str]) -> list[str]:
    old.extend(new)  # the pitfall (seed 000, 4.1): the previous step's list is changed too
    return old


class Bad(TypedDict):
    log: Annotated[list[str], extend]


def _chat(saver: Any) -> Any:
    def reply(state: Chat) -> dict[str, Any]:
        return {"log": [f"re: {state['log'][-1]}"]}

    return StateGraph(Chat).add_node("reply", reply).add_edge(START, "reply").compile(checkpointer=saver)


def _checkpoints(dsn_or_saver: Any, thread: str) -> int:
    with dsn_or_saver.conn.connection() as conn:
        row = conn.execute("SELECT count(*) FROM plait_checkpoints WHERE thread_id = %s", [thread]).fetchone()
    return int(row[0])


@pytest.mark.parametrize(("durability", "trips"), [("async", 2), (None, 2), ("sync", 3)])
def test_a_turn_is_two_round_trips_unless_every_step_must_be_stored_first(
    saver: PostgresSaver, monkeypatch: pytest.MonkeyPatch, durability: str | None, trips: int
) -> None:
    monkeypatch.setattr(_held, "GRACE", 5.0)  # (a loaded machine may take 2 ms between two saves)
    graph = _chat(saver)
    config = {"configurable": {"thread_id": "turns"}}
    options = {} if durability is None else {"durability": durability}
    graph.invoke({"log": ["hello"]}, config, **options)
    sent: list[str] = []
    execute = psycopg.Cursor.execute

    def counting(cur: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(str(query))
        return execute(cur, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", counting)
    for n in range(3):
        sent.clear()
        assert graph.invoke({"log": [f"m{n}"]}, config, **options)["log"][-1] == f"re: m{n}"
        assert len(sent) == trips, sent
    monkeypatch.undo()
    steps = [s.metadata["step"] for s in graph.get_state_history(config)]
    assert steps == list(range(steps[0], steps[0] - len(steps), -1))  # every step of every turn stored
    assert len(steps) == 12


def _until(count: Any, wanted: int) -> int:
    """Poll ``count()`` until it reaches ``wanted`` (a minute at most, so a broken run does not hang):
    what it counts then."""
    deadline = time.monotonic() + 60
    while (seen := count()) < wanted and time.monotonic() < deadline:
        time.sleep(0.01)
    return seen


def _chain(saver: PostgresSaver, thread: str, seen: list[int], *waits: int) -> Any:
    """``START -> step0 -> step1 ...``: step ``i`` with ``waits[i]`` > 0 waits, while it runs, for the
    thread to have that many stored checkpoints (the held saves before it go out meanwhile) and
    records how many it found."""

    def step(i: int, wanted: int) -> Any:
        def node(state: Chat) -> dict[str, Any]:
            if wanted:
                seen.append(_until(lambda: _checkpoints(saver, thread), wanted))
            return {"log": [f"step{i}"]}

        return node

    builder = StateGraph(Chat)
    for i, wanted in enumerate(waits):
        builder.add_node(f"step{i}", step(i, wanted))
        builder.add_edge(START if i == 0 else f"step{i - 1}", f"step{i}")
    return builder.compile(checkpointer=saver)


def test_a_long_step_has_the_steps_before_it_stored_meanwhile(saver: PostgresSaver) -> None:
    seen: list[int] = []
    _chain(saver, "slow", seen, 2).invoke({"log": ["hello"]}, {"configurable": {"thread_id": "slow"}})
    assert seen == [2]  # the input and the start's checkpoint, while the step still ran
    assert _checkpoints(saver, "slow") == 3


def test_every_long_step_of_a_run_has_the_steps_before_it_stored_meanwhile(saver: PostgresSaver) -> None:
    """The first late send clears the way for the next: the step after it holds, and times, its own."""
    seen: list[int] = []
    graph = _chain(saver, "chain", seen, 0, 3, 4)
    graph.invoke({"log": ["hello"]}, {"configurable": {"thread_id": "chain"}})
    assert seen == [3, 4]  # in step1: the input, the start and step0; in step2: step1 too
    assert _checkpoints(saver, "chain") == 5


def test_a_reducer_that_changes_its_list_in_place_leaves_the_stored_steps_intact(
    saver: PostgresSaver,
) -> None:
    builder = StateGraph(Bad)
    names = ["a", "b", "c", "d"]
    for name in names:
        builder.add_node(name, lambda s, name=name: {"log": [name]})
    builder.add_edge(START, "a")
    for one, two in zip(names, names[1:], strict=False):
        builder.add_edge(one, two)
    builder.add_edge("d", END)
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "in-place"}}
    assert graph.invoke({"log": []}, config)["log"] == names
    history = [(s.metadata["step"], s.values["log"]) for s in graph.get_state_history(config)]
    assert history == [(4, names), (3, names[:3]), (2, names[:2]), (1, names[:1]), (0, []), (-1, [])]


def test_a_held_save_that_fails_in_the_background_is_raised(
    saver: PostgresSaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_held, "GRACE", 0.2)
    held = _held.HeldSaves(saver, ("t", ""))
    held.save(Save((put_call(None, "1", ["a"], None),)))  # held: the thread is still empty
    assert _checkpoints(saver, "t") == 0
    saver._save_many([put_call(None, "0", ["z"], None)], None)  # another writer moves the thread first
    assert _until(lambda: int(held.failed is not None), 1) == 1  # the held put goes out, and is refused
    with pytest.raises(CheckpointConflictError):
        held.save(Save((put_call("1", "2", ["a", "b"], "1"),)))
    held.finish()  # nothing left
    assert _checkpoints(saver, "t") == 1


def test_a_held_save_that_fails_in_the_background_of_an_async_run_is_raised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_held, "GRACE", 0.2)

    async def main(dsn: str) -> None:
        async with AsyncPostgresSaver.from_conn_string(dsn) as saver:
            held = _held.AsyncHeldSaves(saver, ("t", ""))
            await held.save(Save((put_call(None, "1", ["a"], None),)))  # held: the thread is still empty
            await saver._asave_many([put_call(None, "0", ["z"], None)], None)  # another writer moves it first
            while held.failed is None:  # the held put goes out, expecting an empty thread, and is refused
                await asyncio.sleep(0.01)
            with pytest.raises(CheckpointConflictError):
                await held.save(Save((put_call("1", "2", ["a", "b"], "1"),)))
            await held.finish()  # nothing left
            assert [t.checkpoint["id"] async for t in saver.alist({"configurable": {"thread_id": "t"}})] == [
                "0"
            ]

    with private_schema("plait_held") as dsn:
        asyncio.run(main(dsn))


async def _auntil(count: Any, wanted: int) -> int:
    """Async :func:`_until`."""
    deadline = time.monotonic() + 60
    while (seen := await count()) < wanted and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    return seen


def test_async_runs_hold_their_saves_too() -> None:
    async def main(dsn: str) -> None:
        async with AsyncPostgresSaver.from_conn_string(dsn) as saver:

            async def count() -> int:
                async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
                    cur = await conn.execute("SELECT count(*) FROM plait_checkpoints")
                    return int((await cur.fetchone())[0])  # type: ignore[index]

            seen: list[int] = []

            async def reply(state: Chat) -> dict[str, Any]:
                seen.append(await _auntil(count, 2))  # sent while "reply" runs
                return {"log": ["re"]}

            graph = (
                StateGraph(Chat).add_node("reply", reply).add_edge(START, "reply").compile(checkpointer=saver)
            )
            config = {"configurable": {"thread_id": "a"}}
            assert (await graph.ainvoke({"log": ["hi"]}, config))["log"] == ["hi", "re"]
            assert seen == [2]  # sent while "reply" runs
            assert await count() == 3
            steps = [s.metadata["step"] async for s in graph.aget_state_history(config)]
            assert steps == [1, 0, -1]

    with private_schema("plait_held") as dsn:
        asyncio.run(main(dsn))


def test_every_long_step_of_an_async_run_has_the_steps_before_it_stored_meanwhile() -> None:
    seen: list[int] = []

    async def main(dsn: str) -> None:
        async def count() -> int:
            async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
                cur = await conn.execute("SELECT count(*) FROM plait_checkpoints")
                return int((await cur.fetchone())[0])  # type: ignore[index]

        def step(name: str, wanted: int) -> Any:
            async def node(state: Chat) -> dict[str, Any]:
                if wanted:  # the held saves before this step go out while it runs
                    seen.append(await _auntil(count, wanted))
                return {"log": [name]}

            return node

        async with AsyncPostgresSaver.from_conn_string(dsn) as saver:
            graph = (
                StateGraph(Chat)
                .add_node("quick", step("quick", 0))
                .add_node("slow", step("slow", 3))
                .add_node("slower", step("slower", 4))
                .add_edge(START, "quick")
                .add_edge("quick", "slow")
                .add_edge("slow", "slower")
                .compile(checkpointer=saver)
            )
            await graph.ainvoke({"log": ["hi"]}, {"configurable": {"thread_id": "a"}})
            assert await count() == 5

    with private_schema("plait_held") as dsn:
        asyncio.run(main(dsn))
    assert seen == [3, 4]  # in "slow": the input, the start and "quick"; in "slower": "slow" too


# -- every way a run ends sends what it held (the grace period made long, so no timer hides it) -----


class Steps(TypedDict):
    log: Annotated[list[str], operator.add]


def _steps_graph(saver: Any, last: Any) -> Any:
    builder = StateGraph(Steps).add_node("a", lambda s: {"log": ["a"]}).add_node("b", last)
    return builder.add_edge(START, "a").add_edge("a", "b").add_edge("b", END).compile(checkpointer=saver)


def _stored(saver: Any, thread: str) -> list[int]:
    return [t.metadata["step"] for t in saver.list({"configurable": {"thread_id": thread}})]


@pytest.fixture
def long_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_held, "GRACE", 60.0)


def test_a_failing_step_an_interrupt_and_a_closed_stream_send_what_was_held(
    saver: PostgresSaver, long_grace: None
) -> None:
    def fail(state: Steps) -> dict[str, Any]:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        _steps_graph(saver, fail).invoke({"log": []}, {"configurable": {"thread_id": "fail"}})
    assert _stored(saver, "fail") == [1, 0, -1]  # up to the step before the failure
    assert _checkpoints(saver, "fail") == 3

    from plait.types import interrupt

    paused = _steps_graph(saver, lambda s: {"log": [interrupt("ok?")]})
    config = {"configurable": {"thread_id": "pause"}}
    assert "__interrupt__" in paused.invoke({"log": []}, config)
    assert _stored(saver, "pause") == [1, 0, -1]
    from plait.types import Command

    assert paused.invoke(Command(resume="yes"), config)["log"] == ["a", "yes"]

    closed = _steps_graph(saver, lambda s: {"log": ["b"]})
    for _ in closed.stream({"log": []}, {"configurable": {"thread_id": "closed"}}, stream_mode="updates"):
        break  # after "a": the caller stops reading
    assert _stored(saver, "closed") == [1, 0, -1]
    with saver.lease("closed", wait=False):  # and the thread is free
        pass


def test_an_async_run_cancelled_or_timed_out_sends_what_was_held(long_grace: None) -> None:
    async def main(dsn: str) -> None:
        started = asyncio.Event()

        async def stuck(state: Steps) -> dict[str, Any]:
            started.set()
            await asyncio.Event().wait()  # until cancelled
            return {"log": ["b"]}

        async with AsyncPostgresSaver.from_conn_string(dsn) as saver:
            graph = _steps_graph(saver, stuck)
            run = asyncio.ensure_future(graph.ainvoke({"log": []}, {"configurable": {"thread_id": "cancel"}}))
            await started.wait()  # in "b": the steps before it are held
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run
            assert [
                t.metadata["step"] async for t in saver.alist({"configurable": {"thread_id": "cancel"}})
            ] == [
                1,
                0,
                -1,
            ]
            graph.step_timeout = 2.0  # "b" never ends; the steps before it take milliseconds
            with pytest.raises(TimeoutError):
                await graph.ainvoke({"log": []}, {"configurable": {"thread_id": "timeout"}})
            steps = [
                t.metadata["step"] async for t in saver.alist({"configurable": {"thread_id": "timeout"}})
            ]
            assert steps == [1, 0, -1]

    with private_schema("plait_held") as dsn:
        asyncio.run(main(dsn))


class _Logged(PostgresSaver):
    calls = 0

    def put(self, *args: Any, **kwargs: Any) -> Any:
        type(self).calls += 1
        return super().put(*args, **kwargs)


class _Wrapper(BaseCheckpointSaver):  # type: ignore[type-arg]
    def __init__(self, inner: PostgresSaver) -> None:
        super().__init__()
        self.inner = inner
        self.puts = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def put(self, *args: Any, **kwargs: Any) -> Any:
        self.puts += 1
        return self.inner.put(*args, **kwargs)

    def put_writes(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.put_writes(*args, **kwargs)

    def get_tuple(self, config: Any) -> Any:
        return self.inner.get_tuple(config)

    def list(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.list(*args, **kwargs)

    def delete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)


def test_savers_whose_put_is_someone_elses_store_every_step(saver: PostgresSaver, long_grace: None) -> None:
    from _pg import private_schema as schema

    with schema("plait_held") as dsn, _Logged.from_conn_string(dsn) as logged:
        graph = _steps_graph(logged, lambda s: {"log": ["b"]})
        assert graph.invoke({"log": []}, {"configurable": {"thread_id": "sub"}})["log"] == ["a", "b"]
        assert _stored(logged, "sub") == [2, 1, 0, -1] and _Logged.calls == 4

        async def run() -> Any:
            return await graph.ainvoke({"log": []}, {"configurable": {"thread_id": "sub-async"}})

        assert asyncio.run(run())["log"] == ["a", "b"]
        assert _stored(logged, "sub-async") == [2, 1, 0, -1]

    wrapper = _Wrapper(saver)
    graph = _steps_graph(wrapper, lambda s: {"log": ["b"]})
    assert graph.invoke({"log": []}, {"configurable": {"thread_id": "wrapped"}})["log"] == ["a", "b"]
    assert _stored(saver, "wrapped") == [2, 1, 0, -1] and wrapper.puts == 4


class _Proxy:
    """Stands for a saver and says it is one (``__class__``), as wrapt's proxies do."""

    def __init__(self, inner: PostgresSaver) -> None:
        object.__setattr__(self, "_inner", inner)

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # noqa: D105
        return type(object.__getattribute__(self, "_inner"))

    def __getattr__(self, name: str) -> Any:
        return getattr(object.__getattribute__(self, "_inner"), name)


def test_a_proxy_standing_for_a_saver_stores_every_step(saver: PostgresSaver) -> None:
    graph = _steps_graph(_Proxy(saver), lambda s: {"log": ["b"]})
    assert graph.invoke({"log": []}, {"configurable": {"thread_id": "proxy"}})["log"] == ["a", "b"]
    assert _stored(saver, "proxy") == [2, 1, 0, -1]


def test_an_async_run_cancelled_during_its_last_save_keeps_it(
    saver: PostgresSaver, long_grace: None, caplog: pytest.LogCaptureFixture
) -> None:
    """A sync saver in an async run saves in a worker thread, which a cancellation cannot stop:
    the run waits for that save instead of sending it twice."""
    from plait.checkpoint._prune import lock_name

    async def main() -> None:
        graph = _steps_graph(saver, lambda s: {"log": ["b"]})
        with saver.conn.connection() as other:  # type: ignore[union-attr]
            other.execute("SELECT pg_advisory_lock(hashtext(%s))", [lock_name(("late", ""))])
            run = asyncio.ensure_future(graph.ainvoke({"log": []}, {"configurable": {"thread_id": "late"}}))
            while not other.execute(  # the last save (every step: the grace is long) waits for the lock
                "SELECT count(*) FROM pg_locks WHERE NOT granted AND %s = ANY(pg_blocking_pids(pid))",
                [other.info.backend_pid],
            ).fetchone()[0]:  # type: ignore[index]
                await asyncio.sleep(0.01)
            run.cancel()
            for _ in range(20):  # the cancellation reaches the run (event loop turns, not time)
                await asyncio.sleep(0)
            other.execute("SELECT pg_advisory_unlock(hashtext(%s))", [lock_name(("late", ""))])
            with pytest.raises(asyncio.CancelledError):
                await run

    asyncio.run(main())
    assert _stored(saver, "late") == [2, 1, 0, -1]
    assert "held back failed" not in caplog.text  # sent once: no second, refused, copy
    with saver.lease("late", wait=False):  # and the lease was given back once
        pass
