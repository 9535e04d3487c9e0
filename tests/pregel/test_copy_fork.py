"""``update_state(config, None, as_node="__copy__")`` writes a new checkpoint with its own time, on every saver."""

from __future__ import annotations

import operator
from collections.abc import Iterator
from typing import Annotated, Any

import pytest
from _pg import pg_saver
from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.checkpoint.sqlite import SqliteSaver
from plait.graph import START, StateGraph


class S(TypedDict):
    x: Annotated[list[str], operator.add]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def saver(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Any]:
    if request.param == "memory":
        yield InMemorySaver()
    elif request.param == "sqlite":
        with SqliteSaver.from_conn_string(str(tmp_path / "copy.db")) as sqlite:
            yield sqlite
    else:
        yield from pg_saver()


def _graph(saver: Any) -> Any:
    builder = StateGraph(S).add_node("a", lambda s: {"x": ["a"]}).add_node("b", lambda s: {"x": ["b"]})
    return builder.add_edge(START, "a").add_edge("a", "b").compile(checkpointer=saver)


def test_a_copy_has_its_own_time_and_is_the_newest(saver: Any, driver: Any) -> None:
    graph = _graph(saver)
    config = {"configurable": {"thread_id": "copy"}}
    driver.invoke(graph, {"x": []}, config)
    history = driver.get_state_history(graph, config)
    newest = max(h.created_at for h in history)
    past = next(h for h in history if h.next == ("b",))
    copied = driver.update_state(graph, past.config, None, as_node="__copy__")
    snap = driver.get_state(graph, copied)
    assert snap.created_at > newest > past.created_at  # LangGraph: the fork is stamped when it is made
    assert (snap.metadata["source"], snap.values, snap.next) == ("fork", past.values, ("b",))
    assert snap.parent_config == past.parent_config
    assert driver.get_state(graph, config).created_at == snap.created_at  # the head
    assert [h.created_at for h in driver.get_state_history(graph, config)][0] == snap.created_at
    [info] = [i for i in saver.threads() if i.thread_id == "copy"]
    assert info.updated_at == snap.created_at


def test_a_copy_of_the_first_checkpoint_has_no_parent(saver: Any) -> None:
    graph = _graph(saver)
    config = {"configurable": {"thread_id": "root"}}
    graph.invoke({"x": []}, config)
    first = list(graph.get_state_history(config))[-1]
    assert first.parent_config is None
    snap = graph.get_state(graph.update_state(first.config, None, as_node="__copy__"))
    assert snap.parent_config is None  # as LangGraph: a copy of a root is a root
    assert snap.created_at > first.created_at
    assert graph.invoke(None, snap.config) == {"x": ["a", "b"]}
