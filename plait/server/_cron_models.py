"""Request and response models of crons (``/runs/crons...``): field names and defaults as
langgraph-sdk sends and reads them; a cron's schedule, time zone and end time checked."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from plait.server._api import Body, check
from plait.server._run_models import NodeNames, StreamMode
from plait.server._thread_models import Limit, Offset, ThreadId

__all__ = [
    "RUN_KEYS",
    "Cron",
    "CronCountRequest",
    "CronCreate",
    "CronPatch",
    "CronSearch",
    "when",
]

RUN_KEYS = (
    "input",
    "config",
    "context",
    "metadata",
    "checkpoint_during",
    "interrupt_before",
    "interrupt_after",
    "webhook",
    "multitask_strategy",
    "stream_mode",
    "stream_subgraphs",
    "stream_resumable",
    "durability",
)
"""What a cron's request may say about the runs it makes (kept in its ``payload``)."""
_FIELDS = Literal[
    "cron_id", "assistant_id", "thread_id", "on_run_completed", "end_time", "schedule", "timezone",
    "created_at", "updated_at", "payload", "user_id", "next_run_date", "metadata", "enabled",
]  # fmt: skip
_SORT = Literal[
    "cron_id", "assistant_id", "thread_id", "next_run_date", "end_time", "created_at", "updated_at"
]


def when(text: str) -> datetime:
    """An ISO 8601 date and time (UTC unless it has an offset) as a UTC datetime."""
    found = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return (found if found.tzinfo is not None else found.replace(tzinfo=timezone.utc)).astimezone(
        timezone.utc
    )


def _schedule(raw: str) -> str:
    if not croniter.is_valid(raw):
        raise ValueError(
            f"Invalid cron schedule: {raw!r}. Use the standard cron format (minute hour day_of_month "
            "month day_of_week), for example '*/5 * * * *' for every 5 minutes."
        )
    return raw


def _timezone(raw: str) -> str:
    try:
        ZoneInfo(raw)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"Invalid timezone: {raw!r}. Use an IANA time zone name (e.g. 'America/New_York')."
        ) from None
    return raw


def _end_time(raw: str) -> str:
    """``raw`` as given (LangGraph's server echoes it), once it is known to be a date and time."""
    try:
        when(raw)
    except (ValueError, OverflowError):
        raise ValueError(
            f"end_time must be an ISO 8601 date and time (UTC unless it has an offset), got {raw!r}"
        ) from None
    return raw


Schedule = Annotated[str, check(_schedule), Field(description="Cron format: ``*/5 * * * *``.")]
TimeZone = Annotated[str, check(_timezone), Field(description="An IANA time zone (UTC if not given).")]
EndTime = Annotated[str, check(_end_time), Field(description="No runs after this ISO 8601 time.")]


def _fixed(raw: Any) -> Any:
    raise ValueError("a cron's assistant and thread cannot be changed; delete it and create another")


class _CronRuns(Body):
    """A cron's settings and the runs it makes (unknown fields are refused)."""

    model_config = ConfigDict(strict=True, extra="forbid")
    timezone: TimeZone | None = None
    end_time: EndTime | None = None
    enabled: bool | None = None
    on_run_completed: Literal["delete", "keep"] | None = Field(
        None, description="A stateless cron: delete (default) or keep each run's thread."
    )
    metadata: dict[str, object] | None = None
    input: dict[str, object] | list[object] | None = None
    config: dict[str, object] | None = None
    context: dict[str, object] | None = None
    checkpoint_during: bool | None = None
    interrupt_before: NodeNames | None = None
    interrupt_after: NodeNames | None = None
    webhook: str | None = None
    multitask_strategy: Literal["reject", "enqueue", "interrupt", "rollback"] | None = None
    stream_mode: StreamMode | Annotated[list[StreamMode], Field(min_length=1)] | None = None
    stream_subgraphs: bool | None = None
    stream_resumable: bool | None = None
    durability: Literal["sync", "async", "exit"] | None = None


class CronCreate(_CronRuns):
    """A cron: runs of an assistant on a schedule (on the thread of the path, or each on a new thread)."""

    assistant_id: str = Field(description="An assistant's id, or a graph's id for its default assistant.")
    schedule: Schedule


class CronPatch(_CronRuns):
    """What changes: settings replaced, ``metadata`` merged in, run fields merged into the payload
    (``null`` clears one)."""

    schedule: Schedule | None = None
    assistant_id: SkipJsonSchema[Annotated[Any, check(_fixed)]] = None
    thread_id: SkipJsonSchema[Annotated[Any, check(_fixed)]] = None


class CronCountRequest(Body):
    """Crons of an assistant, of a thread, enabled or not, whose metadata holds these values."""

    assistant_id: str | None = None
    thread_id: ThreadId | None = None
    enabled: bool | None = None
    metadata: dict[str, object] | None = None


class CronSearch(CronCountRequest):
    """A page of the crons selected (see :class:`CronCountRequest`), sorted."""

    limit: Limit = 10
    offset: Offset = 0
    sort_by: _SORT | None = "created_at"
    sort_order: Literal["asc", "desc"] | None = "desc"
    select: Annotated[list[_FIELDS], Field(min_length=1)] | None = Field(
        None, description="Only these fields."
    )


class Cron(BaseModel):
    """A cron: its schedule, the run request it makes (``payload``) and its next run."""

    cron_id: str
    assistant_id: str
    thread_id: str | None
    on_run_completed: Literal["delete", "keep"] | None
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
