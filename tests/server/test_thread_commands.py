"""The thread protocol's commands and transports at their edges, against a real ``plait serve``:
refused requests (unknown thread, bad command), the WebSocket's own commands and its handshake
checks, ``agent.getTree``."""

from __future__ import annotations

import asyncio
import pathlib
import uuid
from typing import Any

import httpx
import orjson
import pytest
from _serve_proc import Server, running
from langgraph_sdk import get_client
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosedError, InvalidStatus

GUARD = 60.0
"""Seconds a test may take before it is taken as hung."""


def _say(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def _ws(server: Server, thread_id: str) -> str:
    return server.url.replace("http://", "ws://") + f"/threads/{thread_id}/stream/events"


async def _finished_thread(server: Server, graph: str = "agent", text: str = "hi") -> str:
    """A thread whose one protocol run has ended (on an interrupt, for ``text="ask"``)."""
    client = get_client(url=server.url)
    async with asyncio.timeout(GUARD), client.threads.stream(assistant_id=graph) as thread:
        run = await thread.run.start(input=_say(text))
        await client.runs.join(thread.thread_id, run["run_id"])
    return thread.thread_id


async def _command(server: Server, thread_id: str, body: Any) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.url) as http:
        return await http.post(f"/threads/{thread_id}/commands", json=body)


async def test_an_unknown_thread_is_a_404(server: Server) -> None:
    client = get_client(url=server.url)
    missing = str(uuid.uuid4())
    async with asyncio.timeout(GUARD), client.threads.stream(missing, assistant_id="agent") as thread:
        with pytest.raises(httpx.HTTPStatusError) as refused:
            async for _ in thread.subscribe(["values"]):
                pass
    assert refused.value.response.status_code == 404
    async with httpx.AsyncClient(base_url=server.url) as http:
        stream = await http.post(f"/threads/{missing}/stream/events", json={"channels": ["values"]})
    assert stream.json()["detail"] == f"Thread {missing} not found"
    answer = await _command(
        server, missing, {"id": 3, "method": "input.respond", "params": {"interrupt_id": "x"}}
    )
    assert answer.status_code == 404
    assert answer.json()["detail"] == f"Thread {missing} not found"


async def test_a_bad_command_is_a_422_naming_the_field(server: Server) -> None:
    client = get_client(url=server.url)
    async with asyncio.timeout(GUARD), client.threads.stream(assistant_id="agent") as thread:
        with pytest.raises(httpx.HTTPStatusError) as refused:
            await thread.run.start(input="not an object")
    assert refused.value.response.status_code == 422
    assert refused.value.response.json() == {
        "type": "error",
        "id": 1,
        "error": "invalid_argument",
        "message": "params.input: expected an object or a list, got 'not an object'",
        "detail": "params.input: expected an object or a list, got 'not an object'",
    }
    thread_id = thread.thread_id
    cases = [
        ({"method": "run.start", "params": {}}, "id: expected a value"),
        ({"id": 1, "method": "run.start", "params": {}}, "params.assistant_id: expected a value"),
        (
            {"id": 1, "method": "run.start", "params": {"assistant_id": 7}},
            "params.assistant_id: expected a string",
        ),
        (
            {"id": 1, "method": "input.respond", "params": {"responses": []}},
            "params.responses: expected at least 1",
        ),
        (
            {"id": 1, "method": "run.frob", "params": {}},
            "method: unknown command 'run.frob'; choose from run.start",
        ),
    ]
    for body, detail in cases:
        answer = await _command(server, thread_id, body)
        assert answer.status_code == 422, body
        assert answer.json()["detail"].startswith(detail), answer.json()


async def test_what_the_thread_refuses_is_an_error_answer(server: Server) -> None:
    thread_id = await _finished_thread(server, text="ask")
    answer = await _command(
        server, thread_id, {"id": 4, "method": "input.respond", "params": {"interrupt_id": "nope"}}
    )
    assert answer.status_code == 200
    found = answer.json()
    assert (found["type"], found["id"], found["error"]) == ("error", 4, "no_such_interrupt")
    assert found["message"].startswith(f"interrupt nope is not pending on thread {thread_id} (pending: ['")
    for method in ("state.get", "subscription.subscribe"):
        refused = (await _command(server, thread_id, {"id": 5, "method": method, "params": {}})).json()
        assert (refused["error"], refused["message"].split(" ")[0]) == ("not_supported", method)
    traced = {"id": 6, "method": "run.start", "params": {"assistant_id": "agent", "langsmith_tracer": {}}}
    assert (await _command(server, thread_id, traced)).json()["error"] == "not_supported"


async def test_an_answer_to_several_interrupts_at_once(server: Server) -> None:
    thread_id = await _finished_thread(server, text="ask")
    state = await get_client(url=server.url).threads.get_state(thread_id)
    (interrupt,) = state["interrupts"]
    body = {
        "id": 2,
        "method": "input.respond",
        "params": {"responses": [{"interrupt_id": interrupt["id"], "response": "ok"}]},
    }
    assert (await _command(server, thread_id, body)).json() == {
        "type": "success",
        "id": 2,
        "result": {},
        "meta": {"applied_through_seq": 0},
    }
    client = get_client(url=server.url)
    async with asyncio.timeout(GUARD):
        for run in await client.runs.list(thread_id):  # (the first, and the one answering)
            await client.runs.join(thread_id, run["run_id"])
        values = await client.threads.get_state(thread_id)
    assert values["values"]["messages"][-1]["content"] == "answer: ok"


async def test_agent_get_tree_shows_the_subgraphs(server: Server) -> None:
    thread_id = await _finished_thread(server, graph="nested")
    tree = (await _command(server, thread_id, {"id": 9, "method": "agent.getTree", "params": {}})).json()
    root = tree["result"]["tree"]
    assert (root["namespace"], root["status"], root["graph_name"]) == ([], "completed", "nested")
    (child,) = root["children"]
    assert (child["status"], child["graph_name"]) == ("completed", "inner")
    assert child["namespace"][0].startswith("inner:")


async def _frames(socket: ClientConnection, count: int) -> list[dict[str, Any]]:
    return [orjson.loads(await socket.recv()) for _ in range(count)]


async def test_websocket_subscriptions(server: Server) -> None:
    thread_id = await _finished_thread(server)
    async with asyncio.timeout(GUARD), connect(_ws(server, thread_id)) as socket:
        await socket.send(
            orjson.dumps({"id": 1, "method": "subscription.subscribe", "params": {"channels": ["lifecycle"]}})
        )
        running, completed, answer = await _frames(socket, 3)
        assert [running["params"]["data"]["event"], completed["params"]["data"]["event"]] == [
            "running",
            "completed",
        ]
        assert answer["type"] == "success" and answer["result"]["replayed_events"] == 2
        subscription = answer["result"]["subscription_id"]
        await socket.send(
            orjson.dumps(
                {"id": 2, "method": "subscription.reconnect", "params": {"channels": ["values"], "since": 2}}
            )
        )
        (last_values, again) = await _frames(socket, 2)
        assert (last_values["method"], last_values["seq"], again["result"]["replayed_events"]) == (
            "values",
            3,
            1,
        )
        await socket.send(
            orjson.dumps(
                {"id": 3, "method": "subscription.unsubscribe", "params": {"subscription_id": subscription}}
            )
        )
        assert (await _frames(socket, 1))[0] == {
            "type": "success",
            "id": 3,
            "result": {},
            "meta": {"applied_through_seq": 4},
        }
        await socket.send(
            orjson.dumps(
                {"id": 4, "method": "subscription.unsubscribe", "params": {"subscription_id": subscription}}
            )
        )
        assert (await _frames(socket, 1))[0]["error"] == "no_such_subscription"
        await socket.send(b"{not json")
        assert (await _frames(socket, 1))[0]["error"] == "invalid_argument"
        await socket.send(orjson.dumps({"id": "x", "method": "run.start"}))
        refused = (await _frames(socket, 1))[0]
        assert (refused["id"], refused["message"]) == (None, "id: expected an integer, got 'x'")
        await socket.send(
            orjson.dumps(
                {"id": 5, "method": "run.start", "params": {"assistant_id": "agent", "input": _say("more")}}
            )
        )
        started = (await _frames(socket, 1))[0]
        assert started["type"] == "success" and started["result"]["run_id"]


async def test_websocket_handshake_checks(server: Server) -> None:
    thread_id = await _finished_thread(server)
    async with asyncio.timeout(GUARD):
        with pytest.raises(InvalidStatus) as other_site:
            async with connect(
                _ws(server, thread_id), additional_headers=[("Origin", "http://evil.example")]
            ):
                pass
        assert other_site.value.response.status_code == 403
        async with connect(_ws(server, thread_id), additional_headers=[("Origin", server.url)]) as same_site:
            await same_site.send(orjson.dumps({"id": 1, "method": "agent.getTree", "params": {}}))
            assert (await _frames(same_site, 1))[0]["result"]["tree"]["graph_name"] == "agent"
        with pytest.raises(ConnectionClosedError) as missing:
            async with connect(_ws(server, str(uuid.uuid4()))) as socket:
                await socket.recv()
        assert missing.value.rcvd is not None and missing.value.rcvd.code == 4404


def test_websocket_handshake_needs_the_token(tmp_path: pathlib.Path) -> None:
    async def check(server: Server) -> None:
        headers = {"Authorization": "Bearer s3cret"}
        async with httpx.AsyncClient(base_url=server.url, headers=headers) as http:
            thread_id = (await http.post("/threads", json={})).json()["thread_id"]
        with pytest.raises(InvalidStatus) as refused:
            async with connect(_ws(server, thread_id)):
                pass
        assert refused.value.response.status_code == 401
        async with connect(_ws(server, thread_id), additional_headers=headers) as socket:
            await socket.send(orjson.dumps({"id": 1, "method": "state.get", "params": {}}))
            assert (await _frames(socket, 1))[0]["error"] == "not_supported"

    with running(str(tmp_path / "server.sqlite"), tmp_path, token="s3cret") as server:
        asyncio.run(asyncio.wait_for(check(server), GUARD))


@pytest.mark.parametrize("transport", ["sse", "websocket"])
def test_under_custom_auth_each_user_streams_only_their_threads(
    tmp_path: pathlib.Path, transport: str
) -> None:
    """The config's auth (tests/server/app_auth: LangGraph's resource-ownership example) on both transports."""
    alice, bob = ({"Authorization": f"Bearer {who}-token"} for who in ("alice", "bob"))
    app = pathlib.Path(__file__).with_name("app_auth")

    async def check(server: Server) -> None:
        client = get_client(url=server.url, headers=alice)
        async with client.threads.stream(assistant_id="agent", transport=transport, headers=alice) as thread:
            await thread.run.start(input={"text": "hi"})
            output = await thread.output
        assert output["who"]["identity"] == "alice"
        assert (await client.threads.get(thread.thread_id))["metadata"]["owner"] == "alice"
        as_bob = get_client(url=server.url, headers=bob)
        async with as_bob.threads.stream(
            thread.thread_id, assistant_id="agent", transport=transport, headers=bob
        ) as other:
            seen: list[Any] = []
            error: BaseException | None = None
            try:  # (the SDK's WebSocket transport ends the iteration quietly when the close comes after
                # its subscribe was sent, and raises when it comes before: either way bob sees nothing)
                async for event in other.subscribe(["values"]):
                    seen.append(event)
            except (httpx.HTTPStatusError, ConnectionClosedError) as exc:
                error = exc
            with pytest.raises(httpx.HTTPStatusError) as started:
                await other.run.start(input={"text": "bob"})
        assert seen == []
        assert started.value.response.status_code == 404
        if transport == "sse":  # the 404 of the stream's request
            assert isinstance(error, httpx.HTTPStatusError) and error.response.status_code == 404
        else:  # the server closes bob's connection with 4404, whatever the SDK makes of it
            assert error is None or isinstance(error, ConnectionClosedError)
            async with connect(_ws(server, thread.thread_id), additional_headers=bob) as ws:
                with pytest.raises(ConnectionClosedError) as closed:
                    await ws.recv()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4404
        with pytest.raises(InvalidStatus) as anonymous:
            async with connect(_ws(server, thread.thread_id)):
                pass
        assert anonymous.value.response.status_code == 401

    with running(str(tmp_path / "server.sqlite"), tmp_path, app=app, config="langgraph.json") as server:
        asyncio.run(asyncio.wait_for(check(server), GUARD))
