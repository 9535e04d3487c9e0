"""``GET /openapi.json`` and ``GET /docs``, made from the route declarations, against a real server:
a valid OpenAPI 3.1 document listing every route the app serves (and only those), a readable page
without scripts, and bad bodies answered 422 naming the field, what it takes and what it got."""

from __future__ import annotations

import pathlib
import re
import uuid
from typing import Any

import httpx
import pytest
from _serve_proc import Server
from openapi_spec_validator import validate
from starlette.routing import Route

from plait.server._app import create_app
from plait.server._config import Settings

METHODS = ("get", "put", "post", "delete", "patch")
# the Agent Server's routes langgraph-sdk 0.4 calls (each must be served and listed)
SDK_ROUTES = {
    ("post", "/assistants"), ("post", "/assistants/search"), ("post", "/assistants/count"),
    ("get", "/assistants/{assistant_id}"), ("patch", "/assistants/{assistant_id}"),
    ("delete", "/assistants/{assistant_id}"), ("get", "/assistants/{assistant_id}/graph"),
    ("get", "/assistants/{assistant_id}/schemas"), ("get", "/assistants/{assistant_id}/subgraphs"),
    ("get", "/assistants/{assistant_id}/subgraphs/{namespace}"),
    ("post", "/assistants/{assistant_id}/versions"), ("post", "/assistants/{assistant_id}/latest"),
    ("post", "/threads"), ("post", "/threads/search"), ("post", "/threads/count"), ("post", "/threads/prune"),
    ("get", "/threads/{thread_id}"), ("patch", "/threads/{thread_id}"), ("delete", "/threads/{thread_id}"),
    ("post", "/threads/{thread_id}/copy"), ("get", "/threads/{thread_id}/state"),
    ("post", "/threads/{thread_id}/state"), ("get", "/threads/{thread_id}/state/{checkpoint_id}"),
    ("post", "/threads/{thread_id}/state/checkpoint"), ("get", "/threads/{thread_id}/history"),
    ("post", "/threads/{thread_id}/history"), ("get", "/threads/{thread_id}/stream"),
    ("post", "/threads/{thread_id}/runs"), ("get", "/threads/{thread_id}/runs"),
    ("post", "/threads/{thread_id}/runs/stream"), ("post", "/threads/{thread_id}/runs/wait"),
    ("get", "/threads/{thread_id}/runs/{run_id}"), ("delete", "/threads/{thread_id}/runs/{run_id}"),
    ("post", "/threads/{thread_id}/runs/{run_id}/cancel"), ("get", "/threads/{thread_id}/runs/{run_id}/join"),
    ("get", "/threads/{thread_id}/runs/{run_id}/stream"), ("post", "/runs"), ("post", "/runs/stream"),
    ("post", "/runs/wait"), ("post", "/runs/batch"), ("post", "/runs/cancel"),
    ("post", "/runs/crons"), ("post", "/threads/{thread_id}/runs/crons"), ("post", "/runs/crons/search"),
    ("post", "/runs/crons/count"), ("patch", "/runs/crons/{cron_id}"), ("delete", "/runs/crons/{cron_id}"),
    ("put", "/store/items"), ("get", "/store/items"), ("delete", "/store/items"),
    ("post", "/store/items/search"), ("post", "/store/namespaces"),
    ("get", "/ok"), ("get", "/info"), ("get", "/metrics"), ("get", "/docs"), ("get", "/openapi.json"),
}  # fmt: skip


@pytest.fixture(scope="module")
def doc(server: Server) -> dict[str, Any]:
    r = httpx.get(f"{server.url}/openapi.json")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    found: dict[str, Any] = r.json()
    return found


def _operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(m, p, op) for p, item in doc["paths"].items() for m, op in item.items() if m in METHODS]


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [r for value in node.values() for r in _refs(value)]
    if isinstance(node, list):
        return [r for value in node for r in _refs(value)]
    return []


def test_the_document_is_valid_openapi_3_1_with_every_sdk_route(doc: dict[str, Any]) -> None:
    validate(doc)  # the OpenAPI 3.1 meta-schema (openapi-spec-validator)
    assert doc["openapi"] == "3.1.0" and doc["info"]["title"] and doc["info"]["version"]
    listed = {(m, p) for m, p, _ in _operations(doc)}
    assert SDK_ROUTES <= listed, sorted(SDK_ROUTES - listed)
    schemas = doc["components"]["schemas"]
    for ref in _refs(doc):
        assert ref.startswith("#/components/schemas/") and ref.rsplit("/", 1)[1] in schemas, ref
    ids = [op["operationId"] for _, _, op in _operations(doc)]
    assert len(ids) == len(set(ids))
    tags = {t["name"] for t in doc["tags"]}
    for method, path, op in _operations(doc):
        assert op["summary"] and op["responses"] and set(op["tags"]) <= tags, (method, path)
        in_path = set(re.findall(r"\{(\w+)\}", path))
        declared = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
        assert in_path == declared, (method, path)
    create = doc["paths"]["/threads"]["post"]["requestBody"]
    assert create["required"] and create["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ThreadCreate"
    }
    fields = schemas["ThreadCreate"]["properties"]
    assert fields["if_exists"]["default"] == "raise" and "supersteps" in fields


def _concrete(path: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: "x" if m.group(1) == "namespace" else str(uuid.uuid4()), path)


def test_every_listed_operation_is_routed_and_every_route_listed(server: Server, doc: dict[str, Any]) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as http:
        for method, path, _ in _operations(doc):
            # a body that is no request's (no side effect): a routed operation answers 422, 404 for
            # an unknown id, 200..., never the router's 404 "Not Found" or 405
            r = http.request(
                method, _concrete(path), content=b"[1]", headers={"content-type": "application/json"}
            )
            routed = not (
                r.status_code in (404, 405) and r.json().get("detail") in ("Not Found", "Method Not Allowed")
            )
            assert routed, (method, path, r.status_code, r.text)
    app = create_app(
        Settings(config_path=str(pathlib.Path(__file__).parent / "app" / "plait.json"), graphs=(), db="x")
    )
    listed = {(m, p) for m, p, _ in _operations(doc)}
    routed = {
        (method.lower(), route.path)
        for route in app.routes
        if isinstance(route, Route) and not route.path.startswith("/ui")
        for method in route.methods or ()
        if method != "HEAD"
    }
    assert routed - listed == set(), f"routes missing from /openapi.json: {sorted(routed - listed)}"
    assert listed - routed == set(), f"listed but not routed: {sorted(listed - routed)}"


def test_docs_is_a_self_contained_page_of_the_document(server: Server, doc: dict[str, Any]) -> None:
    r = httpx.get(f"{server.url}/docs")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    page = r.text
    assert "<script" not in page and not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    for tag in doc["tags"]:
        assert f'id="tag-{tag["name"]}"' in page
    for method, path, op in _operations(doc):
        assert f'id="{op["operationId"]}"' in page and f">{path}</span>" in page, (method, path)
    assert 'id="schema-ThreadCreate"' in page and "<code>if_exists</code>" in page
    assert '<a href="#schema-SuperstepUpdate">SuperstepUpdate</a>' in page


def test_docs_page_in_chromium(server: Server, tmp_path: pathlib.Path) -> None:
    from _browser import chromium_page, screenshot

    with chromium_page() as page:
        page.goto(f"{server.url}/docs")
        assert page.locator("h1").inner_text().startswith("plait serve")
        page.locator('a[href="#post_threads"]').click()
        section = page.locator("#post_threads")
        assert section.is_visible() and "Create Thread" in section.inner_text()
        assert "supersteps" in section.inner_text()
        screenshot(page, "docs", tmp_path)


BAD = [
    # (method, path, body, words the detail must hold: field path, what it takes, what it got)
    ("post", "/threads", {"supersteps": [{"updates": [{"as_node": 7}]}]},
     ["supersteps[0].updates[0].as_node", "expected a string", "got 7"]),
    ("post", "/threads", {"if_exists": "maybe"}, ["if_exists", "'raise' or 'do_nothing'", "got 'maybe'"]),
    ("post", "/threads", {"ttl": {"strategy": "archive", "ttl": 1}}, ["ttl.strategy", "'delete' or 'keep_latest'", "'archive'"]),
    ("post", "/threads/search", {"limit": "ten"}, ["limit", "expected an integer", "got 'ten'"]),
    ("post", "/threads/search", {"limit": 5000}, ["limit", "<= 1000", "got 5000"]),
    ("post", "/threads/count", {"metadata": [1]}, ["metadata", "expected an object", "got [1]"]),
    ("post", "/threads/prune", {"thread_ids": "x"}, ["thread_ids", "expected a list", "got 'x'"]),
    ("post", "/runs/wait", {"assistant_id": "agent", "stream_mode": ["values", 3]}, ["stream_mode[1]", "'values'", "got 3"]),
    ("post", "/runs/wait", {"assistant_id": "agent", "command": {"goto": {"input": 1}}},
     ["command.goto.node", "required", "got nothing"]),
    ("post", "/runs/wait", {"input": {}}, ["assistant_id", "required", "got nothing"]),
    ("post", "/runs/wait", {"assistant_id": "agent", "after_seconds": -1}, ["after_seconds", ">= 0", "got -1"]),
    ("post", "/runs/batch", [{"assistant_id": "agent"}, {"assistant_id": 5}], ["[1].assistant_id", "a string", "got 5"]),
    ("post", "/runs/cancel", {"status": "done"}, ["status", "'pending'", "got 'done'"]),
    ("post", "/assistants", {"graph_id": "agent", "config": "x"}, ["config", "expected an object", "got 'x'"]),
    ("post", "/assistants/search", {"sort_order": "up"}, ["sort_order", "'asc' or 'desc'", "got 'up'"]),
    ("post", "/runs/crons", {"assistant_id": "agent", "schedule": "0 0 * * *", "enabled": "yes"},
     ["enabled", "true or false", "got 'yes'"]),
    ("post", "/runs/crons/search", {"select": ["now"]}, ["select[0]", "'cron_id'", "got 'now'"]),
    ("put", "/store/items", {"namespace": ["a"], "key": 5, "value": {}}, ["key", "a string", "got 5"]),
]  # fmt: skip


def test_a_bad_query_parameter_is_422_naming_it(server: Server) -> None:
    tid = httpx.post(f"{server.url}/threads", json={}).json()["thread_id"]
    r = httpx.get(f"{server.url}/threads/{tid}/history", params={"limit": "many"})
    assert (
        r.status_code == 422
        and "query parameter limit: expected an integer, got 'many'" in r.json()["detail"]
    )


@pytest.mark.parametrize(("method", "path", "body", "words"), BAD)
def test_a_bad_body_is_422_naming_the_field_expected_and_got(
    server: Server, method: str, path: str, body: Any, words: list[str]
) -> None:
    r = httpx.request(method, server.url + path, json=body)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    for word in words:
        assert word in detail, (word, detail)
