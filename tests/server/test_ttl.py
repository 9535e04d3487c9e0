"""Time to live of threads and store items in ``plait serve`` (request ``ttl``s and the config's defaults)."""

from __future__ import annotations

import json
import pathlib
import time
from collections.abc import Iterator

import httpx
import pytest
from _pg import private_schema
from _serve_proc import Server, running
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError

APP = pathlib.Path(__file__).parent / "app"
SWEEP_MINUTES = 0.01
"""The config's sweep interval (0.6 s), so expired threads go within a test."""


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("ttl")
    config = {
        "graphs": {"agent": f"{APP / 'agent.py'}:graph"},
        # batches of one thread: a sweep goes on until a batch comes back short
        "checkpointer": {"ttl": {"sweep_interval_minutes": SWEEP_MINUTES, "sweep_limit": 1}},
        "store": {"ttl": {"sweep_interval_minutes": SWEEP_MINUTES}},
    }
    path = tmp / "plait.json"
    path.write_text(json.dumps(config))
    if request.param == "sqlite":
        with running(str(tmp / "server.sqlite"), tmp, "--config", str(path)) as srv:
            yield srv
        return
    with private_schema("plait_ttl") as dsn, running(dsn, tmp, "--config", str(path)) as srv:
        yield srv


def _until(deadline: float) -> None:
    time.sleep(max(0.0, deadline - time.monotonic()))


def test_store_items_expire_unless_a_read_restarts_their_clock(server: Server) -> None:
    client = get_sync_client(url=server.url)
    ns = ["ttl", str(time.monotonic_ns())]
    start = time.monotonic()
    client.store.put_item(ns, "short", {"v": 1}, ttl=0.05)  # 3 s
    client.store.put_item(ns, "kept", {"v": 2})
    client.store.put_item(ns, "refreshed", {"v": 3}, ttl=0.05)
    assert client.store.get_item(ns, "short", refresh_ttl=False)["value"] == {"v": 1}
    _until(start + 2)
    assert client.store.get_item(ns, "refreshed", refresh_ttl=True) is not None  # its 3 s start again
    _until(start + 4)
    assert client.store.get_item(ns, "short", refresh_ttl=False) is None
    assert client.store.get_item(ns, "refreshed", refresh_ttl=False)["value"] == {"v": 3}
    found = client.store.search_items(ns, refresh_ttl=False)["items"]
    assert sorted(i["key"] for i in found) == ["kept", "refreshed"]
    _until(start + 5.5)
    assert [i["key"] for i in client.store.search_items(ns)["items"]] == ["kept"]
    assert list(ns) in client.store.list_namespaces(prefix=ns)["namespaces"]


def test_threads_are_deleted_or_pruned_when_their_ttl_runs_out(server: Server) -> None:
    client = get_sync_client(url=server.url)
    start = time.monotonic()
    gone = client.threads.create(ttl=0.03)["thread_id"]  # 1.8 s, strategy "delete"
    pruned = client.threads.create(ttl={"strategy": "keep_latest", "ttl": 0.03})["thread_id"]
    for text in ("one", "two"):
        client.runs.wait(pruned, "agent", input={"messages": [{"role": "user", "content": text}]})
    assert len(client.threads.get_history(pruned, limit=50)) == 6
    renewed = client.threads.create(ttl=0.03)["thread_id"]
    client.threads.update(renewed, metadata={"a": 1}, ttl=10)  # starts again from now, 10 minutes
    untouched = client.threads.create()["thread_id"]
    ttl = client.threads.get(gone, include=["metadata", "ttl"])["ttl"]  # the SDK joins them: "metadata,ttl"
    assert ttl["strategy"] == "delete" and 0 < ttl["ttl"] <= 0.03
    _until(start + 4)
    with pytest.raises(NotFoundError):
        client.threads.get(gone)
    history = client.threads.get_history(pruned, limit=50)
    assert len(history) == 1
    assert [m["content"] for m in history[0]["values"]["messages"]][-1] == "you said: two"
    assert client.threads.get(pruned, include=["ttl"])["ttl"] is None  # pruned once, then kept
    assert 9 < client.threads.get(renewed, include=["ttl"])["ttl"]["ttl"] <= 10
    assert client.threads.get(untouched, include=["ttl"])["ttl"] is None


def test_bad_ttls_are_422(server: Server) -> None:
    client = get_sync_client(url=server.url)
    for bad in ({"strategy": "archive", "ttl": 1}, {"ttl": -1}, {"ttl": 1, "when": "now"}, {"ttl": 1e12}):
        with pytest.raises(UnprocessableEntityError):
            client.threads.create(ttl=bad)
    with httpx.Client(base_url=server.url) as http:
        for ttl in (0, "soon", True):
            r = http.put("/store/items", json={"namespace": ["a"], "key": "k", "value": {}, "ttl": ttl})
            assert r.status_code == 422, (ttl, r.text)
        r = http.get("/store/items", params={"namespace": "a", "key": "k", "refresh_ttl": "maybe"})
        assert r.status_code == 422
        r = http.post("/store/items/search", json={"namespace_prefix": ["a"], "refresh_ttl": "yes"})
        assert r.status_code == 422


def test_the_configs_default_ttl_applies_to_threads_runs_make(tmp_path: pathlib.Path) -> None:
    config = {
        "graphs": {"agent": f"{APP / 'agent.py'}:graph"},
        "checkpointer": {"ttl": {"strategy": "keep_latest", "default_ttl": 60}},
        "store": {
            "ttl": {"default_ttl": 0.05, "refresh_on_read": False, "sweep_interval_minutes": SWEEP_MINUTES}
        },
    }
    path = tmp_path / "plait.json"
    path.write_text(json.dumps(config))
    with running(str(tmp_path / "server.sqlite"), tmp_path, "--config", str(path)) as srv:
        client = get_sync_client(url=srv.url)
        made = "0193a0b4-0000-7000-8000-000000000001"
        client.runs.wait(
            made, "agent", input={"messages": [{"role": "user", "content": "hi"}]}, if_not_exists="create"
        )
        ttl = client.threads.get(made, include=["ttl"])["ttl"]
        assert ttl["strategy"] == "keep_latest" and 59 < ttl["ttl"] <= 60
        created = client.threads.create()["thread_id"]
        assert 59 < client.threads.get(created, include=["ttl"])["ttl"]["ttl"] <= 60
        start = time.monotonic()
        client.store.put_item(["d"], "k", {"v": 1})  # no ttl: the default, 3 s
        client.store.put_item(["d"], "kept", {"v": 2}, ttl=10)
        _until(start + 2)
        assert client.store.get_item(["d"], "k") is not None  # a read that does not refresh (the config's)
        _until(start + 3.5)
        assert client.store.get_item(["d"], "k") is None
        assert [i["key"] for i in client.store.search_items(["d"])["items"]] == ["kept"]
