"""Request and response models of assistants (``/assistants...``): field names and defaults as
langgraph-sdk sends and reads them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, WithJsonSchema

from plait.server._api import Body, Query, check
from plait.server._thread_models import Limit, Offset
from plait.server._wire import ApiError, check_uuid

__all__ = [
    "Assistant",
    "AssistantCountRequest",
    "AssistantCreate",
    "AssistantGraphQuery",
    "AssistantPatch",
    "AssistantSearchRequest",
    "AssistantSubgraphsQuery",
    "AssistantVersionChange",
    "AssistantVersionsSearchRequest",
    "xray_depth",
]


def xray_depth(raw: str | None) -> bool | int:
    """The ``xray`` query parameter: true/false or a depth >= 1."""
    if not raw or raw in ("false", "False"):
        return False
    if raw in ("true", "True"):
        return True
    try:
        depth = int(raw)
    except ValueError:
        depth = 0
    if depth <= 0:
        raise ApiError(422, f"Invalid xray value: expected true, false or a depth >= 1, got {raw!r}")
    return depth


class AssistantCreate(Body):
    """A new assistant: a graph with its own config, context, metadata and name."""

    graph_id: str = Field(description="A graph the server's config names.")
    assistant_id: Annotated[str, check(lambda v: check_uuid(v, "assistant ID")), WithJsonSchema(
        {"type": "string", "format": "uuid"}
    )] | None = Field(None, description="Its id (a new UUID if not given).")  # fmt: skip
    config: dict[str, object] | None = None
    context: dict[str, object] | None = None
    metadata: dict[str, object] | None = None
    if_exists: Literal["raise", "do_nothing"] | None = Field("raise", description="When it exists already.")
    name: str | None = Field(None, description="``Untitled`` if not given.")
    description: str | None = None


class AssistantPatch(Body):
    """What a new version of the assistant replaces (metadata: merged in)."""

    graph_id: str | None = None
    config: dict[str, object] | None = None
    context: dict[str, object] | None = None
    metadata: dict[str, object] | None = None
    name: str | None = None
    description: str | None = None


class AssistantCountRequest(Body):
    """Assistants of a graph, whose name holds ``name`` and whose metadata holds these values."""

    metadata: dict[str, object] | None = None
    graph_id: str | None = None
    name: str | None = Field(None, description="Part of the name (any case).")


class AssistantSearchRequest(AssistantCountRequest):
    """A page of the assistants selected (see :class:`AssistantCountRequest`), sorted."""

    limit: Limit = 10
    offset: Offset = 0
    sort_by: Literal["assistant_id", "graph_id", "name", "created_at", "updated_at"] | None = "created_at"
    sort_order: Literal["asc", "desc"] | None = "desc"
    select: list[str] | None = Field(None, description="Only these fields of each assistant.")


class AssistantVersionsSearchRequest(Body):
    """A page of the assistant's versions, newest first."""

    metadata: dict[str, object] | None = None
    limit: Limit = 10
    offset: Offset = 0


class AssistantVersionChange(Body):
    """The stored version to make the current one."""

    version: int


class AssistantGraphQuery(Query):
    """How deep to draw subgraphs."""

    xray: Annotated[str, check(lambda v: (xray_depth(v), v)[1])] | None = Field(
        None, description="``true``, ``false`` or a depth >= 1."
    )


class AssistantSubgraphsQuery(Query):
    """``recurse``: the subgraphs' subgraphs too."""

    recurse: bool = False


class Assistant(BaseModel):
    """An assistant: a graph with its config, context, metadata, name and version."""

    assistant_id: str
    graph_id: str
    config: dict[str, object]
    context: dict[str, object] | None = None
    metadata: dict[str, object]
    name: str
    description: str | None = None
    created_at: str
    updated_at: str | None = None
    version: int
