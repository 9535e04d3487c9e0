"""``/mcp``: the assistants as MCP tools, driven by the ``mcp`` SDK's own Streamable HTTP client
against a real ``plait serve`` (both of the client's protocol eras: the initialize handshake and the
2026 per-request envelope)."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from _serve_proc import APP, Server, running
from langgraph_sdk import get_client
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent

from plait.server._config import ConfigError, Settings, load_config
from plait.server._mcp import simplified_schema, tool_name

MODES = ["legacy", "auto"]


def _text(result: CallToolResult) -> str:
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
    return result.content[0].text


def _client(url: str, mode: str, token: str | None = None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    transport = streamable_http_client(url + "/mcp", http_client=httpx2.AsyncClient(headers=headers))
    return Client(transport, mode=mode)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
async def test_each_assistant_is_a_tool_with_its_graphs_input_schema(server: Server, mode: str) -> None:
    async with _client(server.url, mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert {"agent", "two_steps", "nested", "talk", "asks_inside"} <= set(tools)
    agent = tools["agent"]
    assert agent.title == "agent" and agent.description
    schema = agent.input_schema
    assert schema["type"] == "object" and "$defs" not in schema  # (the message classes' definitions go)
    assert schema["properties"]["messages"]["type"] == "string"  # a list of messages: a message text
    assert schema["properties"]["turns"] == {"title": "Turns", "type": "integer"}
    assert agent.annotations is not None and agent.annotations.read_only_hint is False


@pytest.mark.parametrize("mode", MODES)
async def test_calling_a_tool_runs_its_assistant_statelessly(server: Server, mode: str) -> None:
    sdk = get_client(url=server.url)
    threads_before = await sdk.threads.search(limit=1000)
    async with _client(server.url, mode) as client:
        result = await client.call_tool("agent", {"messages": "hello"})
        listed = await client.call_tool(
            "agent", {"messages": [{"role": "user", "content": "from a list"}], "turns": 10}
        )
    assert not result.is_error, result
    output = json.loads(_text(result))
    assert [m["content"] for m in output["messages"]] == ["hello", "you said: hello"]
    assert output["turns"] == 1 and result.structured_content == output
    assert json.loads(_text(listed))["messages"][-1]["content"] == "you said: from a list"
    assert json.loads(_text(listed))["turns"] == 11
    assert len(await sdk.threads.search(limit=1000)) == len(threads_before)  # no thread kept


@pytest.mark.parametrize("mode", MODES)
async def test_bad_arguments_are_a_tool_error_naming_them(server: Server, mode: str) -> None:
    async with _client(server.url, mode) as client:
        result = await client.call_tool("agent", {"messages": 5, "turns": "many", "mesages": "hi"})
    assert result.is_error
    text = _text(result)
    assert "unknown argument 'mesages' (the tool takes messages, turns)" in text
    assert "messages: must be a message text or a list of messages" in text and "got int" in text
    assert "turns: 'many' is not of type 'integer'" in text


@pytest.mark.parametrize("mode", MODES)
async def test_a_failing_run_and_an_unknown_tool(server: Server, mode: str) -> None:
    async with _client(server.url, mode) as client:
        failed = await client.call_tool("agent", {"messages": "fail"})
        with pytest.raises(MCPError, match="Unknown tool: 'no_such_tool'"):
            await client.call_tool("no_such_tool", {})
    assert failed.is_error and _text(failed) == "RuntimeError: the node failed on purpose"


async def test_an_interrupted_run_returns_its_interrupt(server: Server) -> None:
    async with _client(server.url, "legacy") as client:
        result = await client.call_tool("agent", {"messages": "ask"})
    assert not result.is_error
    assert json.loads(_text(result))["__interrupt__"][0]["value"] == {"question": "sure?"}


async def test_a_created_assistant_is_a_tool_named_after_it(server: Server) -> None:
    sdk = get_client(url=server.url)
    made = await sdk.assistants.create(
        "agent", name="Polite agent!", description="Answers politely.", metadata={"mcp": "test"}
    )
    try:
        async with _client(server.url, "auto") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            result = await client.call_tool("Polite_agent", {"messages": "hi"})
        tool = tools["Polite_agent"]
        assert (tool.title, tool.description) == ("Polite agent!", "Answers politely.")
        assert json.loads(_text(result))["messages"][-1]["content"] == "you said: hi"
    finally:
        await sdk.assistants.delete(made["assistant_id"])


async def test_concurrent_calls(server: Server) -> None:
    results: dict[int, str] = {}
    async with _client(server.url, "legacy") as client:

        async def call(i: int) -> None:
            result = await client.call_tool("agent", {"messages": f"n{i}"})
            results[i] = json.loads(_text(result))["messages"][-1]["content"]

        async with anyio.create_task_group() as group:
            for i in range(6):
                group.start_soon(call, i)
    assert results == {i: f"you said: n{i}" for i in range(6)}


def test_the_endpoint_passes_the_servers_checks_and_opens_no_stream(server: Server) -> None:
    url = server.url + "/mcp"
    accept = {"Accept": "application/json, text/event-stream"}
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert httpx.post(url, json=listing, headers=accept, timeout=60).status_code == 200
    rebound = httpx.post(url, json=listing, headers={**accept, "Host": "evil.example"}, timeout=60)
    assert rebound.status_code == 400 and "Host header" in rebound.json()["detail"]
    cross_site = httpx.post(url, content=json.dumps(listing), headers={"Content-Type": "text/plain"})
    assert cross_site.status_code == 415
    stream = httpx.get(url, headers={"Accept": "text/event-stream"}, timeout=60)  # (a stream would hang)
    assert stream.status_code == 405 and stream.headers["allow"] == "POST, DELETE"
    document = httpx.get(server.url + "/openapi.json", timeout=60).json()
    assert document["paths"]["/mcp"]["post"]["tags"] == ["MCP"]


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("mcp-token")
    with running(str(tmp / "db.sqlite"), tmp, token="s3cret") as srv:
        yield srv


async def test_the_bearer_token_guards_the_tools(guarded: Server) -> None:
    async with _client(guarded.url, "legacy", token="s3cret") as client:
        assert "agent" in {t.name for t in (await client.list_tools()).tools}
        result = await client.call_tool("agent", {"messages": "with token"})
    assert json.loads(_text(result))["messages"][-1]["content"] == "you said: with token"
    answer = httpx.post(
        guarded.url + "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream"},
        timeout=60,
    )
    assert answer.status_code == 401
    with pytest.raises(Exception) as refused:  # noqa: PT011 - a group: the SDK client's task group ends
        async with _client(guarded.url, "legacy", token="wrong") as client:
            await client.list_tools()
    assert refused.group_contains(MCPError, match="error response")


def _config(tmp: pathlib.Path, http: dict[str, Any]) -> pathlib.Path:
    path = tmp / "plait.json"
    graphs = {"agent": f"{APP / 'agent.py'}:graph"}
    path.write_text(json.dumps({"graphs": graphs, "http": http}))
    return path


def test_http_disable_mcp_turns_the_endpoint_off(tmp_path: pathlib.Path) -> None:
    config = _config(tmp_path, {"disable_mcp": True}).name
    with running(str(tmp_path / "db.sqlite"), tmp_path, app=tmp_path, config=config) as srv:
        listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        assert httpx.post(srv.url + "/mcp", json=listing, timeout=60).status_code == 404
        assert httpx.get(srv.url + "/assistants/agent", timeout=60).status_code == 200
        assert "/mcp" not in httpx.get(srv.url + "/openapi.json", timeout=60).json()["paths"]
    assert load_config(_config(tmp_path, {"disable_mcp": False})).disabled == ()
    with pytest.raises(ConfigError, match="http.disable_mcp must be true or false, got 'yes'"):
        load_config(_config(tmp_path, {"disable_mcp": "yes"}))
    settings = Settings(config_path="x", graphs=(), db="x", disabled=("mcp",))
    assert Settings.from_json(settings.to_json()).disabled == ("mcp",)


def test_tool_names_and_schemas() -> None:
    assert tool_name("  My agent: v2 (beta) ") == "My_agent_v2_beta"
    assert tool_name("x" * 200) == "x" * 128
    message = {"$ref": "#/$defs/HumanMessage"}
    schema = {
        "type": "object",
        "properties": {
            "messages": {"type": "array", "title": "Msgs", "items": {"oneOf": [message]}},
            "doc": {"$ref": "#/$defs/Doc"},
        },
        "$defs": {"HumanMessage": {"type": "object"}, "Doc": {"$ref": "#/$defs/Part"}, "Part": {}},
    }
    simple, messages = simplified_schema(schema)
    assert messages == {"messages"} and simple["properties"]["messages"]["type"] == "string"
    assert set(simple["$defs"]) == {"Doc", "Part"}  # what the rest still refers to is kept
    assert simplified_schema(None) == ({"type": "object"}, frozenset())
