"""``prune`` in a loop beside writers in other processes: every acknowledged turn stays readable cold."""

from __future__ import annotations

import time
from pathlib import Path

from _procs import child_module, finish, open_saver, spawn
from langchain_core.messages import AIMessage, HumanMessage

from plait.checkpoint.base import BaseCheckpointSaver


def _read_cold(target: str, thread: str) -> tuple[list[str], int]:
    """Message ids at the head and how many checkpoints remain, from a fresh saver (empty cache)."""
    with open_saver(target) as saver:
        graph = child_module().chat_graph(saver)
        config = {"configurable": {"thread_id": thread}}
        history = list(graph.get_state_history(config))  # every remaining checkpoint decodes
        for snap in history:
            for human, ai in zip(snap.values["messages"][::2], snap.values["messages"][1::2], strict=False):
                assert isinstance(human, HumanMessage) and isinstance(ai, AIMessage)
        head = graph.get_state(config).values["messages"]
        return [m.id for m in head], len(history)


def test_prune_loop_beside_two_writer_processes_loses_nothing(target: str, tmp_path: Path) -> None:
    go, stop, ready = tmp_path / "go", tmp_path / "stop", tmp_path / "pruning"
    writers = [spawn(target, "turns", "busy", "40", tag, str(go)) for tag in ("w0", "w1")]
    pruner = spawn(target, "prune", "busy", str(stop), str(ready))
    deadline = time.monotonic() + 120  # (only a guard against a hang)
    while not ready.exists():  # the writers start once the pruner prunes
        assert pruner.poll() is None and time.monotonic() < deadline, "the pruner did not start"
        time.sleep(0.02)
    go.touch()
    results = [finish(p) for p in writers]
    stop.touch()
    code, out, err = finish(pruner)
    assert code == 0, err[-3000:]
    assert all(c == 0 for c, _, _ in results), [e[-3000:] for _, _, e in results]
    assert int(out.split()[1]) > 0, out  # the pruner really deleted checkpoints
    acknowledged = [
        line.split()[1] for _, o, _ in results for line in o.splitlines() if line.startswith("TURN")
    ]
    assert len(acknowledged) == 80
    ids, remaining = _read_cold(target, "busy")
    assert sorted(i for i in ids if not i.startswith("ai-")) == sorted(acknowledged)
    assert [i for i in ids if i.startswith("ai-")] == [f"ai-{i}" for i in ids if not i.startswith("ai-")]
    assert remaining <= 3 + 2 * 3  # the pruner's last prune began after the writers finished


def test_prune_then_more_turns_in_the_same_process(target: str) -> None:
    with open_saver(target) as saver:
        assert isinstance(saver, BaseCheckpointSaver)
        graph = child_module().chat_graph(saver)
        config = {"configurable": {"thread_id": "again"}}
        for k in range(5):
            graph.invoke({"messages": [HumanMessage(f"m{k}", id=f"m{k}")]}, config)
        assert saver.prune("again", keep_last=1) > 0
        assert saver.prune("again", keep_last=1) == 0
        graph.invoke({"messages": [HumanMessage("m5", id="m5")]}, config)
    ids, _ = _read_cold(target, "again")
    assert ids == [x for k in range(6) for x in (f"m{k}", f"ai-m{k}")]
