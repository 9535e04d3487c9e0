"""Node, task and entrypoint ``timeout=`` (``TimeoutPolicy``), and ``NodeCancelledError``, as LangGraph has them.

A timed-out node here waits on an event nobody sets: its attempt can only end by the timeout.
"""

from __future__ import annotations

import asyncio
import pickle
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from typing_extensions import TypedDict

from plait.config import get_stream_writer
from plait.errors import GraphBuildError, NodeCancelledError, NodeError, NodeTimeoutError
from plait.func import entrypoint, task
from plait.graph import START, StateGraph
from plait.runtime import Runtime
from plait.types import RetryPolicy, TimeoutPolicy


class State(TypedDict):
    n: int


def _graph(fn: Any, **options: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("node", fn, **options)
    builder.add_edge(START, "node")
    return builder.compile()


@pytest.fixture
def never() -> Iterator[asyncio.Event]:
    """An event nothing sets while the test runs (set at teardown, for anything still waiting)."""
    event = asyncio.Event()
    yield event
    event.set()


def _retry(attempts: int) -> RetryPolicy:
    return RetryPolicy(max_attempts=attempts, initial_interval=0.0, jitter=False)


async def test_blocked_async_node_times_out(never: asyncio.Event) -> None:
    async def node(state: State) -> dict[str, Any]:
        await never.wait()
        return {"n": 1}

    with pytest.raises(NodeTimeoutError) as info:
        await _graph(node, timeout=0.05).ainvoke({"n": 0})
    err = info.value
    assert (err.node, err.kind, err.timeout, err.run_timeout, err.idle_timeout) == (
        "node",
        "run",
        0.05,
        0.05,
        None,
    )
    assert not isinstance(err, TimeoutError)  # so the default retry policy retries it
    assert "exceeded its run timeout of 0.050s" in str(err)


def test_sync_invoke_of_an_async_node_times_out(never: asyncio.Event) -> None:
    async def node(state: State) -> dict[str, Any]:
        await asyncio.Event().wait()  # the sync driver runs the node on an event loop of its own
        return {"n": 1}

    with pytest.raises(NodeTimeoutError):
        _graph(node, timeout=timedelta(milliseconds=50)).invoke({"n": 0})


async def test_timeouts_are_retried_by_the_retry_policy(never: asyncio.Event) -> None:
    attempts: list[int] = []

    async def stuck(state: State) -> dict[str, Any]:
        attempts.append(1)
        await never.wait()
        return {"n": 1}

    with pytest.raises(NodeTimeoutError):
        await _graph(stuck, timeout=0.05, retry_policy=_retry(3)).ainvoke({"n": 0})
    assert len(attempts) == 3

    async def stuck_once(state: State) -> dict[str, Any]:
        attempts.append(1)
        if len(attempts) == 4:
            await never.wait()
        return {"n": len(attempts)}

    assert await _graph(stuck_once, timeout=0.05, retry_policy=_retry(2)).ainvoke({"n": 0}) == {"n": 5}


async def test_error_handler_receives_the_timeout(never: asyncio.Event) -> None:
    async def node(state: State) -> dict[str, Any]:
        await never.wait()
        return {"n": 1}

    def handler(state: State, error: NodeError) -> dict[str, Any]:
        assert isinstance(error.error, NodeTimeoutError)
        return {"n": -1}

    assert await _graph(node, timeout=0.05, error_handler=handler).ainvoke({"n": 0}) == {"n": -1}


async def test_idle_timeout_under_heartbeat_ignores_stream_events(never: asyncio.Event) -> None:
    async def node(state: State) -> dict[str, Any]:
        get_stream_writer()("still here")  # progress under refresh_on="auto" only
        await never.wait()
        return {"n": 1}

    policy = TimeoutPolicy(idle_timeout=0.05, refresh_on="heartbeat")
    with pytest.raises(NodeTimeoutError) as info:
        await _graph(node, timeout=policy).ainvoke({"n": 0})
    assert (info.value.kind, info.value.idle_timeout, info.value.run_timeout) == ("idle", 0.05, None)


async def test_heartbeats_keep_an_idle_timeout_from_firing() -> None:
    async def node(state: State, runtime: Runtime[None]) -> dict[str, Any]:
        start = time.monotonic()
        while time.monotonic() - start < 3.0:  # runs past the idle limit (a busy machine may stall the
            runtime.heartbeat()  # loop a while between two heartbeats: the limit leaves it 2 s)
            await asyncio.sleep(0.005)
        return {"n": 1}

    policy = TimeoutPolicy(idle_timeout=2.0, refresh_on="heartbeat")
    assert await _graph(node, timeout=policy).ainvoke({"n": 0}) == {"n": 1}


async def test_a_node_in_time_is_untouched() -> None:
    async def node(state: State) -> dict[str, Any]:
        get_stream_writer()("event")
        return {"n": 7}

    chunks = [c async for c in _graph(node, timeout=30).astream({"n": 0}, stream_mode=["custom", "values"])]
    assert chunks == [("values", {"n": 0}), ("custom", "event"), ("values", {"n": 7})]


def test_sync_nodes_take_no_timeout() -> None:
    def node(state: State) -> dict[str, Any]:
        return {"n": 1}

    with pytest.raises(GraphBuildError, match="only supported for async nodes.*Node 'node' is sync"):
        _graph(node, timeout=1)
    builder = StateGraph(State).set_node_defaults(timeout=1)
    builder.add_node("node", node).add_edge(START, "node")
    with pytest.raises(ValueError, match="Node 'node' is sync"):
        builder.compile()


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (0, "run_timeout must be greater than 0"),
        (timedelta(seconds=-1), "run_timeout must be greater than 0"),
        (TimeoutPolicy(idle_timeout=-2), "idle_timeout must be greater than 0"),
        (TimeoutPolicy(run_timeout=1, refresh_on="often"), "refresh_on must be 'auto' or 'heartbeat'"),  # type: ignore[arg-type]
    ],
)
def test_bad_timeouts_are_refused(bad: Any, message: str) -> None:
    async def node(state: State) -> dict[str, Any]:
        return {}

    with pytest.raises(ValueError, match=message):
        _graph(node, timeout=bad)


def test_coerce() -> None:
    assert TimeoutPolicy.coerce(None) is None
    assert TimeoutPolicy.coerce(TimeoutPolicy()) is None
    assert TimeoutPolicy.coerce(timedelta(seconds=2)) == TimeoutPolicy(run_timeout=2.0)
    assert TimeoutPolicy.coerce(TimeoutPolicy(idle_timeout=timedelta(milliseconds=500))) == TimeoutPolicy(
        idle_timeout=0.5
    )


async def test_task_and_entrypoint_timeouts(never: asyncio.Event) -> None:
    calls: list[int] = []

    @task(timeout=0.05, retry_policy=_retry(2))
    async def slow(x: int) -> int:
        calls.append(x)
        await never.wait()
        return x

    @task(timeout=TimeoutPolicy(idle_timeout=30))
    async def quick(x: int) -> int:
        return x + 1

    @entrypoint()
    async def workflow(x: int) -> list[Any]:
        first = await quick(x)
        try:
            await slow(x)
        except NodeTimeoutError as err:
            return [first, err.node, err.kind]
        return [first]

    assert await workflow.ainvoke(1) == [2, "slow", "run"]
    assert calls == [1, 1]

    @entrypoint(timeout=0.05)
    async def stuck(x: int) -> int:
        await never.wait()
        return x

    with pytest.raises(NodeTimeoutError, match="Node 'stuck'"):
        await stuck.ainvoke(1)


def test_sync_tasks_and_entrypoints_take_no_timeout() -> None:
    with pytest.raises(ValueError, match="Task 'double' is sync"):

        @task(timeout=1)
        def double(x: int) -> int:
            return 2 * x

    with pytest.raises(ValueError, match="Node 'flow' is sync"):

        @entrypoint(timeout=1)
        def flow(x: int) -> int:
            return x


async def test_a_node_raising_cancelled_error_fails_the_run() -> None:
    async def node(state: State) -> dict[str, Any]:
        raise asyncio.CancelledError

    with pytest.raises(NodeCancelledError, match="Node 'node' raised asyncio.CancelledError") as info:
        await _graph(node).ainvoke({"n": 0})
    assert info.value.node == "node"

    def sync_node(state: State) -> dict[str, Any]:
        raise asyncio.CancelledError

    with pytest.raises(NodeCancelledError):
        _graph(sync_node).invoke({"n": 0})


async def test_cancelling_the_run_still_cancels(never: asyncio.Event) -> None:
    started = asyncio.Event()

    async def node(state: State) -> dict[str, Any]:
        started.set()
        await never.wait()
        return {"n": 1}

    run = asyncio.ensure_future(_graph(node, timeout=30).ainvoke({"n": 0}))
    await started.wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run


def test_errors_pickle() -> None:
    err = NodeTimeoutError("n", 1.5, kind="idle", idle_timeout=1.0, run_timeout=9.0)
    back = pickle.loads(pickle.dumps(err))
    assert (back.node, back.elapsed, back.kind, back.timeout, back.run_timeout) == (
        "n",
        1.5,
        "idle",
        1.0,
        9.0,
    )
    assert str(back) == str(err)
    cancelled = pickle.loads(pickle.dumps(NodeCancelledError("m")))
    assert (cancelled.node, str(cancelled)) == ("m", "Node 'm' raised asyncio.CancelledError")


async def test_channel_graph_node_timeout(never: asyncio.Event) -> None:
    from plait.channels import LastValue
    from plait.pregel import NodeBuilder, Pregel

    async def stuck(x: int) -> int:
        await never.wait()
        return x

    node = NodeBuilder().subscribe_only("a").do(stuck).write_to("b").set_timeout(0.05)
    app = Pregel(
        nodes={"stuck": node},
        channels={"a": LastValue(int), "b": LastValue(int)},
        input_channels="a",
        output_channels="b",
    )
    with pytest.raises(NodeTimeoutError, match="Node 'stuck'"):
        await app.ainvoke(1)
    sync = NodeBuilder().subscribe_only("a").do(lambda x: x).write_to("b").set_timeout(1)
    with pytest.raises(ValueError, match="Node 'sync' is sync"):
        Pregel(
            nodes={"sync": sync},
            channels={"a": LastValue(int), "b": LastValue(int)},
            input_channels="a",
            output_channels="b",
        )
