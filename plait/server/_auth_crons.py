"""Custom auth for crons: what creating one asks (``crons.create``, then reading its assistant and its
thread), who it runs as (its creator: ``user_id`` and the run identity keys in its payload's
``configurable``), and which crons a search shows (the crons' filter on their metadata; for a
thread's cron, the threads' filter on that thread).
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.requests import Request

from plait.server._auth import USER_KEYS, authorize
from plait.server._auth_filter import Filter, permits
from plait.server._auth_runs import cron_owner
from plait.server._data.crons import Visible
from plait.server._records import CronDoc
from plait.server._wire import as_dict

__all__ = ["CronAccess", "cron_access", "keep_creator", "visible_crons"]


class CronAccess:
    """What the request's user may see of a new cron's assistant and thread (the auth's filters)."""

    def __init__(self, assistant: Filter | None, thread: Filter | None) -> None:
        self.assistant_filter, self.thread_filter = assistant, thread

    def assistant(self, doc: Mapping[str, object]) -> bool:
        """Whether the user sees the assistant (the graphs' own ones, LangGraph's system assistants, always)."""
        metadata = as_dict(doc.get("metadata"))
        return metadata.get("created_by") == "system" or permits(self.assistant_filter, metadata)

    def thread(self, doc: Mapping[str, object]) -> bool:
        """Whether the user sees the cron's thread."""
        return permits(self.thread_filter, doc.get("metadata"))


async def cron_access(request: Request, cron: CronDoc) -> CronAccess:
    """Ask the auth (``crons.create``, then reading the cron's assistant and thread); the cron takes
    the metadata the handler left and its user's identity (its runs are made as that user)."""
    value: dict[str, object] = {
        "payload": cron["payload"],
        "schedule": cron["schedule"],
        "cron_id": cron["cron_id"],
        "thread_id": cron["thread_id"],
        "end_time": cron["end_time"],
        "metadata": cron["metadata"],
    }
    owner = cron_owner(request)
    value["user_id"] = owner and owner["identity"]
    await authorize(request, "crons", "create", value)
    cron["metadata"] = as_dict(value.get("metadata"))
    if owner is not None:
        cron["user_id"] = owner["identity"]
        as_dict(as_dict(cron["payload"]["config"])["configurable"]).update(owner["configurable"])
    assistant = await authorize(request, "assistants", "read", {"assistant_id": cron["assistant_id"]})
    thread = None
    if cron["thread_id"] is not None:
        thread = await authorize(request, "threads", "read", {"thread_id": cron["thread_id"]})
    return CronAccess(assistant, thread)


def keep_creator(cron: CronDoc, payload: dict[str, object]) -> dict[str, object]:
    """``payload`` (the cron's run request as an update leaves it) with the creator's identity keys
    the cron holds (``langgraph_auth_user`` ...): an update may replace the run's config, never
    whom its runs are made as. A cron made without custom auth (no ``user_id``) has none to keep."""
    if not cron.get("user_id"):
        return payload
    held = as_dict(as_dict(as_dict(cron.get("payload")).get("config")).get("configurable"))
    config = as_dict(payload.get("config"))
    configurable = {k: v for k, v in as_dict(config.get("configurable")).items() if k not in USER_KEYS}
    configurable.update({k: held[k] for k in USER_KEYS if k in held})
    return {**payload, "config": {**config, "configurable": configurable}}


async def visible_crons(request: Request, thread_id: str | None, data: dict[str, object]) -> Visible:
    """The filters keeping the crons the auth lets the request's user see (``thread_id``: the
    searched thread; ``data``: the search)."""
    value = {k: data.get(k) for k in ("assistant_id", "thread_id", "limit", "offset")}
    filters = await authorize(request, "crons", "search", value)
    if thread_id is not None:
        threads = await authorize(request, "threads", "read", {"thread_id": thread_id})
    else:
        threads = await authorize(request, "threads", "search", {"metadata": {}, "values": {}})
    return Visible(filters, threads)
