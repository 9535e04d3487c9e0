"""The ``crons`` steps of tools/server_diff.py: create, search, count, update, delete, errors, firing."""

# ruff: noqa: B023  # each step's lambda is called at once by the Recorder
from __future__ import annotations

import time
import uuid
from typing import Any

from server_diff_scenario import _msg, _raw  # pyright: ignore[reportMissingImports]


def _fired(client: Any, tid: str) -> dict[str, Any]:
    runs = client.runs.list(tid, limit=100)
    return {
        "some": len(runs) >= 1,
        "statuses": sorted({r["status"] for r in runs}),
        "metadata": sorted(runs[0]["metadata"]) if runs else None,
        "cron_id": bool(runs) and "cron_id" in runs[0]["kwargs"]["config"]["configurable"],
    }


def cron_steps(client: Any, rec: Any) -> None:
    """Crons of the ``agent`` graph (LangGraph's dev server looks for due crons every 5 seconds)."""
    tag = "diff"
    made = rec(
        "crons.create",
        lambda: client.crons.create("agent", schedule="0 9 * * *", input=_msg("c"), metadata={"tag": tag}),
    )
    th = client.threads.create()
    tid = th["thread_id"]
    on_thread = rec(
        "crons.create_for_thread",
        lambda: client.crons.create_for_thread(tid, "agent", schedule="*/5 * * * *", input=_msg("t")),
    )
    cid = made["cron_id"] if made else str(uuid.uuid4())
    rec("crons.search", lambda: client.crons.search(metadata={"tag": tag}))
    rec("crons.search_thread", lambda: client.crons.search(thread_id=tid, select=["cron_id", "thread_id"]))
    rec("crons.count", lambda: client.crons.count(metadata={"tag": tag}))
    rec(
        "crons.update",
        lambda: client.crons.update(cid, enabled=False, metadata={"more": 1}, input=_msg("new")),
    )
    rec("crons.get", lambda: client.http.get(f"/runs/crons/{cid}"))
    rec("crons.delete", lambda: client.crons.delete(cid))
    rec("crons.delete_again_404", lambda: _raw(client, "DELETE", f"/runs/crons/{cid}"))
    rec(
        "crons.bad_schedule_422",
        lambda: _raw(client, "POST", "/runs/crons", {"assistant_id": "agent", "schedule": "x"}),
    )
    rec(
        "crons.unknown_assistant_404",
        lambda: _raw(
            client, "POST", "/runs/crons", {"assistant_id": str(uuid.uuid4()), "schedule": "0 9 * * *"}
        ),
    )
    rec(
        "crons.unknown_thread_404",
        lambda: _raw(
            client,
            "POST",
            f"/threads/{uuid.uuid4()}/runs/crons",
            {"assistant_id": "agent", "schedule": "0 9 * * *"},
        ),
    )
    rec(
        "crons.patch_unknown_404",
        lambda: _raw(client, "PATCH", f"/runs/crons/{uuid.uuid4()}", {"enabled": True}),
    )
    rec("crons.patch_empty_400", lambda: _raw(client, "PATCH", f"/runs/crons/{cid}", {}))
    rec("crons.get_bad_uuid_422", lambda: _raw(client, "GET", "/runs/crons/not-a-uuid"))
    if on_thread:
        client.crons.delete(on_thread["cron_id"])
    # firing: a thread's cron and a stateless one kept, every second, for one look of LangGraph's scheduler
    fire_tid = client.threads.create()["thread_id"]
    ticking = client.crons.create_for_thread(fire_tid, "agent", schedule="* * * * * */1", input=_msg("tick"))
    kept = client.crons.create(
        "agent", schedule="* * * * * */1", input=_msg("kept"), metadata={"tag": tag}, on_run_completed="keep"
    )
    deadline = time.monotonic() + 12
    while time.monotonic() < deadline and not (
        client.runs.list(fire_tid) and client.threads.search(metadata={"tag": tag})
    ):
        time.sleep(0.2)
    for cron in (ticking, kept):
        client.crons.update(cron["cron_id"], enabled=False)
    time.sleep(1.0)
    rec("crons.fired_on_thread", lambda: _fired(client, fire_tid))
    found = client.threads.search(metadata={"tag": tag})
    rec("crons.fired_kept_thread", lambda: sorted(found[0]["metadata"]) if found else None)
    rec("crons.fired_kept_run", lambda: _fired(client, found[0]["thread_id"]) if found else None)
    for cron in (ticking, kept):
        client.crons.delete(cron["cron_id"])
