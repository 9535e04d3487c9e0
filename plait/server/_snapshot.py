"""Thread state on the wire: snapshots, checkpoints and interrupts as LangGraph's API shows them."""

from __future__ import annotations

from typing import Any

from plait.server._wire import as_dict, as_list, as_str
from plait.types import StateSnapshot

__all__ = ["checkpoint_ref", "interrupts_by_task", "output_interrupts", "state_json", "thread_status"]


def checkpoint_ref(config: Any) -> dict[str, object] | None:
    """``{"thread_id", "checkpoint_ns", "checkpoint_id"}`` of a checkpoint config (and a subgraph's
    ``checkpoint_map``, as LangGraph's API shows it), or ``None``."""
    if not config:
        return None
    conf = config.get("configurable", {})
    ref: dict[str, object] = {
        "thread_id": conf.get("thread_id"),
        "checkpoint_ns": conf.get("checkpoint_ns", ""),
        "checkpoint_id": conf.get("checkpoint_id"),
    }
    if conf.get("checkpoint_map"):
        ref["checkpoint_map"] = conf["checkpoint_map"]
    return ref


def _interrupt(item: Any) -> dict[str, object]:
    out: dict[str, object] = {"value": getattr(item, "value", None), "id": getattr(item, "id", None)}
    schema = getattr(item, "response_schema", None)
    if schema is not None:  # as LangGraph's server: only when the interrupt asks for one
        out["response_schema"] = schema
    return out


def output_interrupts(interrupts: Any) -> list[dict[str, object]]:
    """A thread's pending interrupts as a run's output lists them (``__interrupt__``: every field)."""
    groups: list[object] = list(as_dict(interrupts).values())
    return [{"response_schema": None, **as_dict(i)} for group in groups for i in as_list(group)]


def _task_state(task: Any) -> tuple[Any, Any]:
    """A task's ``checkpoint`` (a subgraph's config) and ``state`` (a subgraph's snapshot)."""
    state = getattr(task, "state", None)
    if isinstance(state, StateSnapshot):
        return None, state_json(state)
    configurable: Any = as_dict(state).get("configurable")
    return (as_dict(configurable) or None, None)


def state_json(snap: StateSnapshot) -> dict[str, object]:
    """A snapshot as ``GET /threads/{id}/state`` returns it."""
    checkpoint = checkpoint_ref(snap.config)
    parent = checkpoint_ref(snap.parent_config)
    if parent and checkpoint and "checkpoint_map" in checkpoint and "checkpoint_map" not in parent:
        # a subgraph's parent checkpoint: the same map, with its own id for its namespace
        parent["checkpoint_map"] = {
            **as_dict(checkpoint["checkpoint_map"]),
            as_str(parent["checkpoint_ns"]): parent["checkpoint_id"],
        }
    tasks = [
        {
            "id": t.id,
            "name": t.name,
            "path": list(getattr(t, "path", ()) or ()),
            "error": None if t.error is None else f"{type(t.error).__name__}: {t.error}",
            "interrupts": [_interrupt(i) for i in t.interrupts],
            "checkpoint": sub[0],
            "state": sub[1],
            "result": getattr(t, "result", None),
        }
        for t, sub in ((t, _task_state(t)) for t in snap.tasks)  # a subgraph's state is built once
    ]
    return {
        "values": snap.values if snap.values is not None else {},
        "next": list(snap.next),
        "tasks": tasks,
        "metadata": snap.metadata,
        "created_at": snap.created_at,
        "checkpoint": checkpoint,
        "parent_checkpoint": parent,
        "interrupts": [_interrupt(i) for t in snap.tasks for i in t.interrupts],
        "checkpoint_id": checkpoint["checkpoint_id"] if checkpoint else None,
        "parent_checkpoint_id": parent["checkpoint_id"] if parent else None,
    }


def interrupts_by_task(snap: StateSnapshot) -> dict[str, list[dict[str, object]]]:
    """The pending interrupts of a snapshot, keyed by task id (a thread's ``interrupts``)."""
    return {t.id: [_interrupt(i) for i in t.interrupts] for t in snap.tasks if t.interrupts}


def thread_status(snap: StateSnapshot) -> str:
    """``interrupted`` when the snapshot waits on an interrupt or a breakpoint, else ``idle``."""
    return "interrupted" if snap.next else "idle"
