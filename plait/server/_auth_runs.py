"""Custom auth for runs: what creating one asks (``threads.create_run``, then reading its assistant),
and who the run is made by (its ``configurable``'s ``langgraph_auth_user``, ``langgraph_auth_user_id``
and ``langgraph_auth_permissions``, as LangGraph's server sets them; a client cannot set them).

A cron keeps its creator (``user_id`` and the keys above in its payload's ``configurable``); each run
it fires is asked for as that user.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypedDict

from starlette.requests import HTTPConnection, Request

from plait.server._auth import USER_KEYS, AuthUser, Identity, LoadedAuth, authorize_as, request_identity
from plait.server._auth_filter import Filter, permits
from plait.server._records import CronDoc
from plait.server._wire import as_dict, as_list

__all__ = ["CronOwner", "RunAccess", "cron_owner", "fired_run_access", "run_access"]


@dataclass(frozen=True)
class RunAccess:
    """What a new run's user may see: the thread it runs on (``threads.create_run``'s filter) and
    its assistant (``assistants.read``'s)."""

    thread: Filter | None = None
    assistant: Filter | None = None

    def thread_ok(self, thread: Mapping[str, object]) -> bool:
        """Whether the run may go on this existing thread (another user's is answered 404)."""
        return permits(self.thread, thread.get("metadata"))

    def assistant_ok(self, assistant: Mapping[str, object]) -> bool:
        """Whether the user sees the assistant (the graphs' default ones always, as LangGraph's
        server leaves its system assistants to everyone)."""
        metadata = as_dict(assistant.get("metadata"))
        return metadata.get("created_by") == "system" or permits(self.assistant, metadata)


async def _access(
    auth: LoadedAuth, who: Identity, thread_id: str | None, data: dict[str, object]
) -> RunAccess:
    metadata = dict(as_dict(data.get("metadata")))
    value: dict[str, object] = {
        "thread_id": thread_id,
        "assistant_id": data.get("assistant_id"),
        "run_id": None,
        "status": "pending",
        "metadata": metadata,
        "prevent_insert_if_inflight": True,
        "multitask_strategy": data.get("multitask_strategy") or "enqueue",
        "if_not_exists": data.get("if_not_exists") or "reject",
        "after_seconds": data.get("after_seconds") or 0,
        "kwargs": data,
    }
    thread = await authorize_as(auth, who, "threads", "create_run", value)
    data["metadata"] = as_dict(value.get("metadata"))
    config = data["config"] = dict(as_dict(data.get("config")))
    configurable = config["configurable"] = dict(as_dict(config.get("configurable")))
    configurable.update(
        zip(USER_KEYS, (who.user.dict(), who.user.identity, list(who.permissions)), strict=True)
    )
    assistant = await authorize_as(
        auth, who, "assistants", "read", {"assistant_id": data.get("assistant_id")}
    )
    return RunAccess(thread, assistant)


async def run_access(
    request: HTTPConnection, thread_id: str | None, data: dict[str, object]
) -> RunAccess | None:
    """Ask the auth whether the request's user (of a request or a WebSocket) may create the run
    ``data`` asks for on ``thread_id`` (``None``: a stateless run), and mark the run as theirs.

    ``data`` (the run request) takes the metadata the handler left and the user's keys in
    ``config.configurable``; a handler may change the request itself through ``value["kwargs"]``.
    ``None`` when the server has no custom auth.

    Raises:
        HTTPException: 403 (or the handler's status) when the handler refuses.
    """
    found = request_identity(request)
    if found is None:
        return None
    return await _access(found[0], found[1], thread_id, data)


class CronOwner(TypedDict):
    """Who a new cron's runs are made as: the identity and the run identity keys of ``configurable``."""

    identity: str
    configurable: dict[str, object]


def cron_owner(request: Request) -> CronOwner | None:
    """The identity a new cron keeps (``{"identity", "configurable"}``), ``None`` without custom auth."""
    found = request_identity(request)
    if found is None:
        return None
    user, permissions = found[1].user, found[1].permissions
    configurable: dict[str, object] = dict(
        zip(USER_KEYS, (user.dict(), user.identity, list(permissions)), strict=True)
    )
    return {"identity": user.identity, "configurable": configurable}


async def fired_run_access(
    auth: LoadedAuth | None, cron: CronDoc, data: dict[str, object]
) -> RunAccess | None:
    """:func:`run_access` for the run a cron fires, asked as the cron's creator (``None``: the
    server has no custom auth, or the cron was made without it)."""
    if auth is None or not cron.get("user_id"):
        return None
    configurable = as_dict(as_dict(as_dict(cron.get("payload")).get("config")).get("configurable"))
    stored = as_dict(configurable.get("langgraph_auth_user"))
    permissions = [str(p) for p in as_list(configurable.get("langgraph_auth_permissions"))]
    if str(stored.get("identity")) != str(cron["user_id"]):  # not the creator's: only the identity is trusted
        stored, permissions = {"identity": cron["user_id"]}, []
    who = Identity(AuthUser(stored, permissions), permissions)
    return await _access(auth, who, cron.get("thread_id"), data)
