"""Bearer-token auth, body size limit, CORS, the Host check, JSON-only bodies and the bind address
of ``plait serve`` (no bind beyond loopback without auth)."""

from __future__ import annotations

import os
import pathlib
import subprocess
from collections.abc import Iterator

import httpx
import pytest
from _serve_proc import APP, PLAIT, Server, free_port, running
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import AuthenticationError


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("guarded")
    args = ("--cors-origin", "http://app.example", "--max-body", "2000", "--allowed-host", "proxy.example")
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
    assert httpx.head(guarded.url + "/info").status_code == 200
    for method in ("POST", "PUT", "DELETE"):  # (open for GET and HEAD only, as docs/serve.md says)
        for path in ("/ok", "/info", "/openapi.json", "/docs"):
            assert httpx.request(method, guarded.url + path).status_code == 401, (method, path)


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


def test_a_host_header_naming_another_site_is_400(server: Server, guarded: Server) -> None:
    """DNS rebinding: a page of rebind.example whose name now points at 127.0.0.1."""
    port = server.url.rsplit(":", 1)[1]
    for host in (
        "rebind.example",
        f"rebind.example:{port}",
        "127.0.0.1:1",
        "localhost.example",
        "localhost:x",
    ):
        r = httpx.post(server.url + "/threads/search", json={}, headers={"Host": host})
        assert r.status_code == 400 and "--allowed-host" in r.json()["detail"], host
    assert httpx.get(server.url + "/ok", headers={"Host": "rebind.example"}).status_code == 400
    for host in ("localhost", f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"):
        assert httpx.post(server.url + "/threads/search", json={}, headers={"Host": host}).status_code == 200
    # --allowed-host: a reverse proxy's name
    r = httpx.post(
        guarded.url + "/threads/search",
        json={},
        headers={"Host": "proxy.example", "Authorization": "Bearer s3cret"},
    )
    assert r.status_code == 200


def test_bodies_that_change_state_must_be_json(server: Server) -> None:
    """A cross-site ``text/plain`` or form POST (no CORS preflight) is refused before any route."""
    before = httpx.post(server.url + "/threads/count", json={}).json()
    forged = [
        {"content": b"{}", "headers": {"Content-Type": "text/plain"}},
        {"data": {"metadata": "x"}},  # application/x-www-form-urlencoded
        {"files": {"f": b"{}"}},  # multipart/form-data
        {"content": b"{}"},  # no content type
    ]
    for kwargs in forged:
        r = httpx.post(server.url + "/threads", **kwargs)  # type: ignore[arg-type]
        assert r.status_code == 415 and "application/json" in r.json()["detail"], kwargs
    assert httpx.post(server.url + "/threads/count", json={}).json() == before  # nothing was made
    r = httpx.put(server.url + "/store/items", content=b'{"namespace": ["a"], "key": "k", "value": {}}')
    assert r.status_code == 415
    ok = httpx.post(
        server.url + "/threads", content=b"{}", headers={"Content-Type": "application/json; charset=utf-8"}
    )
    assert ok.status_code == 200
    tid = ok.json()["thread_id"]
    assert httpx.delete(f"{server.url}/threads/{tid}").status_code == 204  # no body: no content type needed


def _serve_exposed(tmp: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PLAIT_AUTH_TOKEN"}
    cmd = [str(PLAIT), "serve", "--config", str(APP / "plait.json"), "--db", str(tmp / "db.sqlite")]
    try:  # (the limit only so a server that starts fails the test instead of hanging it)
        return subprocess.run(
            [*cmd, "--port", str(free_port()), *args],
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"plait serve {' '.join(args)} started with no auth")


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10"])
def test_a_bind_beyond_loopback_without_auth_refuses_to_start(tmp_path: pathlib.Path, host: str) -> None:
    done = _serve_exposed(tmp_path, "--host", host)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "no auth" in lines[0], done.stderr
    assert "--auth-token" in lines[0] and "--insecure-no-auth" in lines[0]
    assert not (tmp_path / "db.sqlite").exists()  # refused before anything was opened


def test_insecure_no_auth_serves_beyond_loopback_with_a_warning(tmp_path: pathlib.Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PLAIT_AUTH_TOKEN"}
    with running(
        str(tmp_path / "db.sqlite"), tmp_path, "--host", "0.0.0.0", "--insecure-no-auth", env=env
    ) as srv:
        assert "WARNING: --insecure-no-auth" in srv.output() and "NO auth" in srv.output()
        assert get_sync_client(url=srv.url, api_key=None).threads.create()["thread_id"]
