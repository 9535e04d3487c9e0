"""``/a2a/{assistant_id}``: an assistant as an A2A agent, driven by the ``a2a-sdk`` client (A2A 1.0)
and by raw JSON-RPC with A2A 0.3's method names, against a real ``plait serve``."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from _serve_proc import APP, Server, running
from a2a.client import ClientConfig, create_client
from a2a.types.a2a_pb2 import (
    ROLE_USER,
    TASK_STATE_COMPLETED,
    TASK_STATE_INPUT_REQUIRED,
    GetTaskRequest,
    Message,
    Part,
    SendMessageRequest,
    StreamResponse,
)
from langgraph_sdk import get_client


def _rpc(url: str, method: str, params: dict[str, Any], accept: str = "application/json") -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": "r1", "method": method, "params": params}
    answer = httpx.post(url, json=body, headers={"Accept": accept}, timeout=120)
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    assert found["id"] == "r1"
    return found


def _message(text: str, n: str = "m1", **extra: Any) -> dict[str, Any]:
    return {"messageId": n, "role": "user", "parts": [{"kind": "text", "text": text}], **extra}


def test_the_agent_card(server: Server) -> None:
    card = httpx.get(server.url + "/a2a/agent/.well-known/agent-card.json", timeout=60).json()
    assistant_id = card["url"].rsplit("/", 1)[1]
    assert card["name"] == "agent" and card["capabilities"]["streaming"] is True
    assert card["supportedInterfaces"] == [
        {"url": f"{server.url}/a2a/{assistant_id}", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    ]
    assert card["skills"][0]["metadata"]["inputSchema"]["properties"] == ["messages", "turns"]
    for path in (f"/a2a/{assistant_id}", f"/.well-known/agent-card.json?assistant_id={assistant_id}"):
        assert httpx.get(server.url + path, timeout=60).json() == card
    missing = httpx.get(server.url + "/.well-known/agent-card.json", timeout=60)
    assert missing.status_code == 400 and "assistant_id" in missing.json()["error"]["message"]
    assert httpx.get(server.url + "/a2a/nope/.well-known/agent-card.json", timeout=60).status_code == 404
    paths = httpx.get(server.url + "/openapi.json", timeout=60).json()["paths"]
    assert paths["/a2a/{assistant_id}"]["post"]["tags"] == ["A2A"] and "/.well-known/agent-card.json" in paths


def test_message_send_a_conversation_and_its_tasks(server: Server) -> None:
    url = server.url + "/a2a/agent"
    task = _rpc(url, "message/send", {"message": _message("hello")})["result"]
    context = task["contextId"]
    assert task["kind"] == "task" and task["status"]["state"] == "completed"
    assert task["id"].startswith(context + ":")
    assert [(m["role"], m["parts"][0]["text"]) for m in task["history"]] == [
        ("user", "hello"),
        ("agent", "you said: hello"),
    ]
    assert task["artifacts"][0]["parts"] == [{"kind": "text", "text": "you said: hello"}]
    assert get_client(url=server.url) is not None
    thread = httpx.get(f"{server.url}/threads/{context}", timeout=60).json()  # the context is a thread
    assert thread["values"]["turns"] == 1

    again = _rpc(url, "message/send", {"message": _message("again", "m2", contextId=context)})["result"]
    assert again["contextId"] == context and again["id"] != task["id"]
    assert [m["parts"][0]["text"] for m in again["history"]][-2:] == ["again", "you said: again"]
    short = _rpc(
        url, "message/send", {"message": _message("x", "m3"), "configuration": {"historyLength": 1}}
    )["result"]
    assert len(short["history"]) == 1

    got = _rpc(url, "tasks/get", {"id": task["id"]})["result"]
    assert got["id"] == task["id"] and got["status"]["state"] == "completed"
    assert _rpc(url, "tasks/cancel", {"id": task["id"]})["error"]["code"] == -32002  # (done: not cancelable)
    unknown = _rpc(url, "tasks/get", {"id": f"{context}:00000000-0000-0000-0000-000000000000"})
    assert unknown["error"]["code"] == -32001


def test_an_interrupt_is_input_required_and_the_answer_resumes_the_task(server: Server) -> None:
    url = server.url + "/a2a/agent"
    asked = _rpc(url, "message/send", {"message": _message("ask")})["result"]
    assert asked["status"]["state"] == "input-required"
    interrupt = asked["artifacts"][0]
    assert interrupt["name"] == "Interrupt" and interrupt["parts"][0]["data"]["value"] == {
        "question": "sure?"
    }
    answered = _rpc(url, "message/send", {"message": _message("yes", "m2", taskId=asked["id"])})["result"]
    assert answered["id"] == asked["id"] and answered["status"]["state"] == "completed"
    assert answered["artifacts"][0]["parts"][0]["text"] == "answer: yes"
    assert _rpc(url, "tasks/get", {"id": asked["id"]})["result"]["status"]["state"] == "completed"
    late = _rpc(url, "message/send", {"message": _message("more", "m3", taskId=asked["id"])})
    assert late["error"]["code"] == -32004 and "terminal" in late["error"]["message"]


def test_errors_name_what_is_wrong(server: Server) -> None:
    url = server.url + "/a2a/agent"
    failed = _rpc(url, "message/send", {"message": _message("fail")})["result"]
    assert failed["status"]["state"] == "failed"
    assert failed["status"]["message"]["parts"][0]["text"] == "RuntimeError: the node failed on purpose"
    no_parts = _rpc(url, "message/send", {"message": {"messageId": "m", "role": "user", "parts": []}})
    assert no_parts["error"]["code"] == -32602 and "parts" in no_parts["error"]["message"]
    file_part = {"messageId": "m", "role": "user", "parts": [{"kind": "file", "file": {"uri": "x"}}]}
    assert _rpc(url, "message/send", {"message": file_part})["error"]["code"] == -32005
    bad_context = _rpc(url, "message/send", {"message": _message("hi", contextId="not-a-uuid")})
    assert "contextId must be a UUID" in bad_context["error"]["message"]
    assert _rpc(url, "tasks/list", {})["error"]["code"] == -32601
    assert "not implemented" in _rpc(url, "ListTasks", {})["error"]["message"]
    body = {"jsonrpc": "2.0", "id": 3, "method": "message/send", "params": {"message": _message("hi")}}
    nobody = httpx.post(
        server.url + "/a2a/no-such-assistant", json=body, headers={"Accept": "application/json"}
    )
    assert nobody.status_code == 404 and nobody.json()["error"]["code"] == -32602  # (an agent URL of no one)
    assert httpx.delete(url, timeout=60).status_code == 405
    refused = httpx.post(
        url,
        json={"jsonrpc": "2.0", "id": 1, "method": "message/stream", "params": {"message": _message("x")}},
        headers={"Accept": "application/json"},
    )
    assert refused.status_code == 400 and "text/event-stream" in refused.json()["detail"]
    for bad in ("../assistants/agent", "not-a-thread"):  # (the thread part of a task id is a UUID)
        found = _rpc(url, "tasks/get", {"id": f"{bad}:00000000-0000-0000-0000-000000000000"})["error"]
        assert found["code"] == -32602 and "thread id of the task id" in found["message"], found
        assert bad in found["message"]


def test_message_stream_sends_the_task_updates_and_the_artifact(server: Server) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "message/stream",
        "params": {"message": _message("streamed")},
    }
    results: list[dict[str, Any]] = []
    with httpx.stream(
        "POST", server.url + "/a2a/agent", json=body, headers={"Accept": "text/event-stream"}, timeout=120
    ) as stream:
        for line in stream.iter_lines():
            if line.startswith("data:"):
                results.append(json.loads(line[5:])["result"])
    kinds = [(r["kind"], r.get("status", {}).get("state")) for r in results]
    assert kinds == [
        ("task", "submitted"),
        ("status-update", "working"),
        ("status-update", "working"),  # the AI's message
        ("artifact-update", None),
        ("status-update", "completed"),
    ]
    assert results[2]["status"]["message"]["parts"][0]["text"] == "you said: streamed"
    assert results[3]["artifact"]["parts"][0]["text"] == "you said: streamed"
    assert results[-1]["final"] is True and len({r.get("taskId", r.get("id")) for r in results}) == 1


async def test_the_a2a_sdk_client(server: Server) -> None:
    async with httpx.AsyncClient(timeout=120) as http:
        for streaming in (False, True):
            client = await create_client(
                server.url + "/a2a/agent", ClientConfig(httpx_client=http, streaming=streaming)
            )
            request = SendMessageRequest(
                message=Message(message_id="s1", role=ROLE_USER, parts=[Part(text=f"sdk {streaming}")])
            )
            events: list[StreamResponse] = [event async for event in client.send_message(request)]
            if streaming:
                assert events[0].HasField("task") and events[-1].HasField("status_update")
                assert events[-1].status_update.status.state == TASK_STATE_COMPLETED
                artifact = next(e.artifact_update.artifact for e in events if e.HasField("artifact_update"))
                assert artifact.parts[0].text == "you said: sdk True"
                task_id = events[0].task.id
            else:
                (only,) = events
                assert only.task.status.state == TASK_STATE_COMPLETED
                assert only.task.artifacts[0].parts[0].text == "you said: sdk False"
                assert [m.parts[0].text for m in only.task.history] == ["sdk False", "you said: sdk False"]
                task_id = only.task.id
            got = await client.get_task(GetTaskRequest(id=task_id))
            assert got.status.state == TASK_STATE_COMPLETED
        asked = SendMessageRequest(message=Message(message_id="s2", role=ROLE_USER, parts=[Part(text="ask")]))
        client = await create_client(
            server.url + "/a2a/agent", ClientConfig(httpx_client=http, streaming=False)
        )
        (waiting,) = [event async for event in client.send_message(asked)]
        assert waiting.task.status.state == TASK_STATE_INPUT_REQUIRED


@pytest.fixture(scope="module")
def no_a2a(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp: pathlib.Path = tmp_path_factory.mktemp("no-a2a")
    config = tmp / "plait.json"
    config.write_text(
        json.dumps({"graphs": {"agent": f"{APP / 'agent.py'}:graph"}, "http": {"disable_a2a": True}})
    )
    with running(str(tmp / "db.sqlite"), tmp, app=tmp, config=config.name) as srv:
        yield srv


def test_http_disable_a2a_turns_the_routes_off(no_a2a: Server) -> None:
    assert httpx.get(no_a2a.url + "/a2a/agent", timeout=60).status_code == 404
    assert (
        httpx.get(no_a2a.url + "/.well-known/agent-card.json?assistant_id=agent", timeout=60).status_code
        == 404
    )
    assert httpx.post(no_a2a.url + "/mcp", json={}, timeout=60).status_code != 404  # (MCP stays)
    paths = httpx.get(no_a2a.url + "/openapi.json", timeout=60).json()["paths"]
    assert "/a2a/{assistant_id}" not in paths and "/mcp" in paths


@pytest.fixture(scope="module")
def with_auth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp: pathlib.Path = tmp_path_factory.mktemp("a2a-auth")
    app = pathlib.Path(__file__).parent / "app_auth"  # (LangGraph's resource-ownership example)
    with running(str(tmp / "db.sqlite"), tmp, app=app, config="langgraph.json") as srv:
        yield srv


def _as(user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {user}-token", "Accept": "application/json"}


def test_the_configs_auth_applies_to_a2a(with_auth: Server) -> None:
    def agent_of(user: str) -> str:  # (under the ownership rules each user runs assistants of their own)
        made = httpx.post(with_auth.url + "/assistants", json={"graph_id": "agent"}, headers=_as(user))
        return f"{with_auth.url}/a2a/{made.json()['assistant_id']}"

    alices, bobs = agent_of("alice"), agent_of("bob")

    def send(user: str, url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        answer = httpx.post(url, json=body, headers=_as(user), timeout=120)
        assert answer.status_code == 200, answer.text
        found: dict[str, Any] = answer.json()
        return found

    data = {"messageId": "a1", "role": "user", "parts": [{"kind": "data", "data": {"text": "secret"}}]}
    task = send("alice", alices, "message/send", {"message": data})["result"]
    assert json.loads(task["artifacts"][0]["parts"][0]["text"])["who"]["identity"] == "alice"  # (her run)
    into_hers = send("bob", bobs, "message/send", {"message": {**data, "contextId": task["contextId"]}})
    assert "error" in into_hers and "secret" not in json.dumps(into_hers)
    assert send("bob", bobs, "tasks/get", {"id": task["id"]})["error"]["code"] == -32001
    assert send("alice", alices, "tasks/get", {"id": task["id"]})["result"]["status"]["state"] == "completed"
    assert httpx.get(alices, headers=_as("bob"), timeout=60).status_code == 404  # (her agent's card)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": task["id"]}}
    assert httpx.post(alices, json=body, headers=_as("bob"), timeout=60).status_code == 404
    assert httpx.post(alices, json=body, timeout=60).status_code == 401
