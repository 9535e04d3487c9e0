"""langgraph-sdk 0.4's thread streams (``client.threads.stream``: commands plus an event stream over
SSE or a WebSocket) against a real ``plait serve``: runs, their events and output, interrupts answered,
messages, subgraphs, a cancelled run."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from _serve_proc import Gate, Server
from langgraph_sdk import get_client
from langgraph_sdk.stream.transport import ProtocolSseTransport

GUARD = 60.0
"""Seconds a test may take before it is taken as hung (it waits on events, not on time)."""


@pytest.fixture(params=["sse", "websocket"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _say(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def _texts(values: dict[str, Any]) -> list[Any]:
    return [m["content"] for m in values["messages"]]


def _ended(event: dict[str, Any]) -> bool:
    """Whether ``event`` is the root graph's lifecycle saying the run stopped."""
    params = event["params"]
    return (
        event["method"] == "lifecycle"
        and not params["namespace"]
        and params["data"]["event"] in ("completed", "failed", "interrupted")
    )


async def _until(events: AsyncIterator[dict[str, Any]], done: Callable[[dict[str, Any]], bool]) -> list[Any]:
    """The events read until (and with) the first one ``done`` says is the last (a WebSocket's
    answers to the transport's own commands, read by ``thread.events`` too, are left out)."""
    seen: list[dict[str, Any]] = []
    async for event in events:
        if event.get("type") != "event":
            continue
        seen.append(event)
        if done(event):
            return seen
    raise AssertionError(f"the stream ended before the awaited event; it sent {seen}")


async def _condition(check: Callable[[], bool]) -> None:
    """Until ``check()`` (the test's guard bounds the wait)."""
    while not check():
        await asyncio.sleep(0.02)


async def test_a_run_streams_its_events_and_output(server_on_both: Server, transport: str) -> None:
    client = get_client(url=server_on_both.url)
    async with (
        asyncio.timeout(GUARD),
        client.threads.stream(assistant_id="agent", transport=transport) as thread,
    ):
        started = await thread.run.start(input=_say("hi"))
        events = await _until(thread.events, _ended)
        output = await thread.output
    assert _texts(output) == ["hi", "you said: hi"]
    run = await client.runs.get(thread.thread_id, started["run_id"])
    assert run["status"] == "success"
    lifecycle = [
        (e["method"], e["params"]["data"].get("event")) for e in events if e["method"] == "lifecycle"
    ]
    assert lifecycle == [("lifecycle", "running"), ("lifecycle", "completed")]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert len({e["event_id"] for e in events}) == len(events)
    values = [e["params"]["data"] for e in events if e["method"] == "values"]
    assert _texts(values[-1]) == ["hi", "you said: hi"]
    assert {e["params"]["data"].get("graph_name") for e in events if e["method"] == "lifecycle"} == {"agent"}


async def test_an_interrupt_is_asked_for_and_answered(server_on_both: Server, transport: str) -> None:
    client = get_client(url=server_on_both.url)
    async with (
        asyncio.timeout(GUARD),
        client.threads.stream(assistant_id="agent", transport=transport) as thread,
    ):
        run = await thread.run.start(input=_say("ask"))
        await _condition(lambda: thread.interrupted)  # (the SDK's own watcher saw the interrupt)
        asked = (await _until(thread.events, lambda e: e["method"] == "input.requested"))[-1]
        await client.runs.join(thread.thread_id, run["run_id"])  # (its checkpoint is saved by its end)
        state = await client.threads.get_state(thread.thread_id)
        interrupt_id = state["interrupts"][0]["id"]
        assert asked["params"] == {
            **asked["params"],
            "namespace": [],
            "data": {"interrupt_id": interrupt_id, "payload": {"question": "sure?"}},
        }
        assert [i["interrupt_id"] for i in thread.interrupts] == [interrupt_id]
        assert await thread.run.respond("yes") == {}
        output = await thread.output
    assert _texts(output) == ["ask", "answer: yes"]
    assert (await client.threads.get(thread.thread_id))["status"] == "idle"


async def test_run_start_on_a_thread_that_waits_answers_it(server: Server) -> None:
    """As LangGraph's server: the input of ``run.start`` on an interrupted thread is the answer."""
    client = get_client(url=server.url)
    async with asyncio.timeout(GUARD):
        async with client.threads.stream(assistant_id="agent") as thread:
            await thread.run.start(input=_say("ask"))
            await _condition(lambda: thread.interrupted)
        async with client.threads.stream(thread.thread_id, assistant_id="agent") as again:
            await again.run.start(input="sure")
            output = await again.output
    assert _texts(output) == ["ask", "answer: sure"]


async def test_an_interrupt_inside_a_subgraph_names_its_namespace(server: Server) -> None:
    client = get_client(url=server.url)
    async with asyncio.timeout(GUARD), client.threads.stream(assistant_id="asks_inside") as thread:
        await thread.run.start(input=_say("hi"))
        await _condition(lambda: thread.interrupted)
        asked = (await _until(thread.events, lambda e: e["method"] == "input.requested"))[-1]
        assert [s.split(":")[0] for s in asked["params"]["namespace"]] == ["inner"]
        assert thread.interrupts[0]["namespace"] == asked["params"]["namespace"]
        await thread.run.respond("deep")
        output = await thread.output
    assert _texts(output) == ["hi", "inner got: deep"]


async def test_subgraphs_start_and_complete(server: Server) -> None:
    client = get_client(url=server.url)
    async with asyncio.timeout(GUARD), client.threads.stream(assistant_id="nested") as thread:
        await thread.run.start(input=_say("hi"))
        children = [child async for child in thread.subgraphs]
        output = await thread.output
    assert [(c.graph_name, c.status) for c in children] == [("inner", "completed")]
    assert children[0].path[0].startswith("inner:")
    assert output["turns"] == 3


async def test_a_chat_model_streams_its_message(server: Server, transport: str) -> None:
    client = get_client(url=server.url)
    async with (
        asyncio.timeout(GUARD),
        client.threads.stream(assistant_id="talk", transport=transport) as thread,
    ):
        await thread.run.start(input=_say("hi"))
        streams = [message async for message in thread.messages]
        texts = [await message.text for message in streams]
        output = await thread.output
    assert texts == ["hello there my friend"]
    assert output["messages"][-1]["content"] == [
        {"type": "text", "text": "hello there my friend", "index": 0}
    ]


async def test_a_cancelled_run_is_interrupted_and_the_next_one_runs(
    server: Server, gates: Callable[[], Gate]
) -> None:
    client = get_client(url=server.url)
    gate = gates()
    async with asyncio.timeout(GUARD), client.threads.stream(assistant_id="agent") as thread:
        run = await thread.run.start(input=gate.input())
        await asyncio.to_thread(gate.started)
        events = thread.events
        await client.runs.cancel(thread.thread_id, run["run_id"])
        seen = await _until(events, _ended)
        gate.open()
        assert seen[-1]["params"]["data"] == {"event": "interrupted", "graph_name": "agent"}
        assert (await client.runs.get(thread.thread_id, run["run_id"]))["status"] == "interrupted"
        await thread.run.start(input=_say("again"))
        output = await thread.output
    assert _texts(output)[-1] == "you said: again"


async def test_a_failed_run_fails_its_output(server: Server) -> None:
    client = get_client(url=server.url)
    async with asyncio.timeout(GUARD), client.threads.stream(assistant_id="agent") as thread:
        await thread.run.start(input=_say("fail"))
        with pytest.raises(RuntimeError, match="the node failed on purpose"):
            await thread.output


async def test_a_reconnect_gets_the_events_after_since_numbered_alike(server: Server) -> None:
    client = get_client(url=server.url)
    async with asyncio.timeout(GUARD):
        async with client.threads.stream(assistant_id="nested") as thread:
            await thread.run.start(input=_say("hi"))
            await thread.output
        transport = ProtocolSseTransport(client=client.http.client, thread_id=thread.thread_id)
        try:
            every = transport.open_event_stream({"channels": ["values", "lifecycle"]})
            first = await _until(every.events, _ended)
            since = first[2]["seq"]
            later = transport.open_event_stream({"channels": ["lifecycle"], "since": since})
            again = await _until(later.events, _ended)
            await every.close()
            await later.close()
        finally:
            await transport.close()
    expected = [(e["seq"], e["event_id"]) for e in first if e["method"] == "lifecycle" and e["seq"] > since]
    assert [(e["seq"], e["event_id"]) for e in again] == expected
    assert [e["params"]["namespace"] != [] for e in again] == [True, True, False]  # inner started, completed


async def test_a_namespace_filter_keeps_to_its_subgraph(server: Server) -> None:
    client = get_client(url=server.url)
    async with asyncio.timeout(GUARD), client.threads.stream(assistant_id="nested") as thread:
        await thread.run.start(input=_say("hi"))
        await thread.output
        inner = thread.subscribe(["values", "lifecycle"], namespaces=[["inner"]], depth=0)
        events = await _until(
            inner, lambda e: e["method"] == "lifecycle" and e["params"]["data"]["event"] == "completed"
        )
    assert events and all(e["params"]["namespace"][0].startswith("inner:") for e in events)
    assert [e["method"] for e in events] == ["values", "lifecycle", "values", "lifecycle"]


async def test_runs_of_the_other_routes_are_in_the_stream(server: Server) -> None:
    """Runs made by ``runs.stream`` / ``runs.wait`` on the thread show as what they logged."""
    client = get_client(url=server.url)
    thread_id = (await client.threads.create())["thread_id"]
    async with asyncio.timeout(GUARD):
        async for _ in client.runs.stream(
            thread_id, "agent", input=_say("one"), stream_mode=["values", "updates"]
        ):
            pass
        await client.runs.wait(thread_id, "agent", input=_say("two"))  # (it logs only its end)
        transport = ProtocolSseTransport(client=client.http.client, thread_id=thread_id)
        try:
            handle = transport.open_event_stream({"channels": ["values", "updates", "lifecycle"]})
            first = await _until(handle.events, _ended)
            second = await _until(handle.events, _ended)
            await handle.close()
        finally:
            await transport.close()
    shown = [(e["method"], e["params"].get("node") or e["params"]["data"].get("event")) for e in first]
    assert shown == [
        ("lifecycle", "running"),
        ("values", None),
        ("updates", "chat"),
        ("values", None),
        ("lifecycle", "completed"),
    ]
    assert first[2]["params"]["data"]["turns"] == 1
    assert [e["params"]["data"]["event"] for e in second] == ["running", "completed"]
