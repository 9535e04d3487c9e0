"""What a ``ToolNode`` called inside a running node can learn about that node's graph run."""

from __future__ import annotations

from typing import Any, cast

from plait._context import running_task
from plait.pregel._step import read_state
from plait.runtime import ExecutionInfo

__all__ = ["execution_info", "graph_state"]


def graph_state() -> Any:
    """The state of the graph run the current node belongs to, as that node receives it
    (the state schema's type), read at the start of the step; ``None`` outside a run."""
    task: Any = running_task()
    loop = getattr(task, "loop", None)
    if loop is None:
        return None
    node = loop.settings.plan.nodes.get(task.node)
    if node is None:
        return dict(loop.run.values)
    values = read_state(loop.run.values, node.reads, node.defaults)
    return values if node.make_input is None else node.make_input(values)


def execution_info() -> ExecutionInfo | None:
    """Where the current node runs (checkpoint, namespace, task, thread); ``None`` outside a run."""
    task: Any = running_task()
    if task is None:
        return None
    loop = getattr(task, "loop", None)
    configurable = cast("dict[str, Any]", task.config.get("configurable") or {})
    return ExecutionInfo(
        checkpoint_id=str(getattr(loop, "checkpoint_id", None) or ""),
        checkpoint_ns=task.checkpoint_ns,
        task_id=task.task_id,
        thread_id=configurable.get("thread_id"),
        run_id=str(task.config["run_id"]) if task.config.get("run_id") else None,
    )
