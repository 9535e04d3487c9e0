"""What :class:`~plait.pregel.remote.RemoteGraph` sends to an agent server and makes of its
answers: configs, checkpoints, snapshots and drawn graphs in the shapes of ``langgraph_sdk``."""

from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType
from typing import Any, cast
from uuid import UUID

from langchain_core.runnables.graph import Edge, Graph, Node

from plait._internal._constants import (
    CONFIG_KEY_CHECKPOINT_ID,
    CONFIG_KEY_CHECKPOINT_MAP,
    CONFIG_KEY_CHECKPOINT_NS,
    CONFIG_KEY_TASK_ID,
)
from plait._internal._narrow import is_mapping, is_sequence, is_str_dict, is_str_mapping
from plait.types import Command, Interrupt, PregelTask, Send, StateSnapshot

__all__ = [
    "checkpoint_of",
    "command_body",
    "config_of",
    "configurable",
    "drawable",
    "interrupt_of",
    "load_sdk",
    "merge_configs",
    "sanitize_config",
    "snapshot_of",
    "tracing_headers",
]

SDK_MISSING = (
    "RemoteGraph talks to the server through the LangGraph SDK, which is not installed: "
    "pip install langgraph-sdk (or pip install 'plait[remote]')"
)

_DROPPED = frozenset(
    {
        CONFIG_KEY_CHECKPOINT_MAP,
        CONFIG_KEY_CHECKPOINT_ID,
        CONFIG_KEY_CHECKPOINT_NS,
        CONFIG_KEY_TASK_ID,
    }
)
"""``configurable`` keys that locate the caller's own checkpoint: never sent to the remote graph."""

_LOCATION = ("thread_id", "checkpoint_ns", "checkpoint_id", "checkpoint_map")


def load_sdk() -> ModuleType:
    """The ``langgraph_sdk`` module, imported on first use.

    Raises:
        ImportError: the SDK is not installed (the message says how to install it).
    """
    try:
        import langgraph_sdk
    except ImportError as exc:
        raise ImportError(SDK_MISSING, name="langgraph_sdk") from exc
    return langgraph_sdk


def merge_configs(*configs: Mapping[str, object] | None) -> dict[str, Any]:
    """Later configs over earlier ones; ``metadata`` and ``configurable`` merged key by key, tags joined."""
    out: dict[str, Any] = {}
    for config in configs:
        given: Mapping[str, Any] = config or {}  # read as a run config
        for key, value in given.items():
            if key in ("metadata", "configurable"):
                out[key] = {**out.get(key, {}), **(value or {})}
            elif key == "tags":
                out[key] = sorted({*out.get(key, ()), *(value or ())})
            else:
                out[key] = value
    return out


def _plain(value: object) -> object:
    """``value`` as JSON can carry it (strings, numbers, lists, string-keyed dicts), else ``None``."""
    if isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, UUID):
        return str(value)
    if is_mapping(value):
        return _plain_dict(value)
    if is_sequence(value):
        items = (_plain(item) for item in value)
        return [item for item in items if item is not None]
    return None


def _plain_dict(value: Mapping[object, object], dropped: frozenset[str] = frozenset()) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, item in value.items():
        if isinstance(key, str) and key not in dropped and not key.startswith("__pregel_"):
            plain = _plain(item)
            if plain is not None:
                out[key] = plain
    return out


def sanitize_config(config: Mapping[str, Any]) -> dict[str, object]:
    """What of a run config goes to the server: its recursion limit, string tags, and the
    JSON-safe parts of ``metadata`` and ``configurable`` (not the caller's checkpoint location)."""
    out: dict[str, object] = {}
    if "recursion_limit" in config:
        out["recursion_limit"] = config["recursion_limit"]
    if "tags" in config:
        out["tags"] = [tag for tag in config["tags"] or () if isinstance(tag, str)]
    if "metadata" in config:
        out["metadata"] = _plain_dict(config["metadata"] or {})
    if "configurable" in config:
        out["configurable"] = _plain_dict(config["configurable"] or {}, _DROPPED)
    return out


def configurable(config: Mapping[str, object] | None) -> dict[str, object]:
    """The ``configurable`` dict of a config (empty when it has none)."""
    found = None if config is None else config.get("configurable")
    return found if is_str_dict(found) else {}


def checkpoint_of(config: Mapping[str, object] | None) -> dict[str, object] | None:
    """The checkpoint a config addresses, as the API takes it (``None``: it names none)."""
    keys = configurable(config)
    found = {key: keys[key] for key in _LOCATION if key in keys}
    return found or None


def config_of(checkpoint: Mapping[str, object]) -> dict[str, object]:
    """The config that addresses a checkpoint the API returned."""
    return {
        "configurable": {
            "thread_id": checkpoint["thread_id"],
            "checkpoint_ns": checkpoint["checkpoint_ns"],
            "checkpoint_id": checkpoint["checkpoint_id"],
            "checkpoint_map": checkpoint.get("checkpoint_map") or {},
        }
    }


def interrupt_of(raw: object) -> Interrupt:
    """An interrupt the API returned (``{"value": ..., "id": ...}``)."""
    if isinstance(raw, Interrupt):
        return raw
    if is_str_mapping(raw):
        found: Mapping[str, Any] = raw  # JSON: its fields as the server sent them
        return Interrupt(
            value=found.get("value"), id=found.get("id") or "", response_schema=found.get("response_schema")
        )
    return Interrupt(value=raw)


def _task_of(task: Mapping[str, Any]) -> PregelTask:
    state: StateSnapshot | dict[str, object] | None = None
    if task.get("state"):
        state = snapshot_of(task["state"])
    elif task.get("checkpoint"):
        state = {"configurable": task["checkpoint"]}
    return PregelTask(
        id=task["id"],
        name=task["name"],
        path=(),
        error=Exception(task["error"]) if task.get("error") else None,
        interrupts=tuple(interrupt_of(i) for i in task.get("interrupts") or ()),
        state=state,
        result=task.get("result"),
    )


def snapshot_of(state: Mapping[str, Any]) -> StateSnapshot:
    """A thread state the API returned as a :class:`~plait.types.StateSnapshot`."""
    tasks = tuple(_task_of(task) for task in state.get("tasks") or ())
    parent = state.get("parent_checkpoint")
    return StateSnapshot(
        values=state["values"],
        next=tuple(state.get("next") or ()),
        config=config_of(state["checkpoint"]),
        metadata=dict(state.get("metadata") or {}),
        created_at=state.get("created_at"),
        parent_config=config_of(parent) if parent else None,
        tasks=tasks,
        interrupts=tuple(i for task in tasks for i in task.interrupts),
    )


def drawable(graph: Mapping[str, Any]) -> Graph:
    """The JSON of ``GET /assistants/{id}/graph`` as a drawable LangChain graph."""
    nodes: dict[str, Node] = {}
    for node in graph["nodes"]:
        node_id = str(node["id"])
        data: object = node.get("data", {})
        name: object = node.get("name")
        if name is None:
            name = data.get("name", node_id) if is_str_dict(data) else node_id
        nodes[node_id] = Node(
            id=node_id, name=str(name), data=cast("Any", data), metadata=node.get("metadata")
        )
    edges = [
        Edge(
            source=edge["source"],
            target=edge["target"],
            data=edge.get("data"),
            conditional=bool(edge.get("conditional", False)),
        )
        for edge in graph["edges"]
    ]
    return Graph(nodes=nodes, edges=edges)


def _goto(target: object) -> object:
    if isinstance(target, Send):
        return {"node": target.node, "input": target.arg}
    return target


def command_body(command: Command[Any]) -> dict[str, object]:
    """A :class:`~plait.types.Command` as a run request's ``command`` (its fields that are set)."""
    body: dict[str, object] = {}
    if command.update is not None:
        body["update"] = command.update
    if command.resume is not None:
        body["resume"] = command.resume
    goto: object = command.goto
    if is_sequence(goto):
        if goto:
            body["goto"] = [_goto(target) for target in goto]
    elif goto:
        body["goto"] = _goto(goto)
    return body


def tracing_headers(headers: Mapping[str, str] | None) -> dict[str, str] | None:
    """``headers`` with the current LangSmith run's distributed-tracing headers, if a run is traced."""
    from langsmith import get_current_run_tree

    tree = get_current_run_tree()
    if tree is None:
        return dict(headers) if headers is not None else None
    traced: dict[str, str] = dict(tree.to_headers())
    merged = dict(headers or {})
    if "baggage" in merged and "baggage" in traced:
        traced["baggage"] = f"{merged['baggage']},{traced['baggage']}"
    merged.update(traced)
    return merged
