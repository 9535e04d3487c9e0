"""Custom auth on the server's own inner calls and helper routes.

``/mcp`` and ``/a2a`` call the server's own routes on behalf of their caller: the caller is
authenticated once per outer request (its user is lent to the inner calls, which authorization still
checks route by route), and the header that lends it is never taken from outside."""

from __future__ import annotations

import pathlib
import shutil
from collections.abc import Iterator

import httpx
import httpx2
import pytest
from _serve_proc import Server, running
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from plait.server._auth_inner import HEADER

_AUTH = """
import os
from langgraph_sdk import Auth

auth = Auth()


@auth.authenticate
async def authenticate(authorization: str | None, method: str, path: str) -> str:
    with open(os.environ["AUTH_CALLS"], "a") as calls:
        calls.write(f"{method} {path}\\n")
    users = {"Bearer once": "alice", "Bearer admin": "admin", "Bearer mallory": "mallory"}
    if authorization not in users:
        raise Auth.exceptions.HTTPException(status_code=401, detail="who are you?")
    return users[authorization]


@auth.on
async def everything(ctx: Auth.types.AuthContext, value: dict) -> dict | bool:
    if ctx.user.identity != "alice":
        return ctx.user.identity == "admin"
    if isinstance(value.get("metadata", {}), dict):
        value.setdefault("metadata", {})["owner"] = ctx.user.identity
    return {"owner": ctx.user.identity}
"""
_HEADERS = {"Authorization": "Bearer once", "Accept": "application/json"}


@pytest.fixture(scope="module")
def counted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, pathlib.Path]]:
    tmp: pathlib.Path = tmp_path_factory.mktemp("auth-inner")
    app = pathlib.Path(__file__).parent / "app_auth"
    shutil.copy(app / "agent.py", tmp / "agent.py")
    shutil.copy(app / "langgraph.json", tmp / "langgraph.json")
    (tmp / "auth.py").write_text(_AUTH)
    calls = tmp / "calls.log"
    env = {"AUTH_CALLS": str(calls)}
    with running(str(tmp / "db.sqlite"), tmp, app=tmp, config="langgraph.json", env=env) as srv:
        yield srv, calls


def _calls(path: pathlib.Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_a2a_authenticates_once_per_request(counted: tuple[Server, pathlib.Path]) -> None:
    server, calls = counted
    made = httpx.post(server.url + "/assistants", json={"graph_id": "agent"}, headers=_HEADERS, timeout=60)
    url = f"/a2a/{made.json()['assistant_id']}"
    calls.write_text("")
    message = {"messageId": "m1", "role": "user", "parts": [{"kind": "data", "data": {"text": "hi"}}]}
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}
    sent = httpx.post(server.url + url, json=body, headers=_HEADERS, timeout=120)
    assert sent.status_code == 200 and "result" in sent.json(), sent.text
    assert _calls(calls) == [f"POST {url}"]
    calls.write_text("")
    body = {"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": sent.json()["result"]["id"]}}
    got = httpx.post(server.url + url, json=body, headers=_HEADERS, timeout=60)
    assert got.json()["result"]["status"]["state"] == "completed", got.text
    assert httpx.get(server.url + url, headers=_HEADERS, timeout=60).status_code == 200  # (the card)
    assert _calls(calls) == [f"POST {url}", f"GET {url}"]


async def test_mcp_authenticates_once_per_request(counted: tuple[Server, pathlib.Path]) -> None:
    server, calls = counted
    calls.write_text("")
    http = httpx2.AsyncClient(headers={"Authorization": "Bearer once"})
    async with Client(streamable_http_client(server.url + "/mcp", http_client=http), mode="legacy") as client:  # type: ignore[arg-type]
        tools = (await client.list_tools()).tools
        assert tools  # (the assistants the user may see)
        result = await client.call_tool(tools[0].name, {"text": "hi"})
        assert not result.is_error, result
    found = _calls(calls)
    assert found and all(line.endswith(" /mcp") for line in found), found


def test_a_forged_inner_header_is_not_taken(counted: tuple[Server, pathlib.Path]) -> None:
    server, _ = counted
    for forged in ("x.y", "", "guess." + "A" * 22, "." * 3):
        answer = httpx.get(server.url + "/assistants/agent", headers={HEADER: forged}, timeout=60)
        assert answer.status_code == 401, (forged, answer.text)
        listed = httpx.post(server.url + "/assistants/search", json={}, headers={HEADER: forged}, timeout=60)
        assert listed.status_code == 401
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}  # (nor passed on by /mcp's inner calls)
    assert httpx.post(server.url + "/mcp", json=body, headers={HEADER: "x.y"}, timeout=60).status_code == 401


def test_the_ui_graph_drawing_asks_the_assistants_read_handler(counted: tuple[Server, pathlib.Path]) -> None:
    server, _ = counted
    url = server.url + "/ui/api/graphs/agent"

    def get(token: str) -> httpx.Response:
        return httpx.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=60)

    assert get("admin").status_code == 200 and "svg" in get("admin").json()  # (allowed)
    assert get("mallory").status_code == 403  # (refused)
    assert get("once").status_code == 404  # (the filter hides the graph's default assistant)
    assert httpx.get(url, timeout=60).status_code == 401


def test_an_agent_card_refused_by_auth_is_a_403(counted: tuple[Server, pathlib.Path]) -> None:
    server, _ = counted
    refused = httpx.get(server.url + "/a2a/agent", headers={"Authorization": "Bearer mallory"}, timeout=60)
    assert refused.status_code == 403 and "detail" in refused.json()
    allowed = httpx.get(server.url + "/a2a/agent", headers={"Authorization": "Bearer admin"}, timeout=60)
    assert allowed.status_code == 200 and allowed.json()["name"] == "agent"


def test_the_open_routes_are_open_for_get_and_head_only(counted: tuple[Server, pathlib.Path]) -> None:
    server, _ = counted
    for path in ("/ok", "/info", "/metrics", "/openapi.json", "/docs", "/ui"):
        assert httpx.get(server.url + path, timeout=60).status_code == 200, path
        assert httpx.head(server.url + path, timeout=60).status_code == 200, path
        for method in ("POST", "PUT", "DELETE"):  # (through auth like any other request)
            assert httpx.request(method, server.url + path, timeout=60).status_code == 401, (method, path)
