"""Every route of ``/openapi.json``, called by bob on alice's resources: 0 cross-user reads or writes.

Alice (the ownership example of ``app_auth``) makes a thread with a finished run, an assistant, two
crons and a store item, each carrying a secret. Bob then calls each operation the server's OpenAPI
document lists, with alice's ids in its path and body. No answer may show alice's secret or (when
it succeeds) her ids, and afterwards everything of alice's is as it was. A route the document
lists and the table below does not know fails the test: each new route gets a case here.
"""

from __future__ import annotations

import pathlib
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from _pg import private_schema
from _serve_proc import Server, running
from langgraph_sdk import get_sync_client

APP = pathlib.Path(__file__).parent / "app_auth"
FAR = "0 0 1 1 *"

Case = tuple[Any, dict[str, Any]]
"""A request's JSON body (``None``: none) and query parameters; ``{x}`` in strings is alice's ``x``."""

CASES: dict[tuple[str, str], Case] = {
    ("GET", "/ok"): (None, {}),
    ("GET", "/info"): (None, {}),
    ("GET", "/metrics"): (None, {}),
    ("GET", "/openapi.json"): (None, {}),
    ("GET", "/docs"): (None, {}),
    # threads
    ("POST", "/threads"): ({"thread_id": "{thread_id}", "if_exists": "do_nothing"}, {}),
    ("GET", "/threads/{thread_id}"): (None, {"include": "ttl"}),
    ("PATCH", "/threads/{thread_id}"): ({"metadata": {"owner": "bob", "topic": "bob"}}, {}),
    ("DELETE", "/threads/{thread_id}"): (None, {}),
    ("POST", "/threads/prune"): ({"thread_ids": ["{thread_id}"], "strategy": "delete"}, {}),
    ("POST", "/threads/search"): ({"ids": ["{thread_id}"], "metadata": {"owner": "alice"}}, {}),
    ("POST", "/threads/count"): ({"metadata": {"owner": "alice"}}, {}),
    ("POST", "/threads/{thread_id}/copy"): (None, {}),
    ("GET", "/threads/{thread_id}/state"): (None, {}),
    ("GET", "/threads/{thread_id}/state/{checkpoint_id}"): (None, {}),
    ("POST", "/threads/{thread_id}/state"): ({"values": {"text": "bob was here"}}, {}),
    ("POST", "/threads/{thread_id}/state/checkpoint"): (
        {"checkpoint": {"checkpoint_id": "{checkpoint_id}"}},
        {},
    ),
    ("POST", "/threads/{thread_id}/history"): ({"limit": 10}, {}),
    ("GET", "/threads/{thread_id}/history"): (None, {}),
    ("GET", "/threads/{thread_id}/stream"): (None, {}),
    ("GET", "/threads/{thread_id}/storage"): (None, {}),
    ("POST", "/threads/{thread_id}/stream/events"): ({"channels": ["values"]}, {}),
    ("POST", "/threads/{thread_id}/commands"): (
        {"id": 1, "method": "run.start", "params": {"assistant_id": "agent", "input": {"text": "bob"}}},
        {},
    ),
    # runs
    ("POST", "/threads/{thread_id}/runs"): ({"assistant_id": "agent", "input": {"text": "bob"}}, {}),
    ("GET", "/threads/{thread_id}/runs"): (None, {}),
    ("POST", "/threads/{thread_id}/runs/wait"): ({"assistant_id": "agent", "input": {"text": "bob"}}, {}),
    ("POST", "/threads/{thread_id}/runs/stream"): ({"assistant_id": "agent", "input": {"text": "bob"}}, {}),
    ("GET", "/threads/{thread_id}/runs/{run_id}"): (None, {}),
    ("DELETE", "/threads/{thread_id}/runs/{run_id}"): (None, {}),
    ("POST", "/threads/{thread_id}/runs/{run_id}/cancel"): (None, {}),
    ("GET", "/threads/{thread_id}/runs/{run_id}/join"): (None, {}),
    ("GET", "/threads/{thread_id}/runs/{run_id}/stream"): (None, {}),
    ("POST", "/runs/cancel"): ({"thread_id": "{thread_id}", "run_ids": ["{run_id}"]}, {}),
    ("POST", "/runs"): ({"assistant_id": "{assistant_id}", "input": {"text": "bob"}}, {}),
    ("POST", "/runs/batch"): ([{"assistant_id": "{assistant_id}", "input": {"text": "bob"}}], {}),
    ("POST", "/runs/wait"): ({"assistant_id": "{assistant_id}", "input": {"text": "bob"}}, {}),
    ("POST", "/runs/stream"): ({"assistant_id": "{assistant_id}", "input": {"text": "bob"}}, {}),
    # assistants
    ("POST", "/assistants"): (
        {"graph_id": "agent", "assistant_id": "{assistant_id}", "if_exists": "do_nothing"},
        {},
    ),
    ("POST", "/assistants/search"): ({"metadata": {"owner": "alice"}}, {}),
    ("POST", "/assistants/count"): ({"metadata": {"owner": "alice"}}, {}),
    ("GET", "/assistants/{assistant_id}"): (None, {}),
    ("PATCH", "/assistants/{assistant_id}"): ({"name": "bob's", "metadata": {"owner": "bob"}}, {}),
    ("DELETE", "/assistants/{assistant_id}"): (None, {}),
    ("GET", "/assistants/{assistant_id}/graph"): (None, {}),
    ("GET", "/assistants/{assistant_id}/schemas"): (None, {}),
    ("GET", "/assistants/{assistant_id}/subgraphs"): (None, {}),
    ("GET", "/assistants/{assistant_id}/subgraphs/{namespace}"): (None, {}),
    ("POST", "/assistants/{assistant_id}/versions"): ({}, {}),
    ("POST", "/assistants/{assistant_id}/latest"): ({"version": 1}, {}),
    # crons
    ("POST", "/runs/crons"): ({"assistant_id": "{assistant_id}", "schedule": FAR}, {}),
    ("POST", "/threads/{thread_id}/runs/crons"): ({"assistant_id": "agent", "schedule": FAR}, {}),
    ("POST", "/runs/crons/search"): ({"thread_id": "{thread_id}"}, {}),
    ("POST", "/runs/crons/count"): ({}, {}),
    ("GET", "/runs/crons/{cron_id}"): (None, {}),
    ("PATCH", "/runs/crons/{cron_id}"): ({"schedule": "* * * * *", "metadata": {"owner": "bob"}}, {}),
    ("DELETE", "/runs/crons/{cron_id}"): (None, {}),
    # store (bob's namespaces are his own: alice's item is out of reach by name)
    ("PUT", "/store/items"): ({"namespace": ["users", "alice"], "key": "profile", "value": {"x": "bob"}}, {}),
    ("GET", "/store/items"): (None, {"namespace": "users.alice", "key": "profile"}),
    ("DELETE", "/store/items"): ({"namespace": ["users", "alice"], "key": "profile"}, {}),
    ("POST", "/store/items/search"): ({"namespace_prefix": ["users", "alice"]}, {}),
    ("POST", "/store/namespaces"): ({"prefix": ["users"]}, {}),
    # A2A: alice's assistant as an agent (its card, a message into her thread)
    ("POST", "/a2a/{assistant_id}"): (
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "message/send",
            "params": {
                "message": {
                    "messageId": "b1",
                    "role": "user",
                    "parts": [{"kind": "data", "data": {"text": "bob"}}],
                    "contextId": "{thread_id}",
                }
            },
        },
        {},
    ),
    ("GET", "/a2a/{assistant_id}"): (None, {}),
    ("GET", "/a2a/{assistant_id}/.well-known/agent-card.json"): (None, {}),
    ("GET", "/a2a/{assistant_id}/.well-known/agent.json"): (None, {}),
    ("GET", "/.well-known/agent-card.json"): (None, {"assistant_id": "{assistant_id}"}),
    # MCP: the tools bob sees, and (EXTRA) a call of alice's assistant's tool; A2A (EXTRA): alice's task
    ("POST", "/mcp"): ({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, {}),
    ("GET", "/mcp"): (None, {}),
    ("DELETE", "/mcp"): (None, {}),
}
EXTRA: list[tuple[str, str, Any]] = [
    (
        "POST",
        "/mcp",
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "{tool}", "arguments": {}}},
    ),
    (
        "POST",
        "/a2a/{assistant_id}",
        {"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": "{thread_id}:{run_id}"}},
    ),
    (
        "POST",
        "/a2a/{assistant_id}",
        {"jsonrpc": "2.0", "id": 3, "method": "tasks/cancel", "params": {"id": "{thread_id}:{run_id}"}},
    ),
]
IN_BAND = {"POST /mcp", "POST /a2a/{assistant_id}"}
"""JSON-RPC routes: a refusal is an error inside a 200 answer."""


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("auth_routes")
    if request.param == "sqlite":
        with running(str(tmp / "server.sqlite"), tmp, app=APP, config="langgraph.json") as srv:
            yield srv
        return
    with (
        private_schema("plait_auth_routes") as dsn,
        running(dsn, tmp, app=APP, config="langgraph.json") as srv,
    ):
        yield srv


def _headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}


def _fill(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return value.format(**ids)
    if isinstance(value, list):
        return [_fill(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, ids) for k, v in value.items()}
    return value


def _alices(server: Server) -> tuple[dict[str, str], str]:
    """Alice's resources (their ids) and the secret each one holds."""
    secret = f"alice-secret-{uuid.uuid4().hex}"
    tool = f"alice_tool_{uuid.uuid4().hex}"
    alice = get_sync_client(url=server.url, api_key=None, headers=_headers("alice-token"))
    thread = alice.threads.create(metadata={"topic": secret})["thread_id"]
    run = alice.runs.create(thread, "agent", input={"text": secret})["run_id"]
    alice.runs.join(thread, run)
    checkpoint = alice.threads.get_state(thread)["checkpoint"]["checkpoint_id"]
    assistant = alice.assistants.create("agent", name=tool, metadata={"topic": secret})["assistant_id"]
    cron = alice.crons.create_for_thread(thread, "agent", schedule=FAR, metadata={"topic": secret})["cron_id"]
    alice.crons.create(assistant, schedule=FAR, metadata={"topic": secret})
    alice.store.put_item(["users", "alice"], "profile", {"secret": secret})
    alice.store.put_item(["notes"], "k", {"secret": secret})
    ids = {
        "thread_id": thread,
        "run_id": run,
        "checkpoint_id": checkpoint,
        "assistant_id": assistant,
        "cron_id": cron,
        "namespace": "whoami",
        "tool": tool,
    }
    return ids, secret


def _snapshot(server: Server, ids: dict[str, str]) -> dict[str, Any]:
    """Everything of alice's, as she sees it."""
    alice = get_sync_client(url=server.url, api_key=None, headers=_headers("alice-token"))
    thread = alice.threads.get(ids["thread_id"])
    return {
        "thread": {k: thread[k] for k in ("metadata", "values", "status")},
        "state": alice.threads.get_state(ids["thread_id"])["checkpoint"],
        "runs": [(r["run_id"], r["status"]) for r in alice.runs.list(ids["thread_id"])],
        "assistant": alice.assistants.get(ids["assistant_id"]),
        "crons": sorted((c["cron_id"], c["schedule"], str(c["metadata"])) for c in alice.crons.search()),
        "profile": alice.store.get_item(["users", "alice"], "profile"),
        "notes": alice.store.get_item(["notes"], "k"),
        "threads": alice.threads.count(),
    }


def _call(http: httpx.Client, method: str, path: str, body: Any, query: dict[str, Any]) -> tuple[int, str]:
    """Bob's request: its status and what it answered (a stream: up to its first few events)."""
    kwargs: dict[str, Any] = {"params": query}
    if body is not None:
        kwargs["json"] = body
    with http.stream(method, path, **kwargs) as answer:
        if answer.headers.get("content-type", "").startswith("text/event-stream"):
            text = ""
            for chunk in answer.iter_text():  # (a stream bob may follow: his own, ended by its run)
                text += chunk
                if len(text) > 20_000 or "run_done" in text or "event: end" in text:
                    break
            return answer.status_code, text
        return answer.status_code, answer.read().decode(errors="replace")


def test_bob_reads_and_writes_nothing_of_alices_on_any_route(server: Server) -> None:
    ids, secret = _alices(server)
    before = _snapshot(server, ids)
    document = httpx.get(f"{server.url}/openapi.json").json()
    routes = [(m.upper(), p) for p, ops in document["paths"].items() for m in ops]
    unknown = [r for r in routes if r not in CASES]
    assert not unknown, f"routes with no cross-user case in CASES: {unknown}"
    assert len(routes) >= 30, routes  # (the document lists the API)
    leaks: list[str] = []
    statuses: dict[str, int] = {}
    with httpx.Client(base_url=server.url, headers=_headers("bob-token"), timeout=60) as http:
        calls = [(m, p, *CASES[(m, p)]) for m, p in routes]
        calls += [(m, p, body, {}) for m, p, body in EXTRA if (m, p) in routes]
        # reads before writes, deletes last: a write that got through shows in what comes after too
        order = {"GET": 0, "POST": 1, "PUT": 1, "PATCH": 2, "DELETE": 3}
        for method, template, body, query in sorted(calls, key=lambda c: order[c[0]]):
            path = template.format(**ids)
            status, text = _call(http, method, path, _fill(body, ids), _fill(query, ids))
            statuses[f"{method} {template}"] = status
            # alice's ids bob named himself may come back (an error naming the id he asked for)
            asked = f"{path} {_fill(body, ids)} {_fill(query, ids)}"
            shown = [secret, *(v for k, v in ids.items() if k != "namespace" and v not in asked)]
            found = [s for s in shown if s in text]
            if found:
                leaks.append(f"{method} {template} -> {status}: shows {found}: {text[:300]}")
    assert not leaks, "bob read alice's data:\n" + "\n".join(leaks)
    after = _snapshot(server, ids)
    assert after == before, "bob changed alice's data"
    # what reaches alice's resources by id is refused as another user's; nothing was a 5xx
    assert all(status < 500 for status in statuses.values()), statuses
    by_id = [k for k in statuses if "{" in k and k not in IN_BAND]
    assert all(statuses[k] in (403, 404, 409) for k in by_id), {k: statuses[k] for k in by_id}
