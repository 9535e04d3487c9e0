"""Custom auth (``langgraph.json``'s ``auth``) end to end: a real server, the real SDK, two users who
must never see or change each other's threads, runs, crons, assistants or store items.

The project (``app_auth``) is LangGraph's resource-ownership example: every handler tags what a
user creates with ``metadata.owner`` and filters everything else by it; the store moves each
namespace under its user's identity.
"""

from __future__ import annotations

import pathlib
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from _pg import private_schema
from _serve_proc import Server, running
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

APP = pathlib.Path(__file__).parent / "app_auth"
FAR = "0 0 1 1 *"  # a cron that does not fire during the tests
EVERY_SECOND = "* * * * * */1"  # (croniter's sixth field: seconds)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("auth")
    if request.param == "sqlite":
        with running(str(tmp / "server.sqlite"), tmp, app=APP, config="langgraph.json") as srv:
            yield srv
        return
    with private_schema("plait_auth") as dsn, running(dsn, tmp, app=APP, config="langgraph.json") as srv:
        yield srv


def client(server: Server, token: str | None) -> SyncLangGraphClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return get_sync_client(url=server.url, api_key=None, headers=headers)


def status(call: Callable[[], Any]) -> int:
    """The HTTP status a client call ends with (200 when it succeeds)."""
    try:
        result = call()
        if hasattr(result, "__next__"):  # a stream: its first event (or error) comes with the response
            next(iter(result), None)
    except httpx.HTTPStatusError as exc:
        return exc.response.status_code
    return 200


@pytest.fixture(scope="module")
def alice_world(server: Server) -> dict[str, Any]:
    """What alice made: a thread with a finished run, an assistant, two crons and a store item."""
    alice = client(server, "alice-token")
    thread = alice.threads.create(metadata={"topic": "secret"})
    run = alice.runs.create(thread["thread_id"], "agent", input={"text": "hi"})
    alice.runs.join(thread["thread_id"], run["run_id"])
    assistant = alice.assistants.create("agent", name="alice's", metadata={"topic": "secret"})
    cron = alice.crons.create_for_thread(thread["thread_id"], "agent", schedule=FAR)
    stateless_cron = alice.crons.create("agent", schedule=FAR, metadata={"topic": "secret"})
    alice.store.put_item(["notes"], "k", {"text": "alice's note"})
    return {
        "thread": thread["thread_id"],
        "run": run["run_id"],
        "assistant": assistant["assistant_id"],
        "cron": cron["cron_id"],
        "stateless_cron": stateless_cron["cron_id"],
    }


def test_without_a_valid_token_every_api_route_is_401(server: Server) -> None:
    for token in (None, "wrong-token"):
        with httpx.Client(base_url=server.url, headers=client(server, token).http.client.headers) as http:
            for method, path in (
                ("POST", "/threads/search"),
                ("GET", "/assistants/agent"),
                ("PUT", "/store/items"),
            ):
                answer = http.request(method, path, json={})
                assert answer.status_code == 401, (token, path, answer.text)
                assert answer.json() == {"detail": "Invalid or missing bearer token"}
            assert http.get("/ok").status_code == 200 and http.get("/info").status_code == 200


def test_what_a_user_makes_is_tagged_with_its_owner(server: Server, alice_world: dict[str, Any]) -> None:
    alice = client(server, "alice-token")
    thread = alice.threads.get(alice_world["thread"])
    assert thread["metadata"]["owner"] == "alice" and thread["metadata"]["topic"] == "secret"
    assert alice.assistants.get(alice_world["assistant"])["metadata"]["owner"] == "alice"
    assert alice.crons.search(thread_id=alice_world["thread"])[0]["metadata"]["owner"] == "alice"
    assert alice.runs.get(alice_world["thread"], alice_world["run"])["metadata"]["owner"] == "alice"
    item = alice.store.get_item(["notes"], "k")
    assert (
        item is not None
        and item["namespace"] == ["alice", "notes"]
        and item["value"]["text"] == "alice's note"
    )


def test_a_run_knows_who_made_it(server: Server) -> None:
    alice = client(server, "alice-token")
    result = alice.runs.wait(None, "agent", input={"text": "who?"})
    assert result["who"] == {
        "user_id": "alice",
        "permissions": ["read", "write"],
        "identity": "alice",
        "item": "alice",
        "org": "acme",
    }
    made = alice.runs.create(
        None, "agent", input={}, config={"configurable": {"langgraph_auth_user_id": "bob"}}
    )
    assert made["kwargs"]["config"]["configurable"]["langgraph_auth_user_id"] == "alice"  # not the client's


def test_bob_cannot_read_or_change_alices_thread(server: Server, alice_world: dict[str, Any]) -> None:
    bob, thread = client(server, "bob-token"), alice_world["thread"]
    calls: dict[str, Callable[[], Any]] = {
        "get": lambda: bob.threads.get(thread),
        "update": lambda: bob.threads.update(thread, metadata={"owner": "bob"}),
        "copy": lambda: bob.threads.copy(thread),
        "state": lambda: bob.threads.get_state(thread),
        "update_state": lambda: bob.threads.update_state(thread, {"text": "mine"}),
        "history": lambda: bob.threads.get_history(thread),
        "join_stream": lambda: bob.threads.join_stream(thread),
        "delete": lambda: bob.threads.delete(thread),
    }
    assert {name: status(call) for name, call in calls.items()} == dict.fromkeys(calls, 404)
    assert bob.threads.search(metadata={"topic": "secret"}) == []
    assert bob.threads.search(ids=[thread]) == []
    assert bob.threads.count(metadata={"topic": "secret"}) == 0
    assert status(lambda: bob.threads.create(thread_id=thread)) == 409
    alice = client(server, "alice-token")
    assert alice.threads.get(thread)["metadata"]["owner"] == "alice"
    assert [t["thread_id"] for t in alice.threads.search(ids=[thread])] == [thread]
    assert alice.threads.count(metadata={"topic": "secret"}) >= 1


def test_bob_cannot_read_run_or_cancel_on_alices_thread(server: Server, alice_world: dict[str, Any]) -> None:
    bob, thread, run = client(server, "bob-token"), alice_world["thread"], alice_world["run"]
    calls: dict[str, Callable[[], Any]] = {
        "list": lambda: bob.runs.list(thread),
        "get": lambda: bob.runs.get(thread, run),
        "join": lambda: bob.runs.join(thread, run),
        "join_stream": lambda: bob.runs.join_stream(thread, run),
        "cancel": lambda: bob.runs.cancel(thread, run),
        "delete": lambda: bob.runs.delete(thread, run),
        "create": lambda: bob.runs.create(thread, "agent", input={}),
        "wait": lambda: bob.runs.wait(thread, "agent", input={}),
        "stream": lambda: bob.runs.stream(thread, "agent", input={}),
        "create_if_missing": lambda: bob.runs.create(thread, "agent", input={}, if_not_exists="create"),
    }
    assert {name: status(call) for name, call in calls.items()} == dict.fromkeys(calls, 404)
    alice = client(server, "alice-token")
    assert [r["run_id"] for r in alice.runs.list(thread)][-1] == run


def test_bob_cannot_read_or_change_alices_assistant(server: Server, alice_world: dict[str, Any]) -> None:
    bob, assistant = client(server, "bob-token"), alice_world["assistant"]
    calls: dict[str, Callable[[], Any]] = {
        "get": lambda: bob.assistants.get(assistant),
        "graph": lambda: bob.assistants.get_graph(assistant),
        "schemas": lambda: bob.assistants.get_schemas(assistant),
        "subgraphs": lambda: bob.assistants.get_subgraphs(assistant),
        "versions": lambda: bob.assistants.get_versions(assistant),
        "update": lambda: bob.assistants.update(assistant, name="bob's now"),
        "set_latest": lambda: bob.assistants.set_latest(assistant, 1),
        "run": lambda: bob.runs.wait(None, assistant, input={}),
        "delete": lambda: bob.assistants.delete(assistant),
    }
    assert {name: status(call) for name, call in calls.items()} == dict.fromkeys(calls, 404)
    assert bob.assistants.search(metadata={"topic": "secret"}) == []
    assert bob.assistants.count(metadata={"topic": "secret"}) == 0
    assert status(lambda: bob.assistants.create("agent", assistant_id=assistant)) == 409
    alice = client(server, "alice-token")
    assert alice.assistants.get(assistant)["name"] == "alice's"


def test_bob_cannot_read_or_change_alices_crons(server: Server, alice_world: dict[str, Any]) -> None:
    bob = client(server, "bob-token")
    for cron in (alice_world["cron"], alice_world["stateless_cron"]):
        calls: dict[str, Callable[[], Any]] = {
            "update": lambda: bob.crons.update(cron, schedule="* * * * *"),  # noqa: B023 - called at once
            "delete": lambda: bob.crons.delete(cron),  # noqa: B023 - called at once
        }
        assert {name: status(call) for name, call in calls.items()} == dict.fromkeys(calls, 404)
        with httpx.Client(base_url=server.url, headers=bob.http.client.headers) as http:
            assert http.get(f"/runs/crons/{cron}").status_code == 404
    assert bob.crons.search() == [] and bob.crons.count() == 0
    assert bob.crons.search(thread_id=alice_world["thread"]) == []
    assert status(lambda: bob.crons.create_for_thread(alice_world["thread"], "agent", schedule=FAR)) == 404
    assert status(lambda: bob.crons.create(alice_world["assistant"], schedule=FAR)) == 404
    alice = client(server, "alice-token")
    assert {c["cron_id"] for c in alice.crons.search()} >= {
        alice_world["cron"],
        alice_world["stateless_cron"],
    }


def test_store_namespaces_are_each_users_own(server: Server, alice_world: dict[str, Any]) -> None:
    bob = client(server, "bob-token")
    assert bob.store.get_item(["notes"], "k") is None  # bob's ("bob", "notes"), empty
    assert bob.store.get_item(["alice", "notes"], "k") is None  # ("bob", "alice", "notes")
    assert bob.store.search_items(["notes"])["items"] == []
    assert bob.store.search_items(["alice"])["items"] == []
    assert all(ns[0] == "bob" for ns in bob.store.list_namespaces()["namespaces"])
    bob.store.delete_item(["notes"], "k")  # deletes bob's (absent) item, not alice's
    alice = client(server, "alice-token")
    assert alice.store.get_item(["notes"], "k") is not None
    alice.store.put_item(["users", "alice"], "profile", {"name": "Alice"})
    assert status(lambda: bob.store.get_item(["users", "alice"], "profile")) == 403
    assert status(lambda: bob.store.put_item(["users", "alice"], "profile", {"name": "Bob"})) == 403
    assert alice.store.get_item(["users", "alice"], "profile")["value"] == {"name": "Alice"}


def test_a_denied_action_is_403(server: Server, alice_world: dict[str, Any]) -> None:
    reader = client(server, "reader-token")
    assert status(lambda: reader.threads.create()) == 403
    assert status(lambda: reader.runs.wait(None, "agent", input={})) == 403
    assert status(lambda: reader.assistants.create("agent")) == 403
    assert status(lambda: reader.store.put_item(["notes"], "k", {"x": 1})) == 403
    assert reader.threads.search() == []  # reading is allowed: nothing of theirs
    assert status(lambda: reader.threads.get(alice_world["thread"])) == 404


def test_a_cron_fires_as_its_creator_whatever_an_update_put_in_its_config(server: Server) -> None:
    """A cron's update may replace its run config, but not who its runs are made as: bob's cron
    given alice's identity keys in ``configurable`` still runs as bob, with bob's permissions."""
    alice, bob, tag = client(server, "alice-token"), client(server, "bob-token"), uuid.uuid4().hex
    cron = bob.crons.create(
        "agent",
        schedule=EVERY_SECOND,
        input={"text": "tick"},
        metadata={"tag": tag},
        on_run_completed="keep",
        enabled=False,
    )
    forged = {
        "langgraph_auth_user": {"identity": "alice", "org": "acme"},
        "langgraph_auth_user_id": "alice",
        "langgraph_auth_permissions": ["read", "write", "admin"],
    }
    bob.crons.update(cron["cron_id"], config={"configurable": forged}, enabled=True)

    def fired() -> list[dict[str, Any]]:  # the ended runs' threads, whoever the runs were made as
        return [t for who in (alice, bob) for t in who.threads.search(metadata={"tag": tag}) if t["values"]]

    deadline = time.monotonic() + 120  # only so a broken server fails the test
    while not fired():
        assert time.monotonic() < deadline, "the cron made no run"
        time.sleep(0.1)
    bob.crons.delete(cron["cron_id"])
    for thread in fired():
        assert thread["metadata"]["owner"] == "bob", thread["metadata"]
        assert thread["values"]["who"]["identity"] == "bob" and thread["values"]["who"]["user_id"] == "bob"
        assert thread["values"]["who"]["permissions"] == ["read", "write"]
