"""Request and response models of threads and their state (``/threads...``): field names and
defaults as langgraph-sdk sends and reads them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from plait.server._api import Body, Query, check
from plait.server._extract import extract_paths
from plait.server._ttl import MAX_MINUTES, ThreadTtl
from plait.server._wire import check_uuid

__all__ = [
    "Checkpoint",
    "CommandBody",
    "Extract",
    "Interrupt",
    "Limit",
    "Offset",
    "SendBody",
    "Superstep",
    "SuperstepUpdate",
    "THREAD_FIELDS",
    "Thread",
    "ThreadCountRequest",
    "ThreadCreate",
    "ThreadGetQuery",
    "ThreadHistoryQuery",
    "ThreadId",
    "ThreadPatch",
    "ThreadPruneRequest",
    "ThreadPruneResponse",
    "ThreadSearchRequest",
    "ThreadState",
    "ThreadStateCheckpointRequest",
    "ThreadStateQuery",
    "ThreadStateSearch",
    "ThreadStateUpdate",
    "ThreadStateUpdateResponse",
    "TtlSpec",
    "ttl_of",
]

_UUID = WithJsonSchema({"type": "string", "format": "uuid"})
ThreadId = Annotated[str, check(lambda v: check_uuid(v, "thread ID")), _UUID]
"""A thread's id: a UUID."""
Limit = Annotated[int, Field(ge=1, le=1000, description="The most results to return.")]
Offset = Annotated[int, Field(ge=0, description="How many results to skip.")]
Status = Literal["idle", "busy", "interrupted", "error"]
Minutes = Annotated[float, Field(gt=0, le=MAX_MINUTES, description="Minutes (at most a hundred years).")]
THREAD_FIELDS = frozenset(
    ("thread_id", "created_at", "updated_at", "state_updated_at", "metadata", "status", "config", "values")
) | {"interrupts", "error", "extracted"}
"""A thread document's fields (an ``extract`` alias may not take one's name)."""
Extract = Annotated[
    dict[str, str],
    check(lambda v: extract_paths(v, set(THREAD_FIELDS)) and v),
    Field(description="Alias -> path (``values.messages[-1].content``): each found value, as ``extracted``."),
]


class TtlSpec(Body):
    """A thread's time to live: after ``ttl`` minutes it is deleted (``delete``) or pruned to its
    newest checkpoint (``keep_latest``)."""

    model_config = ConfigDict(strict=True, extra="forbid")
    strategy: Literal["delete", "keep_latest"] | None = "delete"
    ttl: Minutes


def ttl_of(raw: float | TtlSpec | None) -> ThreadTtl | None:
    """A request's ``ttl`` (minutes, or a :class:`TtlSpec`) as the server keeps it."""
    if raw is None:
        return None
    if isinstance(raw, TtlSpec):
        return ThreadTtl(raw.strategy or "delete", float(raw.ttl))
    return ThreadTtl("delete", float(raw))


class SendBody(Body):
    """A ``Send``: run ``node`` with ``input``."""

    node: str
    input: Any = None


class CommandBody(Body):
    """A ``Command``: resume an interrupt, update the state, go to nodes."""

    model_config = ConfigDict(strict=True, extra="forbid")
    update: dict[str, object] | list[object] | None = None
    resume: Any = None
    goto: str | SendBody | list[str | SendBody] | None = None


class SuperstepUpdate(Body):
    """One update of a superstep: ``values`` (or a ``command``) written as node ``as_node`` would."""

    values: dict[str, object] | None = None
    command: CommandBody | None = None
    as_node: str | None = None


class Superstep(Body):
    """The updates applied together, as one step."""

    updates: list[SuperstepUpdate]


class ThreadCreate(Body):
    """A new thread (``supersteps``: its state written as if its graph had run them)."""

    thread_id: ThreadId | None = Field(None, description="Its id (a new UUID if not given).")
    metadata: dict[str, object] | None = None
    if_exists: Literal["raise", "do_nothing"] | None = Field("raise", description="When it exists already.")
    supersteps: list[Superstep] | None = None
    ttl: Minutes | TtlSpec | None = Field(None, description="Minutes, or a strategy and minutes.")


class ThreadPatch(Body):
    """What a patch of a thread changes: metadata merged in, a new time to live."""

    metadata: dict[str, object] | None = None
    ttl: Minutes | TtlSpec | None = None


class ThreadCountRequest(Body):
    """Threads whose metadata and values hold these keys with these values, of this status."""

    metadata: dict[str, object] | None = None
    values: dict[str, object] | None = None
    status: Status | None = None


class ThreadSearchRequest(ThreadCountRequest):
    """A page of the threads selected (see :class:`ThreadCountRequest`), sorted."""

    ids: list[str] | None = Field(None, description="Only these threads.")
    limit: Limit = 10
    offset: Offset = 0
    sort_by: Literal["thread_id", "status", "created_at", "updated_at", "state_updated_at"] | None = (
        "created_at"
    )
    sort_order: Literal["asc", "desc"] | None = "desc"
    select: list[str] | None = Field(None, description="Only these fields of each thread.")
    extract: Extract | None = None


class ThreadPruneRequest(Body):
    """Threads to delete, or to prune to their newest checkpoint (unknown ids are skipped)."""

    thread_ids: list[ThreadId]
    strategy: Literal["delete", "keep_latest"] | None = "delete"


class ThreadPruneResponse(BaseModel):
    """How many threads were pruned."""

    pruned_count: int


class ThreadGetQuery(Query):
    """``include=ttl``: with the thread's time to live."""

    include: list[str] = Field(
        default_factory=lambda: list[str](), description="``ttl`` (comma-separated too)."
    )


class Interrupt(BaseModel):
    """A pending interrupt."""

    value: Any = None
    id: str | None = None


class Thread(BaseModel):
    """A thread: its metadata, status and newest values."""

    thread_id: str
    created_at: str
    updated_at: str
    state_updated_at: str | None = None
    metadata: dict[str, object]
    status: Status
    config: dict[str, object] = Field(default_factory=lambda: dict[str, object]())
    values: Any = None
    interrupts: dict[str, list[Interrupt]] | None = None
    error: Any = None
    ttl: dict[str, object] | None = Field(
        None, description="With ``include=ttl``: strategy, minutes left, expiry."
    )
    extracted: dict[str, object] | None = Field(None, description="A search's ``extract``.")


# -- state -------------------------------------------------------------------------------------


class Checkpoint(Body):
    """A checkpoint of a thread (``checkpoint_ns``: a subgraph's, ``node:<task id>``)."""

    checkpoint_id: str | None = None
    checkpoint_ns: str | None = None
    checkpoint_map: dict[str, object] | None = None
    thread_id: str | None = None


class ThreadStateQuery(Query):
    """``subgraphs=true``: each paused subgraph's state inside its task."""

    subgraphs: bool = False


class ThreadStateCheckpointRequest(Body):
    """The state at a checkpoint."""

    checkpoint: Checkpoint
    subgraphs: bool | None = False


class ThreadStateUpdate(Body):
    """Values written as node ``as_node`` would (from ``checkpoint``, else the newest)."""

    values: dict[str, object] | list[object] | None = None
    as_node: str | None = None
    checkpoint: Checkpoint | None = None
    checkpoint_id: str | None = None


class ThreadStateUpdateResponse(BaseModel):
    """The checkpoint the update wrote."""

    checkpoint: dict[str, object] | None
    configurable: dict[str, object] | None = None
    checkpoint_id: str | None = None


class ThreadStateSearch(Body):
    """The thread's checkpoints, newest first (``before``: older than that one)."""

    limit: Annotated[int, Field(ge=1)] | None = 10
    before: str | dict[str, object] | None = Field(None, description="A checkpoint id, checkpoint or config.")
    metadata: dict[str, object] | None = None
    checkpoint: Checkpoint | None = None


class ThreadHistoryQuery(Query):
    """A page of the thread's checkpoints, newest first."""

    limit: Annotated[int, Field(ge=1)] = 10
    before: str | None = Field(None, description="Older than this checkpoint id.")


class ThreadState(BaseModel):
    """A thread's state at a checkpoint: values, next nodes, tasks and pending interrupts."""

    values: Any
    next: list[str]
    tasks: list[dict[str, object]]
    metadata: dict[str, object] | None
    created_at: str | None
    checkpoint: dict[str, object] | None
    parent_checkpoint: dict[str, object] | None
    interrupts: list[Interrupt]
    checkpoint_id: str | None
    parent_checkpoint_id: str | None
