"""The authenticating middleware: what ``@auth.authenticate`` is given, what it may answer, which
requests it sees; and ``plait serve`` counting a config's auth as auth."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
from typing import Any

import httpx
import pytest
from _serve_proc import PLAIT, ROOT, running
from langgraph_sdk import Auth
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.testclient import TestClient, WebSocketDenialResponse
from starlette.websockets import WebSocket

from plait.server._auth import Authenticate, AuthUser, read_auth
from plait.server._custom import UserRoutes

APP_AUTH = pathlib.Path(__file__).parent / "app_auth"


def _app(auth: Auth, custom_routes: bool = False) -> Starlette:
    async def who(request: Request) -> Response:
        user = request.scope["user"]
        assert isinstance(user, AuthUser)
        return JSONResponse({"identity": user.identity, "scopes": list(request.scope["auth"].scopes)})

    async def open_route(request: Request) -> Response:
        return JSONResponse({"user": str(request.scope.get("user"))})

    user_app = Starlette(routes=[Route("/custom", open_route)])
    loaded = read_auth(auth, "test", custom_routes)
    loaded.user_routes = UserRoutes(user_app)
    routes = [loaded.user_routes, Route("/who", who, methods=["GET", "POST"]), Route("/ok", open_route)]
    return Starlette(routes=routes, middleware=[Middleware(Authenticate, auth=loaded)])


async def _get(app: Starlette, path: str, **kwargs: Any) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        return await client.get(path, **kwargs)


async def test_authenticate_gets_the_parameters_it_names() -> None:
    auth = Auth()
    seen: dict[str, Any] = {}

    @auth.authenticate
    async def authenticate(  # noqa: PLR0913 - every parameter LangGraph passes
        request: Request,
        authorization: str | None,
        headers: dict[bytes, bytes],
        path: str,
        method: str,
        query_params: Any,
        scopes: list[str],
        scope: dict[str, Any],
    ) -> tuple[list[str], dict[str, Any]]:
        seen.update(
            request_path=request.url.path,
            authorization=authorization,
            header=headers.get(b"x-team"),
            path=path,
            method=method,
            query=query_params.get("q"),
            scopes=scopes,
            scope_type=scope["type"],
        )
        return ["read"], {"identity": "alice", "team": "red"}

    answer = await _get(_app(auth), "/who?q=1", headers={"Authorization": "Bearer t", "X-Team": "red"})
    assert answer.status_code == 200 and answer.json() == {"identity": "alice", "scopes": ["read"]}
    assert seen == {
        "request_path": "/who",
        "authorization": "Bearer t",
        "header": b"red",
        "path": "/who",
        "method": "GET",
        "query": "1",
        "scopes": [],
        "scope_type": "http",
    }


async def test_a_sync_authenticate_runs_off_the_event_loop() -> None:
    auth = Auth()

    def authenticate(authorization: str | None) -> str:
        return "carol"

    auth.authenticate(authenticate)  # (the SDK takes any callable; LangGraph's server runs it in a thread)
    assert (await _get(_app(auth), "/who")).json()["identity"] == "carol"


@pytest.mark.parametrize(
    ("raised", "status", "detail"),
    [
        (Auth.exceptions.HTTPException(), 401, "Unauthorized"),
        (Auth.exceptions.HTTPException(status_code=403, detail="no entry"), 403, "no entry"),
    ],
)
async def test_a_refusal_is_answered_with_its_status(raised: Exception, status: int, detail: str) -> None:
    auth = Auth()

    @auth.authenticate
    async def authenticate(headers: dict[bytes, bytes]) -> str:
        raise raised

    answer = await _get(_app(auth), "/who")
    assert (answer.status_code, answer.json()) == (status, {"detail": detail})
    assert (await _get(_app(auth), "/ok")).status_code == 200  # open routes never ask


async def test_custom_routes_are_open_unless_the_config_authenticates_them() -> None:
    auth = Auth()

    @auth.authenticate
    async def authenticate(authorization: str | None) -> str:
        if authorization != "Bearer good":
            raise Auth.exceptions.HTTPException(status_code=401, detail="bad token")
        return "dave"

    assert (await _get(_app(auth), "/custom")).status_code == 200  # LangGraph's default
    guarded = _app(auth, custom_routes=True)
    assert (await _get(guarded, "/custom")).status_code == 401
    answer = await _get(guarded, "/custom", headers={"Authorization": "Bearer good"})
    assert answer.status_code == 200 and "dave" in answer.json()["user"]


async def test_an_api_route_beside_a_custom_route_of_its_path_is_authenticated() -> None:
    """A custom route of the same path with another method leaves the API's route to the API: it
    is authenticated (it was taken for the custom route, open, and answered 401 to every user)."""
    auth = Auth()

    @auth.authenticate
    async def authenticate(authorization: str | None) -> str:
        if authorization != "Bearer good":
            raise Auth.exceptions.HTTPException(status_code=401, detail="bad token")
        return "erin"

    async def who(request: Request) -> Response:
        user = request.scope.get("user")
        return JSONResponse({"identity": user.identity if isinstance(user, AuthUser) else None})

    async def remove(request: Request) -> Response:
        return JSONResponse({"removed": True})

    loaded = read_auth(auth, "test")
    loaded.user_routes = UserRoutes(Starlette(routes=[Route("/who", remove, methods=["DELETE"])]))
    routes = [loaded.user_routes, Route("/who", who, methods=["GET"])]
    app = Starlette(routes=routes, middleware=[Middleware(Authenticate, auth=loaded)])
    answer = await _get(app, "/who", headers={"Authorization": "Bearer good"})
    assert answer.status_code == 200 and answer.json() == {"identity": "erin"}
    assert (await _get(app, "/who")).status_code == 401


def test_a_websocket_handshake_is_authenticated_too() -> None:
    auth = Auth()

    @auth.authenticate
    async def authenticate(authorization: str | None) -> str:
        if authorization != "Bearer good":
            raise Auth.exceptions.HTTPException(status_code=401, detail="bad token")
        return "erin"

    async def echo(websocket: WebSocket) -> None:
        await websocket.accept()
        await websocket.send_json({"identity": websocket.scope["user"].identity})
        await websocket.close()

    app = Starlette(
        routes=[WebSocketRoute("/ws", echo)],
        middleware=[Middleware(Authenticate, auth=read_auth(auth, "test"))],
    )
    with TestClient(app) as client:
        with pytest.raises(WebSocketDenialResponse) as denied, client.websocket_connect("/ws"):
            pass
        assert denied.value.status_code == 401 and denied.value.json() == {"detail": "bad token"}
        with client.websocket_connect("/ws", headers={"Authorization": "Bearer good"}) as socket:
            assert socket.receive_json() == {"identity": "erin"}


def _serve(*args: str, tmp: pathlib.Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    cmd = [
        str(PLAIT),
        "serve",
        "--config",
        str(APP_AUTH / "langgraph.json"),
        "--db",
        str(tmp / "db.sqlite"),
        *args,
    ]
    full = {**env, "PYTHONPATH": str(ROOT)}
    return subprocess.run(cmd, capture_output=True, text=True, env=full, check=False, timeout=120)


def test_a_config_with_auth_serves_beyond_loopback_and_refuses_a_token_beside_it(
    tmp_path: pathlib.Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PLAIT_AUTH_TOKEN"}
    done = _serve("--host", "0.0.0.0", "--auth-token", "t", tmp=tmp_path, env=env)
    lines = done.stderr.strip().splitlines()
    assert done.returncode != 0 and "custom auth" in lines[-1] and "--auth-token" in lines[-1], done.stderr
    with running(
        str(tmp_path / "db.sqlite"),
        tmp_path,
        "--host",
        "0.0.0.0",
        env=env,
        app=APP_AUTH,
        config="langgraph.json",
    ) as srv:
        assert "WARNING" not in srv.output()
        assert httpx.get(f"{srv.url}/threads/x").status_code == 401
        who = httpx.post(
            f"{srv.url}/runs/wait",
            json={"assistant_id": "agent", "input": {}},
            headers={"Authorization": "Bearer alice-token"},
        )
        assert who.json()["who"]["user_id"] == "alice"


def test_an_auth_path_that_does_not_load_is_one_line(tmp_path: pathlib.Path) -> None:
    config = json.loads((APP_AUTH / "langgraph.json").read_text())
    config["graphs"] = {"agent": str(APP_AUTH / "agent.py") + ":graph"}
    config["auth"] = {"path": str(APP_AUTH / "agent.py") + ":graph"}  # not an Auth object
    path = tmp_path / "langgraph.json"
    path.write_text(json.dumps(config))
    cmd = [str(PLAIT), "serve", "--config", str(path), "--db", str(tmp_path / "db.sqlite")]
    done = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
        timeout=120,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode != 0 and len(lines) == 1 and "not a langgraph_sdk Auth" in lines[0], done.stderr
