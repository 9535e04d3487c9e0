"""``http.app`` of the config: the user's Starlette app served beside the API, its routes first."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterator

import httpx
import pytest
from _serve_proc import APP, Server, running, start

WEBAPP = """
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

started = []


@asynccontextmanager
async def lifespan(app):
    started.append(True)
    yield


async def hello(request):
    return JSONResponse({"hello": "world", "lifespan_ran": bool(started)})


async def info(request):
    return PlainTextResponse("the user's /info")


async def webhook(request):
    form = await request.form()
    return JSONResponse({"form": {k: str(v) for k, v in form.items()}, "type": request.headers.get("content-type", "")[:19]})


async def item(request):
    return JSONResponse({"item": request.path_params["item_id"]})


app = Starlette(
    routes=[
        Route("/hello", hello, methods=["GET"]),
        Route("/info", info, methods=["GET"]),
        Route("/items/{item_id}", item, methods=["GET"]),
        Route("/webhook", webhook, methods=["POST"]),
    ],
    lifespan=lifespan,
)
not_an_app = 42
"""


def _project(tmp: pathlib.Path, target: str) -> pathlib.Path:
    (tmp / "webapp.py").write_text(WEBAPP)
    config = {"graphs": {"agent": f"{APP / 'agent.py'}:graph"}, "http": {"app": target}}
    (tmp / "langgraph.json").write_text(json.dumps(config))
    return tmp


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("http_app")
    project = _project(tmp, "./webapp.py:app")
    with running(str(tmp / "server.sqlite"), tmp, app=project, config="langgraph.json") as srv:
        yield srv


def test_the_users_routes_are_served_and_its_lifespan_runs(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as http:
        assert http.get("/hello").json() == {"hello": "world", "lifespan_ran": True}
        assert http.get("/items/7").json() == {"item": "7"}
        assert http.post("/hello", json={}).status_code == 405  # the user's route, another method


def test_the_users_routes_come_before_the_api(server: Server) -> None:
    assert httpx.get(server.url + "/info", timeout=60).text == "the user's /info"


def test_the_api_still_works_beside_them(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=120) as http:
        assert http.get("/ok").json() == {"ok": True}
        thread = http.post("/threads", json={}).json()["thread_id"]
        body = {"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": "hi"}]}}
        out = http.post(f"/threads/{thread}/runs/wait", json=body)
        assert out.status_code == 200, out.text
        assert out.json()["messages"][-1]["content"] == "you said: hi"
        assert http.get("/no/such/route").status_code == 404
        metrics = http.get("/metrics").text
    assert 'route="/items/{item_id}"' in metrics  # the user's route template, not its path


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("./webapp.py:not_an_app", "http.app: ./webapp.py:not_an_app is int, not a Starlette or FastAPI app"),
        ("./webapp.py:nothing", "http.app: "),
        ("./missing.py:app", "does not exist"),
    ],
)
def test_a_bad_http_app_stops_the_server_in_one_line(
    tmp_path: pathlib.Path, target: str, message: str
) -> None:
    project = _project(tmp_path, target)
    with pytest.raises(RuntimeError) as failed:
        start(str(tmp_path / "server.sqlite"), tmp_path, app=project, config="langgraph.json")
    assert message in str(failed.value)
    assert "Traceback" not in str(failed.value)


def test_the_users_routes_take_form_and_multipart_bodies(server: Server) -> None:
    sent = httpx.post(server.url + "/webhook", data={"From": "+100", "Body": "hi"}, timeout=60)
    assert sent.status_code == 200, sent.text
    assert sent.json() == {"form": {"From": "+100", "Body": "hi"}, "type": "application/x-www-f"}
    parts = httpx.post(server.url + "/webhook", data={"a": "1"}, files={"f": ("f.txt", b"x")}, timeout=60)
    assert parts.status_code == 200 and parts.json()["type"] == "multipart/form-data", parts.text
    # the API's own routes still take JSON only (a cross-site form is refused)
    refused = httpx.post(server.url + "/threads", data={"a": "1"}, timeout=60)
    assert refused.status_code == 415 and "application/json" in refused.json()["detail"]
    other = httpx.post(server.url + "/hello", data={"a": "1"}, timeout=60)  # (a GET route's path only)
    assert other.status_code == 415
