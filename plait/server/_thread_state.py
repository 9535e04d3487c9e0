"""A thread's state: read it (at any checkpoint), write it (``update_state``), list its history."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from plait.errors import CheckpointConflictError
from plait.server._api import Api
from plait.server._http import json_response
from plait.server._snapshot import checkpoint_ref, state_json
from plait.server._state import state_of
from plait.server._thread_models import (
    Checkpoint,
    ThreadHistoryQuery,
    ThreadState,
    ThreadStateCheckpointRequest,
    ThreadStateQuery,
    ThreadStateSearch,
    ThreadStateUpdate,
    ThreadStateUpdateResponse,
)
from plait.server._threads import found_thread, refresh_thread, thread_config, thread_graph_id, update_refused
from plait.server._wire import ApiError, as_dict

__all__ = ["api", "routes"]

api = Api("Threads")


def _config(thread_id: str, checkpoint: str | Checkpoint | None = None) -> Any:
    config = thread_config(thread_id)
    configurable = config["configurable"]
    if isinstance(checkpoint, str):
        configurable["checkpoint_id"] = checkpoint
    elif checkpoint is not None:
        if checkpoint.checkpoint_id:
            configurable["checkpoint_id"] = checkpoint.checkpoint_id
        if (
            checkpoint.checkpoint_ns
        ):  # a subgraph's own state (``node:<task id>``, as its task's ``checkpoint`` names it)
            configurable["checkpoint_ns"] = checkpoint.checkpoint_ns
    return config


def _given(checkpoint: Checkpoint | None) -> Checkpoint | None:
    """``checkpoint`` when it names something (``{}`` is the newest state, as none)."""
    return checkpoint if checkpoint is not None and checkpoint.model_dump(exclude_none=True) else None


async def _snapshot_json(request: Request, checkpoint: str | Checkpoint | None, subgraphs: bool) -> Response:
    """The state at ``checkpoint`` (the newest when ``None``), with each paused subgraph's state
    inside its task when ``subgraphs``."""
    state = state_of(request)
    doc = await found_thread(request)
    config = _config(doc["thread_id"], checkpoint)
    if not as_dict(doc.get("metadata")).get("graph_id") and len(state.graphs) != 1:
        return json_response(_empty())
    graph = state.graph(thread_graph_id(state, doc))
    snap = await graph.aget_state(config, subgraphs=subgraphs)
    if snap.created_at is None:
        if checkpoint:
            asked = checkpoint if isinstance(checkpoint, str) else checkpoint.model_dump(exclude_none=True)
            raise ApiError(404, f"Checkpoint {asked!r} not found in thread {doc['thread_id']}")
        return json_response(_empty())
    return json_response(state_json(snap))


def _empty() -> dict[str, object]:
    return {
        "values": {},
        "next": [],
        "tasks": [],
        "metadata": None,
        "created_at": None,
        "checkpoint": None,
        "parent_checkpoint": None,
        "interrupts": [],
        "checkpoint_id": None,
        "parent_checkpoint_id": None,
    }


@api.get("/threads/{thread_id}/state", "Get Thread State", query=ThreadStateQuery, response=ThreadState)
@api.get(
    "/threads/{thread_id}/state/{checkpoint_id}",
    "Get Thread State At Checkpoint",
    query=ThreadStateQuery,
    response=ThreadState,
)
async def get_state(request: Request, query: ThreadStateQuery) -> Response:
    """The thread's newest state (or at the checkpoint of the path); ``?subgraphs=true``: with each
    paused subgraph's state inside its task."""
    return await _snapshot_json(request, request.path_params.get("checkpoint_id"), query.subgraphs)


@api.post(
    "/threads/{thread_id}/state/checkpoint",
    "Get Thread State At Checkpoint (POST)",
    body=ThreadStateCheckpointRequest,
    body_required=True,
    response=ThreadState,
)
async def get_state_at(request: Request, body: ThreadStateCheckpointRequest) -> Response:
    """The state at ``checkpoint`` (a subgraph's, with ``checkpoint_ns``)."""
    return await _snapshot_json(request, _given(body.checkpoint), bool(body.subgraphs))


@api.post(
    "/threads/{thread_id}/state",
    "Update Thread State",
    body=ThreadStateUpdate,
    response=ThreadStateUpdateResponse,
)
async def update_state(request: Request, body: ThreadStateUpdate) -> Response:
    """Write values as node ``as_node`` would, from a checkpoint (the newest by default)."""
    state = state_of(request)
    doc = await found_thread(request, "update")
    graph_id = thread_graph_id(state, doc)
    graph = state.graph(graph_id)
    config = _config(doc["thread_id"], _given(body.checkpoint) or body.checkpoint_id)
    if "checkpoint_id" not in config["configurable"]:
        head = await graph.aget_state(config)
        if head.created_at is None:  # a thread without checkpoints: the update starts it
            config["configurable"]["checkpoint_id"] = None
    as_node = body.as_node
    config["metadata"] = {
        "graph_id": graph_id,
        "thread_id": doc["thread_id"],
    }  # recorded, as LangGraph's server
    try:
        written = await graph.aupdate_state(config, body.values, as_node)
    except CheckpointConflictError as exc:
        raise ApiError(409, str(exc)) from None
    except Exception as exc:
        refused = update_refused(exc)
        if refused is None:
            raise
        raise refused from None
    doc["metadata"] = {**doc["metadata"], "graph_id": graph_id}
    await refresh_thread(state, doc, graph)
    ref = checkpoint_ref(written)
    return json_response(
        {"checkpoint": ref, "configurable": ref, "checkpoint_id": ref and ref["checkpoint_id"]}
    )


def _before(raw: str | dict[str, object] | None) -> dict[str, object] | None:
    """A ``before`` cursor: a checkpoint id, ``{"checkpoint_id"}`` or a whole config."""
    if raw is None or raw == "":
        return None
    if isinstance(raw, str):
        return {"configurable": {"checkpoint_id": raw}}
    return raw if "configurable" in raw else {"configurable": raw}


async def _history(request: Request, search: ThreadStateSearch) -> Response:
    state = state_of(request)
    doc = await found_thread(request)
    if not as_dict(doc.get("metadata")).get("graph_id") and len(state.graphs) != 1:
        return json_response([])
    graph = state.graph(thread_graph_id(state, doc))
    config = _config(doc["thread_id"], search.checkpoint)
    snaps = graph.aget_state_history(
        config, filter=search.metadata, before=_before(search.before), limit=search.limit or 10
    )
    return json_response([state_json(s) async for s in snaps])


@api.post(
    "/threads/{thread_id}/history",
    "Get Thread History (POST)",
    body=ThreadStateSearch,
    response=list[ThreadState],
)
async def history_post(request: Request, body: ThreadStateSearch) -> Response:
    """The thread's states, newest first (filtered by metadata, ``before`` a checkpoint, a subgraph's)."""
    return await _history(request, body)


@api.get(
    "/threads/{thread_id}/history", "Get Thread History", query=ThreadHistoryQuery, response=list[ThreadState]
)
async def history_get(request: Request, query: ThreadHistoryQuery) -> Response:
    """The thread's states, newest first."""
    return await _history(request, ThreadStateSearch(limit=query.limit, before=query.before))


routes = api.routes()
