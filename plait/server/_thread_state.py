"""A thread's state: read it (at any checkpoint), write it (``update_state``), list its history."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from plait.errors import CheckpointConflictError
from plait.server._http import body, json_response, opt, query_bool, query_int
from plait.server._snapshot import checkpoint_ref, state_json
from plait.server._state import state_of
from plait.server._threads import found_thread, refresh_thread, thread_config, thread_graph_id, update_refused
from plait.server._wire import ApiError, as_dict

__all__ = ["routes"]


def _config(thread_id: str, checkpoint: Any = None) -> Any:
    config = thread_config(thread_id)
    configurable: dict[str, Any] = config["configurable"]
    if isinstance(checkpoint, str):
        configurable["checkpoint_id"] = checkpoint
    elif isinstance(checkpoint, dict):
        given = as_dict(checkpoint)
        if given.get("checkpoint_id"):
            configurable["checkpoint_id"] = str(given["checkpoint_id"])
        namespace = given.get("checkpoint_ns")
        if namespace:  # a subgraph's own state (``node:<task id>``, as its task's ``checkpoint`` names it)
            if not isinstance(namespace, str):
                raise ApiError(422, f"checkpoint_ns must be a string, got {namespace!r}")
            configurable["checkpoint_ns"] = namespace
    elif checkpoint is not None:
        raise ApiError(422, f"checkpoint must be an object or a checkpoint id, got {checkpoint!r}")
    return config


async def _snapshot_json(request: Request, checkpoint: Any, subgraphs: bool) -> Response:
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
            raise ApiError(404, f"Checkpoint {checkpoint!r} not found in thread {doc['thread_id']}")
        return json_response(_empty())
    return json_response(state_json(snap))


def _empty() -> dict[str, Any]:
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


async def get_state(request: Request) -> Response:
    """``GET /threads/{thread_id}/state`` (and ``/state/{checkpoint_id}``), ``?subgraphs=true``."""
    return await _snapshot_json(
        request, request.path_params.get("checkpoint_id"), query_bool(request, "subgraphs")
    )


async def get_state_at(request: Request) -> Response:
    """``POST /threads/{thread_id}/state/checkpoint``: the state at ``checkpoint``."""
    data = await body(request, required=True)
    subgraphs = data.get("subgraphs") or False
    if not isinstance(subgraphs, bool):
        raise ApiError(422, f"subgraphs must be true or false, got {subgraphs!r}")
    return await _snapshot_json(request, as_dict(opt(data, "checkpoint", dict)), subgraphs)


async def update_state(request: Request) -> Response:
    """``POST /threads/{thread_id}/state``: write values as ``as_node`` would, from a checkpoint."""
    state = state_of(request)
    doc = await found_thread(request)
    data = await body(request)
    graph_id = thread_graph_id(state, doc)
    graph = state.graph(graph_id)
    config = _config(doc["thread_id"], data.get("checkpoint") or opt(data, "checkpoint_id", str))
    if "checkpoint_id" not in config["configurable"]:
        head = await graph.aget_state(config)
        if head.created_at is None:  # a thread without checkpoints: the update starts it
            config["configurable"]["checkpoint_id"] = None
    as_node = opt(data, "as_node", str)
    config["metadata"] = {
        "graph_id": graph_id,
        "thread_id": doc["thread_id"],
    }  # recorded, as LangGraph's server
    try:
        written = await graph.aupdate_state(config, data.get("values"), as_node)
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


def _before(raw: Any) -> dict[str, Any] | None:
    """A ``before`` cursor: a checkpoint id, ``{"checkpoint_id"}`` or a whole config."""
    if raw is None:
        return None
    if isinstance(raw, str):
        return {"configurable": {"checkpoint_id": raw}}
    given = as_dict(raw)
    if not isinstance(raw, dict):
        raise ApiError(422, f"before must be a checkpoint id or a checkpoint object, got {raw!r}")
    return given if "configurable" in given else {"configurable": given}


async def _history(request: Request, data: dict[str, Any]) -> Response:
    state = state_of(request)
    doc = await found_thread(request)
    if not as_dict(doc.get("metadata")).get("graph_id") and len(state.graphs) != 1:
        return json_response([])
    graph = state.graph(thread_graph_id(state, doc))
    before = _before(data.get("before"))
    limit = data.get("limit", 10)
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ApiError(422, f"limit must be a positive integer, got {limit!r}")
    config = _config(doc["thread_id"], data.get("checkpoint"))
    snaps = graph.aget_state_history(config, filter=opt(data, "metadata", dict), before=before, limit=limit)
    return json_response([state_json(s) async for s in snaps])


async def history_post(request: Request) -> Response:
    """``POST /threads/{thread_id}/history``."""
    return await _history(request, await body(request))


async def history_get(request: Request) -> Response:
    """``GET /threads/{thread_id}/history?limit=&before=``."""
    data: dict[str, Any] = {"limit": query_int(request, "limit", 10)}
    if request.query_params.get("before"):
        data["before"] = request.query_params["before"]
    return await _history(request, data)


routes = [
    Route("/threads/{thread_id}/state", get_state, methods=["GET"]),
    Route("/threads/{thread_id}/state", update_state, methods=["POST"]),
    Route("/threads/{thread_id}/state/checkpoint", get_state_at, methods=["POST"]),
    Route("/threads/{thread_id}/state/{checkpoint_id}", get_state, methods=["GET"]),
    Route("/threads/{thread_id}/history", history_post, methods=["POST"]),
    Route("/threads/{thread_id}/history", history_get, methods=["GET"]),
]
