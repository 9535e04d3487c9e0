"""The stored documents of assistants and runs, as typed dicts (their JSON as the API shows it).

A document is written by the server (:mod:`plait.server._assistants`, :mod:`plait.server._create`)
and read back from its row's ``doc`` column; an auth handler may change a run's ``kwargs`` before
it is stored, so the optional keys of :class:`RunKwargs` are read with ``.get``.
"""

from __future__ import annotations

from typing_extensions import NotRequired, TypedDict

__all__ = ["AssistantDoc", "CronDoc", "RunDoc", "RunKwargs", "ThreadDoc"]


class AssistantDoc(TypedDict):
    """An assistant (one version of it) as ``GET /assistants/{assistant_id}`` returns it."""

    assistant_id: str
    graph_id: str
    config: dict[str, object]
    context: dict[str, object]
    metadata: dict[str, object]
    name: str
    created_at: str
    updated_at: str
    version: int
    description: str | None


class RunKwargs(TypedDict, total=False):
    """The request a run was made with (its document's ``kwargs``)."""

    input: object
    command: dict[str, object] | None
    config: dict[str, object]
    context: dict[str, object]
    stream_mode: list[str]
    interrupt_before: str | list[str] | None
    interrupt_after: str | list[str] | None
    temporary: bool
    subgraphs: bool
    resumable: bool
    durability: str
    checkpoint_during: bool
    feedback_keys: list[str] | None
    webhook: str | None
    checkpoint_id: str
    """The checkpoint the run starts from (read by plait's execution only)."""
    strict_resume: bool
    wait: bool
    """A ``runs.wait`` run: only its outcome is published."""


class RunDoc(TypedDict):
    """A run as ``GET /threads/{thread_id}/runs/{run_id}`` returns it."""

    run_id: str
    thread_id: str
    assistant_id: str
    metadata: dict[str, object]
    status: str
    kwargs: RunKwargs
    multitask_strategy: str
    created_at: str
    updated_at: str


class ThreadDoc(TypedDict):
    """A thread as ``GET /threads/{thread_id}`` returns it (``values`` stored in a column of their
    own; ``interrupts`` and ``error`` once a run or a state update set them)."""

    thread_id: str
    created_at: str
    updated_at: str
    state_updated_at: NotRequired[str]
    metadata: dict[str, object]
    status: str
    config: dict[str, object]
    values: NotRequired[object]
    interrupts: NotRequired[object]
    error: NotRequired[object]


class CronDoc(TypedDict):
    """A cron as ``POST /runs/crons/search`` lists it (``payload``: the run request it makes)."""

    cron_id: str
    assistant_id: str
    thread_id: str | None
    on_run_completed: str | None
    end_time: str | None
    schedule: str
    timezone: str | None
    created_at: str
    updated_at: str
    payload: dict[str, object]
    user_id: str | None
    next_run_date: str | None
    metadata: dict[str, object]
    enabled: bool
