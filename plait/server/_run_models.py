"""Request and response models of runs (``/runs...``, ``/threads/{thread_id}/runs...``): field
names and defaults as langgraph-sdk sends and reads them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from plait.server._api import Body, Query
from plait.server._thread_models import Checkpoint, CommandBody, Offset

__all__ = [
    "NodeNames",
    "Run",
    "RunCancelQuery",
    "RunCreate",
    "RunJoinStreamQuery",
    "RunListQuery",
    "RunsCancel",
    "RunsCancelQuery",
    "StreamMode",
]

StreamMode = Literal[
    "values", "updates", "messages-tuple", "messages", "custom", "debug", "tasks", "checkpoints", "events"
]
NodeNames = Literal["*"] | list[str]
"""``"*"`` (every node) or the nodes' names."""
_YEAR = 366 * 86400


class RunCreate(Body):
    """A run of an assistant (or a graph's default assistant): on a thread, or stateless."""

    assistant_id: str = Field(description="An assistant's id, or a graph's id for its default assistant.")
    input: dict[str, object] | list[object] | None = Field(None, description="The graph's input.")
    command: CommandBody | None = Field(None, description="Resume, update or go to, instead of an input.")
    checkpoint: Checkpoint | None = Field(None, description="Run from this checkpoint of the thread.")
    checkpoint_id: str | None = None
    metadata: dict[str, object] | None = Field(None, description="The run's metadata.")
    config: dict[str, object] | None = Field(
        None, description="The graph's config (``configurable``, tags, ...)."
    )
    context: dict[str, object] | None = Field(None, description="The graph's context.")
    webhook: str | None = Field(None, description="A URL told of the run's end (POST of the run).")
    interrupt_before: NodeNames | None = None
    interrupt_after: NodeNames | None = None
    stream_mode: StreamMode | Annotated[list[StreamMode], Field(min_length=1)] | None = Field(
        None, description="What to stream (``values`` if not given)."
    )
    stream_subgraphs: bool | None = False
    stream_resumable: bool | None = False
    feedback_keys: list[str] | None = None
    multitask_strategy: Literal["reject", "enqueue", "interrupt", "rollback"] | None = Field(
        "enqueue", description="What to do with the thread's runs in flight."
    )
    if_not_exists: Literal["reject", "create"] | None = Field(
        "reject", description="A thread's run: create the thread when it does not exist, or 404."
    )
    on_completion: Literal["delete", "keep"] | None = Field(
        "delete", description="A stateless run: keep or delete its thread once it ends."
    )
    on_disconnect: Literal["cancel", "continue"] | None = Field(
        "continue", description="A streamed run: cancel it when the client leaves, or let it run."
    )
    after_seconds: Annotated[float, Field(ge=0, le=_YEAR)] | None = Field(
        None, description="Start no sooner than this many seconds from now (at most a year)."
    )
    durability: Literal["sync", "async", "exit"] | None = Field(
        None, description="When checkpoints are saved (``async`` by default)."
    )
    checkpoint_during: bool | None = Field(
        None, description="Deprecated: ``False`` means ``durability='exit'``."
    )
    strict_resume: bool | None = Field(
        None, description="A resume answering no pending interrupt fails the run."
    )


class RunsCancel(Body):
    """Runs to cancel: every run with a ``status``, or these ``run_ids``."""

    status: Literal["pending", "running", "all"] | None = None
    thread_id: str | None = None
    run_ids: list[str] | None = None


class RunsCancelQuery(Query):
    """How to cancel."""

    action: Literal["interrupt", "rollback"] = Field(
        "interrupt", description="``rollback``: delete the run and its checkpoints too."
    )


class RunCancelQuery(RunsCancelQuery):
    """How to cancel, and whether to wait for the run to stop."""

    wait: bool = Field(False, description="Answer once the run has stopped.")


class RunListQuery(Query):
    """A page of the thread's runs, newest first."""

    limit: Offset = 10
    offset: Offset = 0
    status: str | None = Field(None, description="Only runs of this status.")


class RunJoinStreamQuery(Query):
    """Which events of the run to follow (after the ``Last-Event-ID`` header's)."""

    stream_mode: list[str] = Field(default_factory=lambda: list[str](), description="Only these modes.")
    cancel_on_disconnect: bool = Field(False, description="Cancel the run when the client leaves.")


class Run(BaseModel):
    """A run: its assistant, thread, status and the request it was made with."""

    run_id: str
    thread_id: str
    assistant_id: str
    created_at: str
    updated_at: str
    status: Literal["pending", "running", "error", "success", "timeout", "interrupted"]
    metadata: dict[str, object]
    kwargs: dict[str, object]
    multitask_strategy: Literal["reject", "enqueue", "interrupt", "rollback"]
