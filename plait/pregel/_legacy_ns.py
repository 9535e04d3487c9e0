"""Subgraph state stored under the namespaces earlier plait versions gave it (``node:<task id>:<call>``).

A thread that paused inside a subgraph keeps that subgraph's checkpoints under its namespace.
plait now names a call's namespace ``node:<task id>`` (later calls ``node:<task id>|<call>``), as
LangGraph does; when such a paused task resumes and its subgraph has nothing under the new name
but has state under the old one, the old one is used, so the thread goes on where it stopped.
"""

from __future__ import annotations

from typing import Any

from plait.pregel._context import TaskContext
from plait.pregel._thread import config_with

__all__ = ["aresumed_config", "resumed_config"]


def _legacy(sub: Any, ctx: TaskContext) -> dict[str, Any] | None:
    if not ctx.paused or sub.checkpointer is None or sub.subgraph_saving != "inherit":
        return None
    segment = f"{ctx.node}:{ctx.task_id}:{ctx.subgraph_calls - 1}"
    ns = f"{ctx.checkpoint_ns}|{segment}" if ctx.checkpoint_ns else segment
    return config_with(ctx.config, checkpoint_ns=ns, checkpoint_id=None)


def resumed_config(sub: Any, config: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    """``config``, or the old namespace's when only that one holds the paused subgraph's state."""
    legacy = _legacy(sub, ctx)
    if legacy is None or sub.checkpointer.get_tuple(config) is not None:
        return config
    return legacy if sub.checkpointer.get_tuple(legacy) is not None else config


async def aresumed_config(sub: Any, config: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    """Async :func:`resumed_config`."""
    legacy = _legacy(sub, ctx)
    if legacy is None or await sub.checkpointer.aget_tuple(config) is not None:
        return config
    return legacy if await sub.checkpointer.aget_tuple(legacy) is not None else config
