"""Subgraph state stored under the namespaces earlier plait versions gave it.

A thread that paused inside a subgraph keeps that subgraph's checkpoints under its namespace.
plait now names a call's namespace ``node:<task id>`` (later calls ``node:<task id>|<call>``), as
LangGraph does, with a UUID task id. Earlier versions used the task id
``<checkpoint id>:<node>:<index>``, first with the call number as a third part
(``node:<task id>:<call>``). When a paused task resumes and its subgraph has nothing under the
new name but has state under an old one, the old one is used, so the thread goes on where it
stopped.
"""

from __future__ import annotations

from typing import Any

from plait.checkpoint._task_ids import legacy_segments, legacy_task_key
from plait.pregel._context import TaskContext
from plait.pregel._thread import config_with

__all__ = ["aresumed_config", "resumed_config"]


def _legacy(sub: Any, ctx: TaskContext) -> list[dict[str, object]]:
    """Configs of the namespaces earlier versions gave this call, newest form first."""
    task, loop = ctx.task, ctx.loop
    if not ctx.paused or sub.checkpointer is None or sub.subgraph_saving != "inherit":
        return []
    if task is None or loop is None or getattr(task, "source", None) is not None:
        return []
    old = legacy_task_key(loop.checkpoint_id, task.name, task.index)
    segments = legacy_segments(ctx.node, old, ctx.subgraph_calls - 1)  # (counted before this call ran)
    return [
        config_with(
            ctx.config,
            checkpoint_ns=f"{ctx.checkpoint_ns}|{segment}" if ctx.checkpoint_ns else segment,
            checkpoint_id=None,
        )
        for segment in segments
    ]


# >>> async source
async def aresumed_config(sub: Any, config: dict[str, object], ctx: TaskContext) -> dict[str, object]:
    """``config``, or an old namespace's when only that one holds the paused subgraph's state."""
    legacy = _legacy(sub, ctx)
    if not legacy or await sub.checkpointer.aget_tuple(config) is not None:
        return config
    for old in legacy:
        if await sub.checkpointer.aget_tuple(old) is not None:
            return old
    return config


# <<< async source


# >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
def resumed_config(sub: Any, config: dict[str, object], ctx: TaskContext) -> dict[str, object]:
    """``config``, or an old namespace's when only that one holds the paused subgraph's state."""
    legacy = _legacy(sub, ctx)
    if not legacy or sub.checkpointer.get_tuple(config) is not None:
        return config
    for old in legacy:
        if sub.checkpointer.get_tuple(old) is not None:
            return old
    return config


# <<< generated sync
