"""Crons through the official ``langgraph-sdk`` against a real ``plait serve`` (SQLite and PostgreSQL)."""

from __future__ import annotations

import pathlib
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import pytest
from _serve_proc import Server
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError

EVERY_SECOND = "* * * * * */1"  # croniter's sixth field: seconds (LangGraph's server takes it too)


@pytest.fixture(scope="module")
def server(server_on_both: Server) -> Server:
    """The API on both databases."""
    return server_on_both


def _say(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def _log(server: Server) -> list[str]:
    path = pathlib.Path(server.log).parent / "nodes.log"
    return path.read_text().splitlines() if path.exists() else []


def _until(check: Callable[[], bool], what: str = "the condition", within: float = 120.0) -> None:
    """Poll ``check`` until true (``within`` seconds only guard against a hang)."""
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"{what} did not happen within {within} s"
        time.sleep(0.1)


def _scheduler_went_round(client: Any) -> None:
    """Wait until a cron made now fired twice: the scheduler took due crons again after every
    change made before this call (a cron disabled, deleted or ended before fires no more)."""
    tid = client.threads.create()["thread_id"]
    witness = client.crons.create_for_thread(tid, "agent", schedule=EVERY_SECOND, input=_say("witness"))
    _until(lambda: len(client.runs.list(tid, limit=100)) >= 2, "two runs of a cron firing every second")
    client.crons.delete(witness["cron_id"])  # (its thread stays: a run of it may still be ending)


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_create_get_search_count_update_delete(server: Server) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    tag = uuid.uuid4().hex
    before = datetime.now(timezone.utc)
    stateless = client.crons.create(
        "agent",
        schedule="0 9 * * *",
        input=_say("hi"),
        metadata={"tag": tag, "n": 1},
        timezone="America/New_York",
    )
    on_thread = client.crons.create_for_thread(
        tid, "agent", schedule="*/5 * * * *", input=_say("ho"), metadata={"tag": tag, "n": 2}
    )
    after = datetime.now(timezone.utc)  # the server computed the next times between before and after
    agent = client.assistants.search(graph_id="agent")[0]["assistant_id"]
    assert stateless["assistant_id"] == on_thread["assistant_id"] == agent  # the graph's name resolved
    assert stateless["thread_id"] is None and on_thread["thread_id"] == tid
    assert stateless["on_run_completed"] == "delete" and on_thread["on_run_completed"] is None
    assert stateless["enabled"] is True and stateless["metadata"] == {"tag": tag, "n": 1}
    assert stateless["payload"]["input"] == _say("hi")
    assert stateless["payload"]["config"]["configurable"]["cron_id"] == stateless["cron_id"]
    nine = _when(stateless["next_run_date"])  # 9:00 in New York is 14:00 UTC in winter, 13:00 in summer
    assert nine > before and (nine.hour, nine.minute) in ((14, 0), (13, 0))
    five = _when(on_thread["next_run_date"])
    assert five.minute % 5 == 0 and before < five <= after + timedelta(minutes=5)

    got = httpx.get(f"{server.url}/runs/crons/{on_thread['cron_id']}")
    assert got.status_code == 200 and got.json() == on_thread
    mine = client.crons.search(metadata={"tag": tag})
    assert [c["cron_id"] for c in mine] == [on_thread["cron_id"], stateless["cron_id"]]  # newest first
    assert [c["cron_id"] for c in client.crons.search(thread_id=tid)] == [on_thread["cron_id"]]
    picked = client.crons.search(
        metadata={"tag": tag}, sort_by="created_at", sort_order="asc", select=["cron_id"]
    )
    assert picked == [{"cron_id": stateless["cron_id"]}, {"cron_id": on_thread["cron_id"]}]
    page = httpx.post(f"{server.url}/runs/crons/search", json={"metadata": {"tag": tag}, "limit": 1})
    assert len(page.json()) == 1 and page.headers["X-Pagination-Total"] == "2"
    assert page.headers["X-Pagination-Next"] == "1"
    assert client.crons.count(metadata={"tag": tag}) == 2
    assert client.crons.count(thread_id=tid) == 1
    assert len(client.crons.search(assistant_id=agent, metadata={"tag": tag})) == 2
    assert client.crons.search(assistant_id=str(uuid.uuid4()), metadata={"tag": tag}) == []
    assert client.crons.count(assistant_id="agent", thread_id=tid, metadata={"tag": tag}) == 1

    configured = client.crons.create(
        "agent",
        schedule="0 0 * * *",
        config={"configurable": {"foo": "bar"}, "tags": ["t"], "recursion_limit": 7},
    )
    kept = client.crons.update(configured["cron_id"], enabled=False)
    assert kept["payload"]["config"] == {
        "configurable": {"foo": "bar", "cron_id": configured["cron_id"]},
        "tags": ["t"],
        "recursion_limit": 7,
    }  # an update without config keeps the cron's
    unset = httpx.patch(f"{server.url}/runs/crons/{configured['cron_id']}", json={"config": None}).json()
    assert unset["payload"]["config"] == {"configurable": {"cron_id": configured["cron_id"]}}
    cleared = client.crons.update(configured["cron_id"], end_time=None, timezone="Europe/Paris")
    assert cleared["end_time"] is None and "end_time" not in cleared["payload"]
    assert cleared["payload"]["timezone"] == cleared["timezone"] == "Europe/Paris"
    client.crons.delete(configured["cron_id"])

    updated = client.crons.update(
        on_thread["cron_id"], schedule="0 0 1 1 *", enabled=False, metadata={"extra": True}, input=_say("new")
    )
    assert updated["enabled"] is False and updated["schedule"] == "0 0 1 1 *"
    assert updated["metadata"] == {"tag": tag, "n": 2, "extra": True}  # merged
    assert updated["payload"]["metadata"] == {"extra": True}  # the run request's: replaced
    assert updated["payload"]["input"] == _say("new")
    assert (_when(updated["next_run_date"]).month, _when(updated["next_run_date"]).day) == (1, 1)
    assert updated["updated_at"] > on_thread["updated_at"]
    assert client.crons.search(metadata={"tag": tag}, enabled=False)[0]["cron_id"] == on_thread["cron_id"]

    client.crons.delete(stateless["cron_id"])
    with pytest.raises(NotFoundError):
        client.crons.delete(stateless["cron_id"])
    assert httpx.get(f"{server.url}/runs/crons/{stateless['cron_id']}").status_code == 404
    client.threads.delete(tid)  # a thread's crons go with it
    assert client.crons.count(metadata={"tag": tag}) == 0


def test_an_assistant_deleted_takes_its_crons(server: Server) -> None:
    client = get_sync_client(url=server.url)
    assistant = client.assistants.create("agent", name="short-lived")
    cron = client.crons.create(assistant["assistant_id"], schedule="0 0 * * *", input=_say("x"))
    client.assistants.delete(assistant["assistant_id"])
    assert httpx.get(f"{server.url}/runs/crons/{cron['cron_id']}").status_code == 404


def test_bad_requests_are_refused_with_their_reason(server: Server) -> None:
    client = get_sync_client(url=server.url)
    url = server.url
    cron = client.crons.create("agent", schedule="0 0 * * *", input=_say("x"))
    cases: list[tuple[str, str, Any, int, str]] = [
        ("post", "/runs/crons", {"assistant_id": "agent", "schedule": "not a cron"}, 422, "Invalid cron schedule"),
        ("post", "/runs/crons", {"assistant_id": "agent"}, 422, "schedule: expected a value (required), got nothing"),
        ("post", "/runs/crons", {"assistant_id": "agent", "schedule": 5}, 422, "schedule: expected a string, got 5"),
        ("post", "/runs/crons", {"schedule": "0 0 * * *"}, 422, "assistant_id: expected a value (required), got nothing"),
        ("post", "/runs/crons", {"assistant_id": "nope", "schedule": "0 0 * * *"}, 422, "assistant ID"),
        ("post", "/runs/crons", {"assistant_id": str(uuid.uuid4()), "schedule": "0 0 * * *"}, 404, "not found"),
        ("post", "/runs/crons", {"assistant_id": "agent", "schedule": "0 0 * * *", "timezone": "Nope/Nope"}, 422, "timezone"),
        ("post", "/runs/crons", {"assistant_id": "agent", "schedule": "0 0 * * *", "end_time": "tomorrow"}, 422, "end_time"),
        ("post", "/runs/crons", {"assistant_id": "agent", "schedule": "0 0 * * *", "on_run_completed": "maybe"}, 422, "on_run_completed"),
        ("post", "/runs/crons", {"assistant_id": "agent", "schedule": "0 0 * * *", "stream_mode": "nope"}, 422, "stream_mode"),
        ("post", "/runs/crons", {"assistant_id": "agent", "schedule": "0 0 * * *", "colour": "red"}, 422, "colour"),
        ("post", f"/threads/{uuid.uuid4()}/runs/crons", {"assistant_id": "agent", "schedule": "0 0 * * *"}, 404, "Thread"),
        ("post", "/threads/not-a-uuid/runs/crons", {"assistant_id": "agent", "schedule": "0 0 * * *"}, 422, "thread ID"),
        ("get", "/runs/crons/not-a-uuid", None, 422, "cron ID"),
        ("patch", f"/runs/crons/{uuid.uuid4()}", {"enabled": False}, 404, "not found"),
        ("patch", f"/runs/crons/{cron['cron_id']}", {}, 400, "empty"),
        ("patch", f"/runs/crons/{cron['cron_id']}", {"schedule": "61 * * * *"}, 422, "Invalid cron schedule"),
        ("patch", f"/runs/crons/{cron['cron_id']}", {"assistant_id": "agent"}, 422, "cannot be changed"),
        ("post", "/runs/crons/search", {"sort_by": "colour"}, 422, "sort_by"),
        ("post", "/runs/crons/search", {"select": [["x"]]}, 422, "select"),
        ("post", "/runs/crons/search", {"select": ["now"]}, 422, "select"),
        ("post", "/runs/crons/search", {"limit": 0}, 422, "limit"),
        ("post", "/runs/crons/search", {"offset": -1}, 422, "offset"),
        ("post", "/runs/crons/search", {"thread_id": "x"}, 422, "thread ID"),
        ("post", "/runs/crons/search", {"assistant_id": "agent", "thread_id": "x"}, 422, "thread ID"),
        ("post", "/runs/crons/count", {"assistant_id": "agent", "enabled": "yes"}, 422, "enabled"),
        ("post", "/runs/crons", {"assistant_id": "agent", "schedule": "0 0 30 2 *"}, 422, "has no time"),
        ("post", "/runs/crons", {"assistant_id": "agent", "schedule": "0 0 1 1 * 0 2020"}, 422, "has no time"),
        ("post", "/runs/crons", {"assistant_id": "agent", "schedule": "0 0 * * *", "end_time": "9999-12-31T23:59:59-10:00"}, 422, "end_time"),
        ("patch", f"/runs/crons/{cron['cron_id']}", {"schedule": "0 0 30 2 *"}, 422, "has no time"),
    ]  # fmt: skip
    for method, path, payload, status, words in cases:
        answer = httpx.request(method, url + path, json=payload)
        assert answer.status_code == status, (method, path, payload, answer.text)
        assert words in answer.json()["detail"], (path, answer.text)
    assert client.crons.search(select=["cron_id"], limit=1000).count({"cron_id": cron["cron_id"]}) == 1
    assert httpx.get(f"{url}/runs/crons/{cron['cron_id']}").json() == cron  # nothing a refusal changed
    with pytest.raises(UnprocessableEntityError):
        client.crons.create("agent", schedule="* * *")


def test_a_thread_cron_runs_on_its_thread_until_disabled(server: Server) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    text = f"log:tick-{uuid.uuid4().hex}"
    cron = client.crons.create_for_thread(
        tid, "agent", schedule=EVERY_SECOND, input=_say(text), metadata={"k": 1}
    )
    _until(lambda: len([r for r in client.runs.list(tid) if r["status"] == "success"]) >= 2, "two runs")
    fired = httpx.get(f"{server.url}/runs/crons/{cron['cron_id']}").json()
    assert fired["updated_at"] == cron["updated_at"]  # firing moves next_run_date only
    assert fired["next_run_date"] > cron["next_run_date"]
    client.crons.update(cron["cron_id"], enabled=False)
    _scheduler_went_round(client)  # disabled: nothing more
    _until(lambda: all(r["status"] == "success" for r in client.runs.list(tid, limit=100)), "the runs' ends")
    runs = client.runs.list(tid, limit=100)
    assert all(r["metadata"]["k"] == 1 for r in runs)
    assert all(r["kwargs"]["config"]["configurable"]["cron_id"] == cron["cron_id"] for r in runs)
    _scheduler_went_round(client)
    assert len(client.runs.list(tid, limit=100)) == len(runs)
    assert _log(server).count(text) == len(runs)  # each run executed once
    values = client.threads.get(tid)["values"]
    assert values["turns"] == len(runs) and values["messages"][-1]["content"] == f"you said: {text}"


def test_stateless_crons_make_a_thread_per_run_kept_or_deleted(server: Server) -> None:
    client = get_sync_client(url=server.url)
    tag = uuid.uuid4().hex
    kept_text, gone_text = f"log:kept-{tag}", f"log:gone-{tag}"
    kept = client.crons.create(
        "agent", schedule=EVERY_SECOND, input=_say(kept_text), metadata={"tag": tag}, on_run_completed="keep"
    )
    gone = client.crons.create("agent", schedule=EVERY_SECOND, input=_say(gone_text), metadata={"tag": tag})
    _until(
        lambda: _log(server).count(kept_text) >= 2 and _log(server).count(gone_text) >= 2, "two runs of each"
    )
    for cron in (kept, gone):
        client.crons.delete(cron["cron_id"])
    _scheduler_went_round(client)  # no run starts after this

    def settled() -> bool:  # each run made its thread, ran, ended; the other cron's threads went
        threads = client.threads.search(metadata={"tag": tag}, limit=100)
        return len(threads) == _log(server).count(kept_text) and all(
            t["values"]
            and t["values"]["messages"][-1]["content"] == f"you said: {kept_text}"
            and [r["status"] for r in client.runs.list(t["thread_id"])] == ["success"]
            for t in threads
        )

    _until(settled, "one ended thread per run of the kept cron, none of the other's")
    for thread in client.threads.search(metadata={"tag": tag}, limit=100):
        assert thread["metadata"]["tag"] == tag and thread["metadata"]["graph_id"] == "agent"


def test_end_time_stops_a_cron(server: Server) -> None:
    client = get_sync_client(url=server.url)
    text = f"log:until-{uuid.uuid4().hex}"
    end = datetime.now(timezone.utc) + timedelta(seconds=2.5)
    tid = client.threads.create()["thread_id"]
    cron = client.crons.create_for_thread(tid, "agent", schedule=EVERY_SECOND, input=_say(text), end_time=end)
    assert _when(cron["end_time"]) == end
    _until(
        lambda: httpx.get(f"{server.url}/runs/crons/{cron['cron_id']}").json()["next_run_date"] is None,
        "the end time",
    )
    _scheduler_went_round(client)
    _until(lambda: all(r["status"] == "success" for r in client.runs.list(tid)), "the runs' ends")
    fired = len(client.runs.list(tid))
    # at most one run per second before the end; one at least if it had a next time when made
    assert fired <= 3 and (fired >= 1 or cron["next_run_date"] is None)
    _scheduler_went_round(client)
    assert len(client.runs.list(tid)) == fired
    # a later end time brings it back
    later = client.crons.update(cron["cron_id"], end_time=datetime.now(timezone.utc) + timedelta(hours=1))
    assert later["next_run_date"] is not None
    _until(lambda: len(client.runs.list(tid)) > fired, "a run after the later end time")
    client.crons.delete(cron["cron_id"])


def test_a_schedule_that_runs_out_stops_itself_and_no_other_cron(server: Server) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    text = f"log:once-{uuid.uuid4().hex}"
    single = _once_soon(client, tid, _say(text))
    other_tid = client.threads.create()["thread_id"]
    ticking = client.crons.create_for_thread(
        other_tid, "agent", schedule=EVERY_SECOND, input=_say("log:tick")
    )
    _until(
        lambda: httpx.get(f"{server.url}/runs/crons/{single['cron_id']}").json()["next_run_date"] is None,
        "the single time",
    )
    _until(lambda: _log(server).count(text) == 1, "the single run")
    before = len(client.runs.list(other_tid, limit=100))
    _until(lambda: len(client.runs.list(other_tid, limit=100)) >= before + 2, "more runs")  # the others go on
    ended = client.crons.update(single["cron_id"], metadata={"done": True}, enabled=False)  # still updatable
    assert ended["next_run_date"] is None and ended["metadata"] == {"done": True}
    for cron in (single, ticking):
        client.crons.delete(cron["cron_id"])


def _once_soon(client: Any, tid: str, payload: dict[str, Any]) -> dict[str, Any]:
    """A cron for ``tid`` whose schedule (with a year) has one time, a few seconds from now; made
    again for a later time if a slow request reached the server after it (a 422: "has no time")."""
    deadline = time.monotonic() + 120
    while True:
        soon = datetime.now(timezone.utc) + timedelta(seconds=2)
        once = f"{soon.minute} {soon.hour} {soon.day} {soon.month} * {soon.second} {soon.year}"
        try:
            return dict(client.crons.create_for_thread(tid, "agent", schedule=once, input=payload))
        except UnprocessableEntityError:
            if datetime.now(timezone.utc) < soon.replace(microsecond=0) or time.monotonic() > deadline:
                raise  # refused although its time had not come: a real error
