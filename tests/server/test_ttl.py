"""Time to live of threads and store items in ``plait serve`` (request ``ttl``s and the config's defaults)."""

from __future__ import annotations

import json
import pathlib
import time
from collections.abc import Callable, Iterator
from typing import Any

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


def _sleep_until(moment: float) -> None:
    """Let the test's clock (``time.monotonic``) reach ``moment`` (only positions the test: what it
    asserts is decided by the clock it reads after each answer)."""
    time.sleep(max(0.0, moment - time.monotonic()))


def _eventually(check: Callable[[], bool], what: str, within: float = 120.0) -> None:
    """Poll ``check`` until true: a sweep comes every 0.6 s (``within`` only guards against a hang)."""
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"{what} did not happen within {within} s"
        time.sleep(0.1)


def test_store_items_expire_unless_a_read_restarts_their_clock(server: Server) -> None:
    client = get_sync_client(url=server.url)
    ns = ["ttl", str(time.monotonic_ns())]
    start = time.monotonic()  # each item expires 3 s after its write: not before start + 3
    client.store.put_item(ns, "short", {"v": 1}, ttl=0.05)  # 3 s
    short_written = time.monotonic()  # short expires by short_written + 3
    client.store.put_item(ns, "kept", {"v": 2})
    client.store.put_item(ns, "refreshed", {"v": 3}, ttl=0.05)
    refreshed_written = time.monotonic()
    got = client.store.get_item(ns, "short", refresh_ttl=False)
    if time.monotonic() < start + 3:
        assert got is not None and got["value"] == {"v": 1}
    _sleep_until(start + 2)
    asked = time.monotonic()
    read = client.store.get_item(ns, "refreshed", refresh_ttl=True)  # its 3 s start again
    answered = time.monotonic()
    refreshed = answered < start + 3  # answered before it could expire: it was read, so refreshed
    if refreshed:
        assert read is not None
    _sleep_until(short_written + 3)
    _eventually(lambda: client.store.get_item(ns, "short", refresh_ttl=False) is None, "short's expiry")
    again = client.store.get_item(ns, "refreshed", refresh_ttl=False)
    found = client.store.search_items(ns, refresh_ttl=False)["items"]
    if refreshed and time.monotonic() < asked + 3:  # not before its new time
        assert again is not None and again["value"] == {"v": 3}
        assert sorted(i["key"] for i in found) == ["kept", "refreshed"]
    _sleep_until((answered if refreshed else refreshed_written) + 3)
    _eventually(
        lambda: [i["key"] for i in client.store.search_items(ns, refresh_ttl=False)["items"]] == ["kept"],
        "refreshed's expiry",
    )
    assert [i["key"] for i in client.store.search_items(ns)["items"]] == ["kept"]
    assert list(ns) in client.store.list_namespaces(prefix=ns)["namespaces"]


def _renewed(client: Any) -> tuple[str, float]:
    """A thread made with a 1.8 s ttl then given 10 minutes, and when that was asked (made again if
    a slow machine let the first ttl run out in between)."""
    deadline = time.monotonic() + 120
    while True:
        made = time.monotonic()
        renewed = client.threads.create(ttl=0.03)["thread_id"]
        asked = time.monotonic()
        try:
            client.threads.update(renewed, metadata={"a": 1}, ttl=10)  # starts again from now, 10 minutes
            return renewed, asked
        except NotFoundError:
            assert time.monotonic() > made + 1.8 and time.monotonic() < deadline  # only once its ttl ran out


def test_threads_are_deleted_or_pruned_when_their_ttl_runs_out(server: Server) -> None:
    client = get_sync_client(url=server.url)
    start = time.monotonic()  # the 1.8 s ttls below run out not before start + 1.8
    gone = client.threads.create(ttl=0.03)["thread_id"]  # 1.8 s, strategy "delete"
    gone_made = time.monotonic()  # it runs out by gone_made + 1.8
    try:
        # the SDK joins them: "metadata,ttl"
        ttl = client.threads.get(gone, include=["metadata", "ttl"])["ttl"]
        assert ttl["strategy"] == "delete" and ttl["ttl"] <= 0.03
    except NotFoundError:
        assert time.monotonic() > start + 1.8, "deleted before its time"
    pruned = client.threads.create(ttl={"strategy": "keep_latest", "ttl": 10})["thread_id"]
    assert client.threads.get(pruned, include=["ttl"])["ttl"]["strategy"] == "keep_latest"
    for text in ("one", "two"):
        client.runs.wait(pruned, "agent", input={"messages": [{"role": "user", "content": text}]})
    assert len(client.threads.get_history(pruned, limit=50)) == 6
    # the runs done: 1.8 s from now (a ttl given at creation could run out while they run)
    client.threads.update(pruned, metadata={}, ttl={"strategy": "keep_latest", "ttl": 0.03})
    pruned_set = time.monotonic()
    renewed, renewed_at = _renewed(client)
    untouched = client.threads.create()["thread_id"]
    _sleep_until(gone_made + 1.8)

    def deleted() -> bool:
        try:
            client.threads.get(gone)
        except NotFoundError:
            return True
        return False

    _eventually(deleted, "the deletion of the thread whose ttl ran out")
    _sleep_until(pruned_set + 1.8)
    _eventually(lambda: len(client.threads.get_history(pruned, limit=50)) == 1, "the pruning")
    history = client.threads.get_history(pruned, limit=50)
    assert [m["content"] for m in history[0]["values"]["messages"]][-1] == "you said: two"
    assert client.threads.get(pruned, include=["ttl"])["ttl"] is None  # pruned once, then kept
    left = client.threads.get(renewed, include=["ttl"])["ttl"]["ttl"]
    assert left <= 10 and (left > 9 or time.monotonic() > renewed_at + 60)
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
        written = time.monotonic()  # it expires between start + 3 and written + 3
        client.store.put_item(["d"], "kept", {"v": 2}, ttl=10)
        _sleep_until(start + 2)
        got = client.store.get_item(["d"], "k")  # a read that does not refresh (the config's)
        if time.monotonic() < start + 3:
            assert got is not None
        _sleep_until(written + 3)
        _eventually(lambda: client.store.get_item(["d"], "k") is None, "the default ttl's expiry")
        assert [i["key"] for i in client.store.search_items(["d"])["items"]] == ["kept"]
