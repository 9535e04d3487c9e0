"""More steps of tools/server_diff.py: seeded threads (supersteps), search extract, a paused subgraph's
state, semantic store search, ttl options."""

# ruff: noqa: B023  # each step's lambda is called at once by the Recorder
from __future__ import annotations

from typing import Any

from server_diff_scenario import _msg  # pyright: ignore[reportMissingImports]


def _status(fn: Any) -> Any:
    """Only the HTTP status of a call expected to fail (the wording of errors differs by design)."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the SDK's HTTP errors carry the response
        response = getattr(exc, "response", None)
        return {"status": getattr(response, "status_code", type(exc).__name__)}
    return {"status": "ok"}


def _no_interrupt_ids(value: Any) -> Any:
    """``value`` without interrupt ids (each library derives its own; known to differ)."""
    if isinstance(value, dict):
        return {
            k: "<id>" if k == "id" and "value" in value else _no_interrupt_ids(v) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_no_interrupt_ids(v) for v in value]
    return value


def more_steps(client: Any, rec: Any) -> None:
    """The steps (graphs ``agent`` and ``asks_inside``; the store's index embeds the field ``text``)."""
    seeded = rec(
        "more.supersteps",
        lambda: client.threads.create(
            graph_id="agent",
            supersteps=[
                {"updates": [{"values": {**_msg("hi"), "turns": 1}, "as_node": "__start__"}]},
                {"updates": [{"values": {"messages": [{"role": "ai", "content": "yo"}]}, "as_node": "chat"}]},
            ],
        ),
    )
    if seeded:
        tid = seeded["thread_id"]
        rec("more.supersteps_state", lambda: client.threads.get_state(tid))
        rec("more.supersteps_history", lambda: client.threads.get_history(tid))
        rec(
            "more.extract",
            lambda: client.threads.search(
                ids=[tid],
                extract={
                    "last": "values.messages[-1].content",
                    "graph": "metadata.graph_id",
                    "no": "values.x.y",
                },
            ),
        )
        rec(
            "more.extract_select",
            lambda: client.threads.search(
                ids=[tid], select=["thread_id"], extract={"g": "metadata.graph_id"}
            ),
        )
    rec(
        "more.extract_reserved_422",
        lambda: _status(lambda: client.threads.search(extract={"status": "metadata.a"})),
    )
    rec("more.extract_root_422", lambda: _status(lambda: client.threads.search(extract={"a": "foo.a"})))

    sub = client.threads.create()["thread_id"]
    rec("more.sub_run", lambda: _no_interrupt_ids(client.runs.wait(sub, "asks_inside", input=_msg("hi"))))
    plain = rec("more.sub_state", lambda: _no_interrupt_ids(client.threads.get_state(sub)))
    rec("more.sub_state_subgraphs", lambda: _no_interrupt_ids(client.threads.get_state(sub, subgraphs=True)))
    if plain and plain["tasks"] and plain["tasks"][0]["checkpoint"]:
        ns = plain["tasks"][0]["checkpoint"]["checkpoint_ns"]
        rec(
            "more.sub_state_namespace",
            lambda: _no_interrupt_ids(client.threads.get_state(sub, checkpoint={"checkpoint_ns": ns})),
        )
    asked = client.threads.get_state(sub)["interrupts"]
    if asked:
        answer = {asked[0]["id"]: "yes"}
        rec("more.sub_resume", lambda: client.runs.wait(sub, "asks_inside", command={"resume": answer}))

    for key, text in (("a", "the cat sat"), ("b", "dog dog dog"), ("c", "fish and cat")):
        client.store.put_item(["sem", "u"], key, {"text": text})
    client.store.put_item(["sem", "v"], "d", {"other": "none"})
    client.store.put_item(["sem", "u"], "e", {"text": "cat cat"}, index=False)
    rec("more.search_query", lambda: client.store.search_items(["sem"], query="cat"))
    rec("more.search_query_page", lambda: client.store.search_items(["sem"], query="dog", limit=2, offset=1))
    rec(
        "more.search_query_filter",
        lambda: client.store.search_items(["sem"], query="cat", filter={"text": "dog dog dog"}),
    )

    rec("more.thread_ttl", lambda: client.threads.create(ttl=60, metadata={"ttl": "yes"}))
    rec(
        "more.thread_ttl_keep_latest",
        lambda: client.threads.create(ttl={"strategy": "keep_latest", "ttl": 60}),
    )
    rec("more.item_ttl", lambda: client.store.put_item(["ttl"], "k", {"v": 1}, ttl=60))
    rec("more.item_ttl_get", lambda: client.store.get_item(["ttl"], "k", refresh_ttl=True))
