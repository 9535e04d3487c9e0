"""The scripted SDK scenario of tools/server_diff.py: one dict of step name -> observed result.

Every step records what a client sees: the returned value, or ``{"status": code, "error": body}``
for an HTTP error; streams as ``[event, data]`` pairs.  Steps run in order on one server and
later steps build on earlier ones (the ids they create).
"""

# ruff: noqa: B023  # each step's lambda is called at once by Recorder
from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import httpx

HI = {"messages": [{"role": "user", "content": "hi"}]}


def _msg(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def _body(response: httpx.Response) -> Any:
    try:
        data = response.json()
    except ValueError:
        return response.text[:200]
    if isinstance(data, dict):  # the message differs by wording; keep the keys and their types
        return {k: type(v).__name__ for k, v in data.items()}
    return type(data).__name__


def _events(parts: Iterable[Any]) -> list[Any]:
    out: list[Any] = []
    for part in parts:
        event, data = part.event, part.data
        if event.startswith("events") and isinstance(data, dict):
            data = {"event": data.get("event"), "name": data.get("name"), "keys": sorted(data)}
        out.append([event, data])
    return out


class Recorder:
    """Runs steps, catching HTTP errors as their status and body shape."""

    def __init__(self, only: str | None) -> None:
        self.only = only
        self.results: dict[str, Any] = {}

    def __call__(self, name: str, fn: Callable[[], Any]) -> Any:
        if self.only and not name.startswith(self.only):
            try:
                return fn()
            except Exception:
                return None
        try:
            try:
                value = fn()
            except httpx.TransportError:  # a connection the server broke after its own 500: once more
                value = fn()
        except httpx.HTTPStatusError as exc:
            self.results[name] = {"status": exc.response.status_code, "error": _body(exc.response)}
            return None
        except Exception as exc:  # the SDK itself failing on the answer is a difference too
            self.results[name] = {"exception": type(exc).__name__, "message": str(exc)[:200]}
            return None
        self.results[name] = value
        return value


def _raw(client: Any, method: str, path: str, json: Any = None) -> Any:
    response = client.http.client.request(method, path, json=json)
    return {"status": response.status_code, "body": _body(response) if response.status_code >= 400 else None}


def scenario(client: Any, only: str | None) -> dict[str, Any]:
    rec = Recorder(only)
    _assistants(client, rec)
    _threads(client, rec)
    _runs(client, rec)
    _streams(client, rec)
    _more(client, rec)
    _interrupts(client, rec)
    _multitask(client, rec)
    _store(client, rec)
    _errors(client, rec)
    from server_diff_llm import llm_steps  # noqa: PLC0415  # pyright: ignore[reportMissingImports]  # it reads this module's helpers

    llm_steps(client, rec)
    from server_diff_crons import cron_steps  # noqa: PLC0415  # pyright: ignore[reportMissingImports]

    cron_steps(client, rec)
    from server_diff_more import more_steps  # noqa: PLC0415  # pyright: ignore[reportMissingImports]

    more_steps(client, rec)
    return rec.results


def _schemas(found: dict[str, Any]) -> dict[str, Any]:
    """Each schema as its title, property names and required names (the JSON schemas are long)."""
    out: dict[str, Any] = {}
    for key, value in found.items():
        if isinstance(value, dict) and "properties" in value:
            out[key] = {
                "title": value.get("title"),
                "properties": sorted(value["properties"]),
                "required": value.get("required"),
            }
        else:
            out[key] = value
    return out


def _wait_running(client: Any, tid: str, rid: str) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and client.runs.get(tid, rid)["status"] == "pending":
        time.sleep(0.05)
    time.sleep(0.3)


def _assistants(client: Any, rec: Recorder) -> None:
    found = rec("assistants.search", lambda: client.assistants.search(graph_id="agent"))
    aid = found[0]["assistant_id"] if found else "agent"
    rec("assistants.get", lambda: client.assistants.get(aid))
    rec("assistants.get_graph", lambda: client.assistants.get_graph(aid))
    rec("assistants.get_graph_xray", lambda: client.assistants.get_graph(aid, xray=True))
    rec("assistants.get_schemas", lambda: _schemas(client.assistants.get_schemas(aid)))
    rec(
        "assistants.get_subgraphs",
        lambda: {k: _schemas(v) for k, v in client.assistants.get_subgraphs(aid).items()},
    )
    rec(
        "assistants.get_subgraphs_recurse",
        lambda: {k: _schemas(v) for k, v in client.assistants.get_subgraphs(aid, recurse=True).items()},
    )
    rec(
        "assistants.create_config_and_context_400",
        lambda: client.assistants.create(
            "agent", config={"configurable": {"flag": 1}}, context={"model": "m"}
        ),
    )
    rec(
        "assistants.create_config",
        lambda: client.assistants.create("agent", config={"configurable": {"flag": 1}, "tags": ["x"]}),
    )
    mine = rec(
        "assistants.create",
        lambda: client.assistants.create(
            "agent", context={"model": "m1"}, metadata={"owner": "t"}, name="mine"
        ),
    )
    mid = mine["assistant_id"] if mine else str(uuid.uuid4())
    rec(
        "assistants.create_do_nothing",
        lambda: client.assistants.create("agent", assistant_id=mid, if_exists="do_nothing"),
    )
    rec(
        "assistants.create_raise_409",
        lambda: client.assistants.create("agent", assistant_id=mid, if_exists="raise"),
    )
    rec(
        "assistants.update", lambda: client.assistants.update(mid, context={"model": "m2"}, metadata={"v": 2})
    )
    rec(
        "assistants.update_config",
        lambda: client.assistants.update(mid, config={"configurable": {"model": "m3"}}),
    )
    rec("assistants.update_name", lambda: client.assistants.update(mid, name="renamed"))
    rec("assistants.versions", lambda: client.assistants.get_versions(mid))
    rec("assistants.set_latest", lambda: client.assistants.set_latest(mid, 1))
    rec("assistants.get_after_latest", lambda: client.assistants.get(mid))
    rec("assistants.count", lambda: client.assistants.count(graph_id="agent"))
    rec("assistants.search_metadata", lambda: client.assistants.search(metadata={"owner": "t"}))
    rec("assistants.run_with_context", lambda: client.runs.wait(None, mid, input=HI))
    rec("assistants.delete", lambda: client.assistants.delete(mid))
    rec("assistants.get_deleted_404", lambda: client.assistants.get(mid))
    rec("assistants.get_unknown_graph_404", lambda: client.assistants.create("nope"))


def _threads(client: Any, rec: Recorder) -> None:
    th = rec("threads.create", lambda: client.threads.create(metadata={"user": "u1"}))
    tid = th["thread_id"] if th else str(uuid.uuid4())
    rec("threads.create_raise_409", lambda: client.threads.create(thread_id=tid, if_exists="raise"))
    rec("threads.create_do_nothing", lambda: client.threads.create(thread_id=tid, if_exists="do_nothing"))
    rec("threads.get", lambda: client.threads.get(tid))
    rec("threads.get_state_empty", lambda: client.threads.get_state(tid))
    rec("threads.get_history_empty", lambda: client.threads.get_history(tid))
    rec("threads.update", lambda: client.threads.update(tid, metadata={"tag": "x"}))
    rec("threads.run", lambda: client.runs.wait(tid, "agent", input=HI))
    rec("threads.get_after_run", lambda: client.threads.get(tid))
    rec("threads.search_metadata", lambda: client.threads.search(metadata={"user": "u1"}))
    rec("threads.search_status", lambda: len(client.threads.search(status="idle", limit=100)) > 0)
    rec("threads.search_values", lambda: client.threads.search(values={"notes": "reviewed"}))
    rec("threads.count", lambda: client.threads.count(metadata={"user": "u1"}))
    rec("threads.get_state", lambda: client.threads.get_state(tid))
    rec("threads.get_state_subgraphs", lambda: client.threads.get_state(tid, subgraphs=True))
    hist = rec("threads.get_history_limit", lambda: client.threads.get_history(tid, limit=2))
    if hist:
        before = hist[-1]["checkpoint"]
        cid = hist[-1]["checkpoint"]["checkpoint_id"]
        rec("threads.get_state_checkpoint", lambda: client.threads.get_state(tid, checkpoint_id=cid))
        rec("threads.get_history_before", lambda: client.threads.get_history(tid, limit=2, before=before))
    rec(
        "threads.update_state_as_node",
        lambda: client.threads.update_state(tid, {"notes": "edited"}, as_node="review"),
    )
    rec("threads.get_state_after_update", lambda: client.threads.get_state(tid))
    rec("threads.get_after_update", lambda: client.threads.get(tid))
    rec("threads.update_state_no_node", lambda: client.threads.update_state(tid, {"notes": "again"}))
    rec("threads.get_state_after_update2", lambda: client.threads.get_state(tid))
    rec("threads.get_after_update2", lambda: client.threads.get(tid))
    copied = rec("threads.copy", lambda: client.threads.copy(tid))
    if copied:
        rec("threads.copy_state", lambda: client.threads.get_state(copied["thread_id"]))
        rec(
            "threads.copy_history_len", lambda: len(client.threads.get_history(copied["thread_id"], limit=50))
        )
    rec("threads.delete", lambda: client.threads.delete(tid))
    rec("threads.get_deleted_404", lambda: client.threads.get(tid))
    rec("threads.delete_unknown_404", lambda: client.threads.delete(str(uuid.uuid4())))
    rec("threads.get_state_unknown_404", lambda: client.threads.get_state(str(uuid.uuid4())))
    doomed = client.threads.create()["thread_id"]
    rec("threads.prune", lambda: client.threads.prune([doomed, str(uuid.uuid4())]))
    rec("threads.get_pruned_404", lambda: client.threads.get(doomed))
    rec("threads.prune_empty", lambda: client.threads.prune([]))
    rec(
        "threads.prune_bad_strategy",
        lambda: _raw(client, "POST", "/threads/prune", {"thread_ids": [doomed], "strategy": "x"}),
    )
    rec("threads.prune_bad_id", lambda: _raw(client, "POST", "/threads/prune", {"thread_ids": ["nope"]}))


def _runs(client: Any, rec: Recorder) -> None:
    tid = client.threads.create()["thread_id"]
    run = rec("runs.create", lambda: client.runs.create(tid, "agent", input=HI, metadata={"m": 1}))
    rid = run["run_id"] if run else str(uuid.uuid4())
    rec("runs.join", lambda: client.runs.join(tid, rid))
    rec("runs.get", lambda: client.runs.get(tid, rid))
    rec("runs.list", lambda: client.runs.list(tid))
    rec("runs.wait", lambda: client.runs.wait(tid, "agent", input=_msg("remember:blue")))
    rec("runs.wait_fail", lambda: client.runs.wait(tid, "agent", input=_msg("fail")))
    rec("runs.thread_after_fail", lambda: client.threads.get(tid)["status"])
    rec("runs.list_after_fail", lambda: [r["status"] for r in client.runs.list(tid)])
    new_tid = str(uuid.uuid4())
    rec(
        "runs.if_not_exists_create",
        lambda: client.runs.wait(new_tid, "agent", input=HI, if_not_exists="create"),
    )
    rec("runs.if_not_exists_thread", lambda: client.threads.get(new_tid))
    rec("runs.missing_thread_404", lambda: client.runs.wait(str(uuid.uuid4()), "agent", input=HI))
    rec("runs.stateless_wait", lambda: client.runs.wait(None, "agent", input=HI))
    rec("runs.stateless_stream", lambda: _events(client.runs.stream(None, "agent", input=HI)))
    rec("runs.stateless_create", lambda: client.runs.create(None, "agent", input=HI))
    slow = rec("runs.cancel_create", lambda: client.runs.create(tid, "agent", input=_msg("sleep:2")))
    if slow:
        _wait_running(client, tid, slow["run_id"])
        rec("runs.cancel", lambda: client.runs.cancel(tid, slow["run_id"], wait=True))
        rec("runs.cancel_nowait", lambda: _cancel_nowait(client, tid))
        rec("runs.cancel_get", lambda: client.runs.get(tid, slow["run_id"])["status"])
        rec("runs.cancel_thread", lambda: client.threads.get(tid)["status"])
        rec("runs.delete", lambda: client.runs.delete(tid, slow["run_id"]))
        rec("runs.get_deleted_404", lambda: client.runs.get(tid, slow["run_id"]))
    rec("runs.get_unknown_404", lambda: client.runs.get(tid, str(uuid.uuid4())))
    bg = client.runs.create(tid, "agent", input=_msg("sleep:0.5"), stream_mode=["values", "custom"])
    rec("runs.join_stream", lambda: _events(client.runs.join_stream(tid, bg["run_id"])))
    rec("runs.join_finished", lambda: client.runs.join(tid, bg["run_id"]))
    rec("runs.wait_config", lambda: client.runs.wait(tid, "agent", input=HI, config={"tags": ["t"]}))
    rec(
        "runs.command_goto_update",
        lambda: client.runs.wait(tid, "agent", command={"goto": "review", "update": {"notes": "jumped"}}),
    )
    rec("runs.state_after_goto", lambda: client.threads.get_state(tid)["values"])


def _more(client: Any, rec: Recorder) -> None:
    tid = client.threads.create(metadata={"kind": "more"})["thread_id"]
    client.runs.wait(tid, "agent", input=HI)
    hist = client.threads.get_history(tid, limit=10)
    fork_from = hist[-2]["checkpoint_id"] if len(hist) > 1 else None
    rec(
        "more.fork_from_checkpoint",
        lambda: client.runs.wait(tid, "agent", input=_msg("forked"), checkpoint_id=fork_from),
    )
    rec("more.history_after_fork", lambda: len(client.threads.get_history(tid, limit=50)))
    rec(
        "more.search_select_sort",
        lambda: client.threads.search(
            metadata={"kind": "more"}, select=["thread_id", "status"], sort_by="created_at"
        ),
    )
    rec(
        "more.assistants_select",
        lambda: client.assistants.search(graph_id="agent", select=["assistant_id", "name"]),
    )
    rec(
        "more.batch",
        lambda: client.runs.create_batch(
            [{"assistant_id": "agent", "input": HI}, {"assistant_id": "agent", "input": HI}]
        ),
    )
    slow = client.runs.create(tid, "agent", input=_msg("sleep:2"))
    _wait_running(client, tid, slow["run_id"])
    rec("more.cancel_many", lambda: client.runs.cancel_many(thread_id=tid, run_ids=[slow["run_id"]]))
    client.runs.join(tid, slow["run_id"])
    rec("more.cancel_many_status", lambda: client.runs.get(tid, slow["run_id"])["status"])
    run = client.runs.create(tid, "agent", input=_msg("sleep:0.5"))
    rec("more.thread_join_stream", lambda: _events(_limited(client.threads.join_stream(tid), 6)))
    client.runs.join(tid, run["run_id"])
    rec("more.wait_unknown_assistant_404", lambda: client.runs.wait(tid, str(uuid.uuid4()), input=HI))
    rec("more.resume_without_interrupt", lambda: client.runs.wait(tid, "agent", command={"resume": "x"}))
    rec(
        "more.stream_resumable",
        lambda: _events(client.runs.stream(tid, "agent", input=HI, stream_resumable=True)),
    )


def _limited(parts: Iterable[Any], n: int) -> list[Any]:
    out: list[Any] = []
    for part in parts:
        out.append(part)
        if len(out) >= n or part.event in ("end", "error"):
            break
    return out


def _streams(client: Any, rec: Recorder) -> None:
    for mode in (
        "values",
        "updates",
        "messages-tuple",
        "custom",
        "debug",
        "events",
        "messages",
        "tasks",
        "checkpoints",
    ):
        tid = client.threads.create()["thread_id"]
        rec(f"stream.{mode}", lambda: _events(client.runs.stream(tid, "agent", input=HI, stream_mode=mode)))
    tid = client.threads.create()["thread_id"]
    rec(
        "stream.multi",
        lambda: _events(
            client.runs.stream(tid, "agent", input=HI, stream_mode=["values", "updates", "custom"])
        ),
    )
    rec(
        "stream.subgraphs",
        lambda: _events(
            client.runs.stream(
                tid, "agent", input=HI, stream_mode=["updates", "values"], stream_subgraphs=True
            )
        ),
    )
    rec("stream.fail", lambda: _events(client.runs.stream(tid, "agent", input=_msg("fail"))))
    rec(
        "stream.if_not_exists",
        lambda: _events(client.runs.stream(str(uuid.uuid4()), "agent", input=HI, if_not_exists="create")),
    )
    rec(
        "stream.missing_thread",
        lambda: _events(client.runs.stream(str(uuid.uuid4()), "agent", input=HI)),
    )


def _interrupts(client: Any, rec: Recorder) -> None:
    tid = client.threads.create()["thread_id"]
    rec(
        "interrupt.stream",
        lambda: _events(client.runs.stream(tid, "agent", input=_msg("ask"), stream_mode="updates")),
    )
    rec("interrupt.thread", lambda: client.threads.get(tid))
    rec("interrupt.state", lambda: client.threads.get_state(tid))
    rec("interrupt.search_status", lambda: len(client.threads.search(status="interrupted", limit=100)) > 0)
    rec("interrupt.resume", lambda: client.runs.wait(tid, "agent", command={"resume": "yes"}))
    rec("interrupt.after_resume", lambda: client.threads.get_state(tid))
    tid2 = client.threads.create()["thread_id"]
    rec("interrupt.wait", lambda: client.runs.wait(tid2, "agent", input=_msg("ask")))
    rec(
        "interrupt.resume_stream",
        lambda: _events(client.runs.stream(tid2, "agent", command={"resume": "no"}, stream_mode="values")),
    )
    tid3 = client.threads.create()["thread_id"]
    rec(
        "interrupt.before",
        lambda: client.runs.wait(tid3, "agent", input=HI, interrupt_before=["review"]),
    )
    rec("interrupt.before_state", lambda: client.threads.get_state(tid3))
    rec("interrupt.before_continue", lambda: client.runs.wait(tid3, "agent", input=None))


def _multitask(client: Any, rec: Recorder) -> None:
    for strategy in ("reject", "enqueue", "interrupt", "rollback"):
        tid = client.threads.create()["thread_id"]
        first = client.runs.create(tid, "agent", input=_msg("sleep:1.5"))
        _wait_running(client, tid, first["run_id"])
        second = rec(
            f"multitask.{strategy}",
            lambda: client.runs.create(tid, "agent", input=HI, multitask_strategy=strategy),
        )
        if second:
            rec(f"multitask.{strategy}_join", lambda: client.runs.join(tid, second["run_id"]))
        rec(f"multitask.{strategy}_first", lambda: _status(client, tid, first["run_id"]))
        rec(f"multitask.{strategy}_runs", lambda: sorted(r["status"] for r in client.runs.list(tid)))
        rec(
            f"multitask.{strategy}_msgs",
            lambda: len(client.threads.get_state(tid)["values"].get("messages", [])),
        )


def _cancel_nowait(client: Any, tid: str) -> Any:
    run = client.runs.create(tid, "agent", input=_msg("sleep:1"))
    _wait_running(client, tid, run["run_id"])
    out = client.runs.cancel(tid, run["run_id"])
    client.runs.join(tid, run["run_id"])
    return [out, client.runs.get(tid, run["run_id"])["status"]]


def _status(client: Any, tid: str, rid: str) -> Any:
    try:
        return client.runs.get(tid, rid)["status"]
    except httpx.HTTPStatusError as exc:
        return {"status": exc.response.status_code}


def _store(client: Any, rec: Recorder) -> None:
    rec("store.put", lambda: client.store.put_item(["a", "b"], "k1", {"v": 1, "tag": "x"}))
    rec("store.put2", lambda: client.store.put_item(["a", "c"], "k2", {"v": 2, "tag": "y"}))
    rec("store.get", lambda: client.store.get_item(["a", "b"], "k1"))
    rec("store.get_missing", lambda: client.store.get_item(["a", "b"], "nope"))
    rec("store.search", lambda: client.store.search_items(["a"]))
    rec("store.search_filter", lambda: client.store.search_items(["a"], filter={"tag": "y"}))
    rec("store.search_limit", lambda: client.store.search_items(["a"], limit=1, offset=1))
    rec("store.list_namespaces", lambda: client.store.list_namespaces())
    rec("store.list_namespaces_prefix", lambda: client.store.list_namespaces(prefix=["a"], max_depth=2))
    rec("store.from_run", lambda: client.store.get_item(["memories"], "last"))
    rec("store.delete", lambda: client.store.delete_item(["a", "b"], "k1"))
    rec("store.get_deleted", lambda: client.store.get_item(["a", "b"], "k1"))
    rec(
        "store.put_bad_value_422",
        lambda: _raw(client, "PUT", "/store/items", {"namespace": ["a"], "key": "k"}),
    )
    rec(
        "store.bad_namespace_422",
        lambda: _raw(client, "PUT", "/store/items", {"namespace": ["a.b"], "key": "k", "value": {}}),
    )


def _errors(client: Any, rec: Recorder) -> None:
    rec("errors.thread_bad_metadata_422", lambda: _raw(client, "POST", "/threads", {"metadata": "x"}))
    rec("errors.thread_not_json", lambda: _raw(client, "POST", "/threads", None))
    rec("errors.thread_bad_uuid", lambda: _raw(client, "GET", "/threads/not-a-uuid"))
    rec("errors.run_no_assistant_422", lambda: _raw(client, "POST", "/runs/wait", {"input": {}}))
    rec("errors.run_unknown_assistant", lambda: _raw(client, "POST", "/runs/wait", {"assistant_id": "ghost"}))
    rec(
        "errors.run_bad_stream_mode",
        lambda: _raw(client, "POST", "/runs/wait", {"assistant_id": "agent", "stream_mode": "bogus"}),
    )
    rec("errors.assistant_bad_uuid", lambda: _raw(client, "GET", "/assistants/not-a-uuid"))
    rec("errors.search_bad_limit", lambda: _raw(client, "POST", "/threads/search", {"limit": "x"}))
    rec("errors.unknown_path", lambda: _raw(client, "GET", "/nowhere"))
    tid = client.threads.create()["thread_id"]
    rec(
        "errors.update_state_bad_node",
        lambda: _raw(client, "POST", f"/threads/{tid}/state", {"values": {}, "as_node": "ghost"}),
    )
    rec(
        "errors.resume_nothing",
        lambda: _raw(
            client, "POST", f"/threads/{tid}/runs/wait", {"assistant_id": "agent", "command": {"resume": 1}}
        ),
    )
