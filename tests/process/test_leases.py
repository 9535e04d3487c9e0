"""Real processes sharing one SQLite file or PostgreSQL schema: the per-thread lease holds.

No mocks: every scenario starts ``_child.py`` with ``subprocess`` and checks the
database afterwards from the parent.
"""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from _procs import child_module, finish, open_saver, spawn
from langchain_core.messages import AIMessage, HumanMessage

from plait.errors import ThreadBusyError


def _messages(target: str, thread: str) -> list[Any]:
    with open_saver(target) as saver:
        state = child_module().chat_graph(saver).get_state({"configurable": {"thread_id": thread}})
        return list(state.values.get("messages", []))


def test_two_processes_on_one_thread_keep_every_message(target: str, tmp_path: Path) -> None:
    go = tmp_path / "go"
    procs = [spawn(target, "turns", "shared", "50", tag, str(go)) for tag in ("p0", "p1")]
    time.sleep(1.0)  # both children import and open the saver
    go.touch()
    results = [finish(p) for p in procs]
    assert all(code == 0 for code, _, _ in results), [err[-2000:] for _, _, err in results]
    messages = _messages(target, "shared")
    assert len(messages) == 200
    for human, ai in zip(messages[::2], messages[1::2], strict=True):  # runs never interleaved
        assert isinstance(human, HumanMessage) and isinstance(ai, AIMessage)
        assert ai.content == f"echo: {human.content}"
    for tag in ("p0", "p1"):
        ids = [m.id for m in messages[::2] if m.id.startswith(f"{tag}-")]
        assert ids == [f"{tag}-{k}" for k in range(50)]


def test_reject_from_another_process_raises_thread_busy(target: str, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    holder = spawn(target, "hold", "busy", "120", str(gate))  # holds the thread until the gate opens
    assert holder.stdout is not None
    line = holder.stdout.readline()
    assert line.strip() == "STARTED", finish(holder)[2][-2000:]
    with open_saver(target) as saver:
        graph = child_module().chat_graph(saver)
        config = {"configurable": {"thread_id": "busy"}}
        with pytest.raises(ThreadBusyError) as caught:
            graph.invoke({"messages": [HumanMessage("me too", id="x")]}, config, multitask_strategy="reject")
        assert caught.value.thread_id == "busy"
        gate.touch()
        code, _, err = finish(holder)
        assert code == 0, err[-2000:]
        out = graph.invoke({"messages": [HumanMessage("now", id="y")]}, config, multitask_strategy="reject")
        assert [m.content for m in out["messages"]][-2:] == ["now", "echo: now"]


def test_sigkilled_holder_loses_nothing_it_reported(target: str) -> None:
    rng = random.Random(7)
    reported: list[str] = []
    for round_no in range(4):
        child = spawn(target, "turns", "killed", "0", f"r{round_no}", ttl=1.0)
        assert child.stdout is not None
        deadline = time.monotonic() + 60
        wanted = rng.randint(1, 6)
        seen = 0
        while seen < wanted and time.monotonic() < deadline:  # kill after a random number of turns ...
            line = child.stdout.readline()
            if not line:
                break
            if line.startswith("TURN "):
                reported.append(line.split()[1])
                seen += 1
        time.sleep(rng.uniform(0, 0.05))  # ... at a random moment inside the next one
        child.send_signal(signal.SIGKILL)
        rest, err = child.communicate(timeout=30)
        reported += [ln.split()[1] for ln in rest.splitlines() if ln.startswith("TURN ")]
        assert seen == wanted, err[-2000:]
    # the last holder was killed holding the lease: a new run waits for it to expire (1 s) and proceeds
    started = time.monotonic()
    with open_saver(target, ttl=1.0) as saver:
        graph = child_module().chat_graph(saver)
        config = {"configurable": {"thread_id": "killed"}}
        out = graph.invoke({"messages": [HumanMessage("after", id="after")]}, config)
    assert time.monotonic() - started < 60  # the expired lease was taken over (not a hang)
    ids = [m.id for m in out["messages"]]
    assert set(reported) <= set(ids)
    assert len(ids) == len(set(ids))
    assert ids[-2:] == ["after", "ai-after"]


def test_failed_parallel_step_keeps_finished_node_writes(target: str, tmp_path: Path) -> None:
    code, out, err = finish(spawn(target, "fanout", "fan", str(tmp_path), "start"))
    assert code == 3 and "FAILED b failed on purpose" in out, err[-2000:]
    with open_saver(target) as saver:
        found = saver.get_tuple({"configurable": {"thread_id": "fan"}})
        assert found is not None
        assert ("log", ["a"]) in [(ch, v) for _, ch, v in found.pending_writes]
    (tmp_path / "ok").touch()
    code, out, err = finish(spawn(target, "fanout", "fan", str(tmp_path), "resume"))
    assert code == 0 and "RESULT a,b" in out, err[-2000:]
    assert (tmp_path / "a.calls").read_text().splitlines() == ["a"]
    assert (tmp_path / "b.calls").read_text().splitlines() == ["b", "b"]


async def _async_saver_turn(target: str, strategy: str) -> list[str]:
    kind, _, where = target.partition(":")
    if kind == "sqlite":
        from plait.checkpoint.sqlite.aio import AsyncSqliteSaver as Saver
    else:
        from plait.checkpoint.postgres.aio import AsyncPostgresSaver as Saver  # type: ignore[assignment]
    async with Saver.from_conn_string(where) as saver:
        graph = child_module().chat_graph(saver)
        config = {"configurable": {"thread_id": "async-busy"}}
        out = await graph.ainvoke(
            {"messages": [HumanMessage(strategy, id=strategy)]}, config, multitask_strategy=strategy
        )
        return [m.id for m in out["messages"]]


async def test_async_saver_and_timeouts_respect_another_process(target: str, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    holder = spawn(target, "hold", "async-busy", "120", str(gate))  # holds the thread until the gate opens
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "STARTED", finish(holder)[2][-2000:]
    with pytest.raises(ThreadBusyError):
        await _async_saver_turn(target, "reject")
    with open_saver(target) as saver:
        started = time.monotonic()
        with pytest.raises(ThreadBusyError), saver.lease("async-busy", timeout=0.3):
            pass
        assert 0.25 < time.monotonic() - started < 60  # bounded by the timeout, not the holder's end
    gate.touch()
    ids = await _async_saver_turn(target, "enqueue")  # waits for the holder, then runs
    assert ids == ["hold", "ai-hold", "enqueue", "ai-enqueue"]
    assert finish(holder)[0] == 0


def test_a_run_killed_during_a_long_step_kept_the_steps_before_it(target: str) -> None:
    """With the default durability, the input's steps held back when ``echo`` started are sent
    while it runs (PostgreSQL: within milliseconds), so a SIGKILL then loses none of them."""
    child = spawn(target, "hold", "held-kill", "30")
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line.startswith("STARTED"), child.stderr.read() if child.stderr else line
    config = {"configurable": {"thread_id": "held-kill"}}
    with open_saver(target) as saver:  # the held steps go out while echo runs (a minute at most)
        deadline = time.monotonic() + 60
        while len(list(saver.list(config))) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)
    with open_saver(target) as saver:
        config = {"configurable": {"thread_id": "held-kill"}}
        steps = [t.metadata["step"] for t in saver.list(config)]
        state = child_module().chat_graph(saver).get_state(config)
    assert steps == [0, -1]  # the input and the step that took it in; echo never ended
    assert [m.id for m in state.values["messages"]] == ["hold"] and state.next == ("echo",)
