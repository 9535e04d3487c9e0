"""Bearer-token auth, body size limit, CORS and the default bind address of ``plait serve``."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import httpx
import pytest
from _serve_proc import Server, running
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import AuthenticationError


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("guarded")
    args = ("--cors-origin", "http://app.example", "--max-body", "2000")
    with running(str(tmp / "db.sqlite"), tmp, *args, token="s3cret") as srv:
        yield srv


def test_requests_need_the_bearer_token(guarded: Server) -> None:
    with pytest.raises(AuthenticationError):
        get_sync_client(url=guarded.url, api_key=None).threads.create()
    r = httpx.post(guarded.url + "/threads", json={}, headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 401 and r.json()["detail"].startswith("Missing or invalid bearer token")
    client = get_sync_client(url=guarded.url, headers={"Authorization": "Bearer s3cret"})
    tid = client.threads.create()["thread_id"]
    assert (
        client.runs.wait(tid, "agent", input={"messages": [{"role": "user", "content": "hi"}]})["turns"] == 1
    )
    assert (
        get_sync_client(url=guarded.url, api_key="s3cret").threads.get(tid)["thread_id"] == tid
    )  # x-api-key
    assert httpx.get(guarded.url + "/ok").status_code == 200  # health check stays open


def test_bodies_over_the_limit_are_413(guarded: Server) -> None:
    headers = {"Authorization": "Bearer s3cret"}
    big = {"metadata": {"x": "a" * 5000}}
    r = httpx.post(guarded.url + "/threads", json=big, headers=headers)
    assert r.status_code == 413 and "2000 bytes" in r.json()["detail"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while read
        yield b'{"metadata": {"x": "'
        for _ in range(10):
            yield b"a" * 500
        yield b'"}}'

    r = httpx.post(
        guarded.url + "/threads", content=chunks(), headers={**headers, "Content-Type": "application/json"}
    )
    assert r.status_code == 413


def test_cors_allows_only_the_configured_origin(guarded: Server) -> None:
    preflight = {"Origin": "http://app.example", "Access-Control-Request-Method": "POST"}
    r = httpx.options(guarded.url + "/threads", headers=preflight)
    assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "http://app.example"
    r = httpx.options(guarded.url + "/threads", headers={**preflight, "Origin": "http://evil.example"})
    assert r.headers.get("access-control-allow-origin") != "http://evil.example"


def test_cors_from_the_configs_http_section(server: Server, guarded: Server) -> None:
    preflight = {"Origin": "http://config.example", "Access-Control-Request-Method": "POST"}
    r = httpx.options(server.url + "/threads", headers=preflight)
    assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "http://config.example"
    assert r.headers["access-control-max-age"] == "600"
    # --cors-origin adds its origins to the config's
    r = httpx.options(guarded.url + "/threads", headers=preflight)
    assert r.headers["access-control-allow-origin"] == "http://config.example"


def test_binds_loopback_by_default(server: Server) -> None:
    cmdline = pathlib.Path(f"/proc/{server.proc.pid}/cmdline").read_bytes().split(b"\0")
    assert b"--host" not in cmdline  # started without --host ...
    port = server.url.rsplit(":", 1)[1]
    listening = pathlib.Path("/proc/net/tcp").read_text().lower()
    assert f"0100007f:{int(port):04x}" in listening  # ... it listens on 127.0.0.1 only
    assert f"00000000:{int(port):04x}" not in listening
