"""Several ``plait serve`` processes on one PostgreSQL: shared queue, cross-worker streams, take-over, no lost runs."""

from __future__ import annotations

import asyncio
import pathlib
import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from _pg import private_schema
from _serve_proc import Gate, Server, start, stop, wait_for_file
from langgraph_sdk import get_client, get_sync_client


@pytest.fixture
def pg_dsn() -> Iterator[str]:
    with private_schema("plait_srv") as dsn:
        yield dsn


LEASE = "6"
"""Seconds of a run's lease (renewed every third of it): a loaded machine delays a heartbeat by
seconds, never by four; a killed worker's run is taken over after at most this."""


def _until(check: Callable[[], bool], what: str, within: float = 120.0) -> None:
    """Poll ``check`` until true (``within`` seconds only guard against a hang)."""
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"{what} did not happen within {within} s"
        time.sleep(0.05)


@pytest.fixture
def pair(pg_dsn: str, tmp_path: pathlib.Path) -> Iterator[tuple[Server, Server, pathlib.Path]]:
    """Two workers; ``two_steps``'s second step waits at the gate ``nodes.gate`` beside ``nodes.log``."""
    log = tmp_path / "nodes.log"
    gate = log.with_suffix(".gate")
    env = {"PLAIT_TEST_LOG": str(log), "PLAIT_TEST_GATE": str(gate)}
    first = start(pg_dsn, tmp_path, "--lease-ttl", LEASE, env=env)
    try:
        second = start(pg_dsn, tmp_path, "--lease-ttl", LEASE, env=env)
    except BaseException:
        stop(first)
        raise
    try:
        yield first, second, log
    finally:
        gate.touch()
        stop(first)
        stop(second)


def test_run_created_on_one_worker_streams_from_the_other(pair: tuple[Server, Server, pathlib.Path]) -> None:
    one, two, _ = pair
    a, b = get_sync_client(url=one.url), get_sync_client(url=two.url)
    tid = a.threads.create()["thread_id"]
    run = a.runs.create(
        tid,
        "agent",
        input={"messages": [{"role": "user", "content": "sleep:0.5"}]},
        stream_mode=["values", "custom"],
    )
    parts = list(b.runs.join_stream(tid, run["run_id"]))
    assert [p.event for p in parts] == ["metadata", "values", "custom", "values"]
    assert parts[-1].data["messages"][-1]["content"] == "you said: sleep:0.5"
    # resumable: from the first event's id on, the rest is replayed (from either worker)
    again = list(a.runs.join_stream(tid, run["run_id"], last_event_id=parts[1].id))
    assert [p.event for p in again] == ["custom", "values"]
    assert b.threads.get(tid)["values"]["turns"] == 1
    assert b.runs.get(tid, run["run_id"])["status"] == "success"


def test_a_thread_joined_on_one_worker_follows_runs_made_on_the_other(
    pair: tuple[Server, Server, pathlib.Path], gates: Callable[[], Gate]
) -> None:
    one, two, _ = pair
    a, b = get_sync_client(url=one.url), get_sync_client(url=two.url)
    tid = a.threads.create()["thread_id"]
    gate = gates()
    held = a.runs.create(tid, "agent", input=gate.input())["run_id"]  # in flight as the client joins
    made: list[str] = []
    events: list[tuple[str, Any]] = []
    for part in b.threads.join_stream(tid):
        events.append((part.event, part.data))
        if not made:  # the client has joined: a run made on the first worker now starts after that
            made.append(
                a.runs.create(tid, "agent", input={"messages": [{"role": "user", "content": "x"}]})["run_id"]
            )
            gate.open()
        if (
            part.event == "metadata"
            and part.data.get("status") == "run_done"
            and part.data["run_id"] == made[0]
        ):
            break
    done = [d["run_id"] for e, d in events if e == "metadata" and d.get("status") == "run_done"]
    assert done == [held, made[0]]  # each followed to its end, one after the other
    starts = [i for i, (e, d) in enumerate(events) if e == "metadata" and "attempt" in d]
    assert [events[i][1]["run_id"] for i in starts] == [held, made[0]]
    assert any(e == "values" for e, _ in events[starts[1] :])


def test_killed_worker_run_completes_elsewhere(pair: tuple[Server, Server, pathlib.Path]) -> None:
    one, two, log = pair
    client = get_sync_client(url=one.url)
    tid = client.threads.create()["thread_id"]
    run = client.runs.create(tid, "two_steps", input={"messages": [{"role": "user", "content": "go"}]})
    wait_for_file(log.with_suffix(".started"))  # the second step is at its gate (held until the kill)
    pid = int(log.read_text().split("second-start ")[1].split()[0])
    victim, survivor = (one, two) if pid == one.proc.pid else (two, one)
    assert pid == victim.proc.pid
    # durability "async" saves step one's checkpoint while step two runs: kill once it is stored
    _until(
        lambda: any(s["next"] == ["second"] for s in client.threads.get_history(tid)),
        "step one's checkpoint saved",
    )
    victim.proc.send_signal(signal.SIGKILL)
    victim.proc.wait()
    log.with_suffix(".gate").touch()  # the survivor, taking the run over, goes through
    other = get_sync_client(url=survivor.url)
    out = other.runs.join(tid, run["run_id"])
    lines = log.read_text().splitlines()
    assert sum(line.startswith("first ") for line in lines) == 1, lines  # step one is not run twice
    assert f"second-done {survivor.proc.pid}" in lines
    assert [m["content"] for m in out["messages"]] == ["go", "first done", "second done"]
    assert other.runs.get(tid, run["run_id"])["status"] == "success"


async def test_many_runs_over_few_threads(pair: tuple[Server, Server, pathlib.Path]) -> None:
    one, two, log = pair
    clients = [get_client(url=one.url), get_client(url=two.url)]
    threads = [(await clients[i % 2].threads.create())["thread_id"] for i in range(50)]

    async def create(i: int) -> tuple[str, str]:
        tid = threads[i % 50]
        run = await clients[i % 2].runs.create(
            tid, "agent", input={"messages": [{"role": "user", "content": f"log:{i}"}]}
        )
        return tid, run["run_id"]

    runs = await asyncio.gather(*(create(i) for i in range(200)))
    await asyncio.gather(*(clients[n % 2].runs.join(tid, rid) for n, (tid, rid) in enumerate(runs)))
    counts = Counter(log.read_text().splitlines())
    assert len(counts) == 200 and set(counts.values()) == {1}  # every run's node ran exactly once
    for tid in threads:
        state = await clients[0].threads.get_state(tid)
        texts = [m["content"] for m in state["values"]["messages"]]
        assert state["values"]["turns"] == 4 and len(texts) == 8
        asked = [t for t in texts if t.startswith("log:")]
        assert [f"you said: {t}" for t in asked] == [t for t in texts if t.startswith("you said")]
    listed = await asyncio.gather(*(clients[1].runs.list(tid, limit=10) for tid in threads))
    statuses = Counter(r["status"] for runs_of_thread in listed for r in runs_of_thread)
    assert statuses == {"success": 200}
    assert uuid.UUID(threads[0])


def test_a_waited_run_shares_only_its_outcome(pair: tuple[Server, Server, pathlib.Path], pg_dsn: str) -> None:
    import psycopg

    one, two, _ = pair
    a, b = get_sync_client(url=one.url), get_sync_client(url=two.url)
    tid = a.threads.create()["thread_id"]
    out = a.runs.wait(tid, "agent", input={"messages": [{"role": "user", "content": "hi"}]})
    assert out["messages"][-1]["content"] == "you said: hi"
    run_id = a.runs.list(tid)[0]["run_id"]
    with psycopg.connect(pg_dsn) as conn:
        events = [
            r[0] for r in conn.execute("SELECT event FROM plait_server_events WHERE run_id = %s", (run_id,))
        ]
    assert events == ["__end__"]  # its values events stayed in the worker that ran it
    assert _text_of(b.runs.join(tid, run_id)) == "you said: hi"  # the outcome, from the other worker
    streamed = a.runs.create(tid, "agent", input={"messages": [{"role": "user", "content": "x"}]})
    assert [p.event for p in b.runs.join_stream(tid, streamed["run_id"])] == ["metadata", "values", "values"]


def _text_of(values: dict) -> str:
    return str(values["messages"][-1]["content"])


def _seconds(stamp: object) -> float:
    from datetime import datetime

    return datetime.fromisoformat(str(stamp)).timestamp()


def test_a_queued_run_starts_as_the_one_before_ends(
    pair: tuple[Server, Server, pathlib.Path], gates: Callable[[], Gate]
) -> None:
    one, two, _ = pair
    a, b = get_sync_client(url=one.url), get_sync_client(url=two.url)
    tid = a.threads.create()["thread_id"]
    gate = gates()
    first = a.runs.create(tid, "agent", input=gate.input())
    gate.started()
    # created on the other worker while the thread is busy: it waits for the first's end
    second = b.runs.create(tid, "agent", input={"messages": [{"role": "user", "content": "next"}]})
    assert b.runs.get(tid, second["run_id"])["status"] == "pending"
    gate.open()
    assert _text_of(b.runs.join(tid, second["run_id"])) == "you said: next"
    ended = [a.runs.get(tid, r["run_id"]) for r in (first, second)]
    assert [r["status"] for r in ended] == ["success", "success"]
    assert _seconds(ended[1]["updated_at"]) >= _seconds(ended[0]["updated_at"])


def test_runs_beyond_the_jobs_limit_wait_their_turn(
    pg_dsn: str, tmp_path: pathlib.Path, gates: Callable[[], Gate]
) -> None:
    server = start(pg_dsn, tmp_path, "--jobs", "1", env={"PLAIT_TEST_LOG": str(tmp_path / "nodes.log")})
    try:
        client = get_sync_client(url=server.url)
        held = [gates() for _ in range(3)]
        tids = [client.threads.create()["thread_id"] for _ in held]
        runs = [client.runs.create(t, "agent", input=g.input()) for t, g in zip(tids, held, strict=True)]

        def statuses() -> list[str]:
            return [client.runs.get(t, r["run_id"])["status"] for t, r in zip(tids, runs, strict=True)]

        held[0].started()
        assert statuses() == ["running", "pending", "pending"]  # one slot: the others are queued, in order
        held[0].open()
        held[1].started()  # one after the other: the second starts once the first ended
        assert statuses() == ["success", "running", "pending"]
        held[1].open()
        held[2].started()
        assert statuses() == ["success", "success", "running"]
        held[2].open()
        client.runs.join(tids[2], runs[2]["run_id"])
        assert statuses() == ["success"] * 3
    finally:
        for gate in held:
            gate.open()
        stop(server)


def test_a_cron_fires_once_per_time_whichever_worker_takes_it(
    pair: tuple[Server, Server, pathlib.Path],
) -> None:
    one, two, log = pair
    a, b = get_sync_client(url=one.url), get_sync_client(url=two.url)
    threads = [a.threads.create()["thread_id"] for _ in range(4)]
    started = time.monotonic()
    crons = [
        (a if i % 2 else b).crons.create_for_thread(
            tid,
            "agent",
            schedule="* * * * * */1",
            input={"messages": [{"role": "user", "content": f"log:c{i}"}]},
        )
        for i, tid in enumerate(threads)
    ]
    patched = [0]
    stopping = threading.Event()

    def patching(client: Any) -> None:  # updates meanwhile never put back a time that already ran
        while not stopping.is_set():
            patched[0] += 1
            client.crons.update(crons[patched[0] % len(crons)]["cron_id"], metadata={"n": patched[0]})

    patchers = [
        threading.Thread(target=patching, args=(get_sync_client(url=s.url),)) for s in (one, two, one)
    ]
    for patcher in patchers:
        patcher.start()
    try:  # patched while each cron fires at least three times
        _until(lambda: all(len(a.runs.list(t, limit=100)) >= 3 for t in threads), "three runs of each cron")
    finally:
        stopping.set()
        for patcher in patchers:
            patcher.join()
    for cron in crons:
        b.crons.update(cron["cron_id"], enabled=False)
    window = time.monotonic() - started  # every firing was taken within it
    _scheduler_went_round(a, b)
    _until(
        lambda: all(r["status"] == "success" for tid in threads for r in a.runs.list(tid, limit=100)),
        "the runs' ends",
    )
    counts = Counter(log.read_text().splitlines())
    for i, tid in enumerate(threads):
        runs = a.runs.list(tid, limit=100)
        assert len(runs) <= int(window) + 1  # one run per second at most: never fired by both workers
        assert counts[f"log:c{i}"] == len(runs)  # and each run executed once


def _scheduler_went_round(*clients: Any) -> None:
    """Wait until a cron made now through each worker fired twice: the workers took due crons
    again after every change made before (a cron disabled before fires no more, unless a worker
    stayed inside one firing all that time)."""
    witnesses = []
    for client in clients:
        tid = client.threads.create()["thread_id"]
        cron = client.crons.create_for_thread(
            tid, "agent", schedule="* * * * * */1", input={"messages": [{"role": "user", "content": "w"}]}
        )
        witnesses.append((client, tid, cron["cron_id"]))
    for client, tid, _ in witnesses:
        _until(lambda c=client, t=tid: len(c.runs.list(t, limit=100)) >= 2, "two runs of a cron every second")
    for client, _, cron_id in witnesses:
        client.crons.delete(cron_id)
