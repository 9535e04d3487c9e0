"""``list(config)`` across the namespaces of a thread: a config without ``checkpoint_ns`` lists
them all (LangGraph's savers do), ``checkpoint_ns=""`` the root graph only."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from plait.checkpoint.base import empty_checkpoint
from plait.checkpoint.sqlite.aio import AsyncSqliteSaver


def _put(saver: Any, thread: str, ns: str, step: int, parent: dict[str, Any] | None = None) -> dict[str, Any]:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"n": step}
    checkpoint["channel_versions"] = {"n": step + 2}
    config = parent or {"configurable": {"thread_id": thread, "checkpoint_ns": ns}}
    return saver.put(config, checkpoint, {"source": "loop", "step": step, "parents": {}}, {"n": step + 2})


def _thread(saver: Any) -> dict[str, list[str]]:
    """Two root checkpoints, two in subgraph ``sub:1``, one in ``sub:1|deep``; another thread."""
    ids: dict[str, list[str]] = {"": [], "sub:1": [], "sub:1|deep": []}
    for ns, steps in (("", (0, 1)), ("sub:1", (0, 1)), ("sub:1|deep", (0,))):
        parent = None
        for step in steps:
            parent = _put(saver, "t", ns, step, parent)
            ids[ns].append(parent["configurable"]["checkpoint_id"])
    _put(saver, "other", "", 0)
    return ids


def _listed(items: Any) -> list[tuple[str, str]]:
    return [
        (t.config["configurable"]["checkpoint_ns"], t.config["configurable"]["checkpoint_id"]) for t in items
    ]


def test_a_config_without_a_namespace_lists_every_namespace_of_the_thread(saver: Any) -> None:
    ids = _thread(saver)
    listed = _listed(saver.list({"configurable": {"thread_id": "t"}}))
    assert sorted(listed) == sorted((ns, cid) for ns, cids in ids.items() for cid in cids)
    assert [cid for _, cid in listed] == sorted((cid for _, cid in listed), reverse=True)  # newest first
    assert _listed(saver.list({"configurable": {"thread_id": "t", "checkpoint_ns": None}})) == listed


def test_an_empty_or_named_namespace_lists_only_that_namespace(saver: Any) -> None:
    ids = _thread(saver)
    root = _listed(saver.list({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}))
    assert root == [("", cid) for cid in reversed(ids[""])]
    sub = _listed(saver.list({"configurable": {"thread_id": "t", "checkpoint_ns": "sub:1"}}))
    assert sub == [("sub:1", cid) for cid in reversed(ids["sub:1"])]


def test_limit_before_and_filter_apply_across_namespaces(saver: Any) -> None:
    ids = _thread(saver)
    config = {"configurable": {"thread_id": "t"}}
    everything = _listed(saver.list(config))
    assert _listed(saver.list(config, limit=3)) == everything[:3]
    bound = {"configurable": {"checkpoint_id": ids["sub:1"][0]}}
    assert _listed(saver.list(config, before=bound)) == [e for e in everything if e[1] < ids["sub:1"][0]]
    assert sorted(t.metadata["step"] for t in saver.list(config, filter={"step": 1})) == [1, 1]


def test_async_list_without_a_namespace_lists_every_namespace(tmp_path: Path) -> None:
    async def run() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "a.db")) as saver:
            await asyncio.to_thread(_thread, saver)
            every = [t async for t in saver.alist({"configurable": {"thread_id": "t"}})]
            root = [t async for t in saver.alist({"configurable": {"thread_id": "t", "checkpoint_ns": ""}})]
            return _listed(every), _listed(root)

    every, root = asyncio.run(run())
    assert len(every) == 5 and {ns for ns, _ in every} == {"", "sub:1", "sub:1|deep"}
    assert {ns for ns, _ in root} == {""} and len(root) == 2
