"""The new stores reach graph code: ``compile(store=...)``, ``get_store()``, ``Runtime.store``, a ``store`` parameter."""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Annotated, Any

from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.config import get_store
from plait.graph import END, START, StateGraph
from plait.runtime import Runtime
from plait.store.base import BaseStore
from plait.store.sqlite import SqliteStore
from plait.store.sqlite.aio import AsyncSqliteStore


class State(TypedDict):
    user: str
    seen: Annotated[int, operator.add]


def remember(state: State, runtime: Runtime) -> dict[str, Any]:
    store = runtime.store
    assert store is get_store()
    item = store.get(("users", state["user"]), "visits")
    count = (item.value["count"] if item else 0) + 1
    store.put(("users", state["user"]), "visits", {"count": count})
    return {"seen": count}


def recall(state: State, *, store: BaseStore) -> dict[str, Any]:
    hits = store.search(("users",))
    return {"seen": 100 * len(hits)}


def graph() -> Any:
    builder = StateGraph(State).add_node("remember", remember).add_node("recall", recall)
    builder.add_edge(START, "remember").add_edge("remember", "recall").add_edge("recall", END)
    return builder


def test_sqlite_store_reaches_nodes(driver: Any, tmp_path: Path) -> None:
    path = tmp_path / "mem.db"
    with SqliteStore.from_conn_string(path) as store:
        app = graph().compile(checkpointer=InMemorySaver(), store=store)
        out = driver.invoke(app, {"user": "ann", "seen": 0}, {"configurable": {"thread_id": "t1"}})
        out = driver.invoke(app, {"user": "ann", "seen": 0}, {"configurable": {"thread_id": "t2"}})
        assert out["seen"] == 2 + 100
    with SqliteStore.from_conn_string(path) as again:  # it outlives the process's store object
        assert again.get(("users", "ann"), "visits").value == {"count": 2}


def test_async_sqlite_store_serves_sync_nodes_under_ainvoke(tmp_path: Path) -> None:
    import asyncio

    async def main() -> int:
        async with AsyncSqliteStore.from_conn_string(tmp_path / "a.db") as store:
            app = graph().compile(store=store)
            out = await app.ainvoke({"user": "bo", "seen": 0})
            item = await store.aget(("users", "bo"), "visits")
            assert item is not None and item.value == {"count": 1}
            return int(out["seen"])

    assert asyncio.run(main()) == 101
