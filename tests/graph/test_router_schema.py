"""A routing function that annotates its state with a schema of its own reads that schema's keys."""

from __future__ import annotations

import operator
from typing import Annotated, Any

from pydantic import BaseModel
from typing_extensions import TypedDict

from plait.graph import END, START, StateGraph


class Overall(TypedDict):
    foo: Annotated[int, operator.add]
    bar: str


class RouterState(TypedDict):
    baz: str


class Node2State(TypedDict):
    foo: Annotated[int, operator.add]
    baz: str


def _graph(router: Any) -> Any:
    def node_1(state: Overall) -> dict[str, Any]:
        return {"foo": 1, "baz": "meow"}

    def node_2(state: Node2State) -> dict[str, Any]:
        return {"foo": 1, "bar": state["baz"]}

    builder = StateGraph(Overall)
    builder.add_node(node_1)
    builder.add_node(node_2)
    builder.add_edge(START, "node_1")
    builder.add_conditional_edges("node_1", router)
    return builder.compile()


def test_a_router_with_its_own_typed_dict_gets_only_its_keys_private_ones_included() -> None:
    seen: list[dict[str, Any]] = []

    def router(state: RouterState) -> str:
        seen.append(dict(state))
        return "node_2" if state["baz"] == "meow" else END

    assert _graph(router).invoke({"foo": 0}) == {"foo": 2, "bar": "meow"}
    assert seen == [{"baz": "meow"}]


class Seen(BaseModel):
    baz: str


def test_a_router_with_a_pydantic_schema_gets_the_model() -> None:
    got: list[Any] = []

    def router(state: Seen) -> str:
        got.append(state)
        return "node_2"

    assert _graph(router).invoke({"foo": 0}) == {"foo": 2, "bar": "meow"}
    assert got == [Seen(baz="meow")]


def test_a_router_on_the_graph_state_gets_the_whole_state() -> None:
    seen: list[dict[str, Any]] = []

    def typed(state: Overall) -> str:
        seen.append(dict(state))
        return END

    assert _graph(typed).invoke({"foo": 0, "bar": "b"}) == {"foo": 1, "bar": "b"}
    assert seen == [{"foo": 1, "bar": "b"}]


def test_an_unannotated_router_gets_the_whole_state() -> None:
    seen: list[dict[str, Any]] = []

    def bare(state):  # type: ignore[no-untyped-def]  # noqa: ANN001 - no annotation on purpose
        seen.append(dict(state))
        return END

    assert _graph(bare).invoke({"foo": 0, "bar": "b"}) == {"foo": 1, "bar": "b"}
    assert seen == [{"foo": 1, "bar": "b"}]


def test_a_router_with_its_own_schema_and_a_config_parameter_gets_both() -> None:
    seen: list[Any] = []

    def router(state: RouterState, config: dict[str, Any]) -> str:
        seen.append((dict(state), config["configurable"]["who"]))
        return END

    _graph(router).invoke({"foo": 0}, {"configurable": {"who": "me"}})
    assert seen == [({"baz": "meow"}, "me")]


class NodeIn(TypedDict):
    foo: Annotated[int, operator.add]


def test_an_unannotated_router_reads_its_source_nodes_input_schema() -> None:
    seen: list[dict[str, Any]] = []

    def counted(state: NodeIn) -> dict[str, Any]:
        return {"foo": 1}

    def bare(state):  # type: ignore[no-untyped-def]  # noqa: ANN001 - no annotation on purpose
        seen.append(dict(state))
        return END

    builder = StateGraph(Overall).add_node("counted", counted).add_edge(START, "counted")
    graph = builder.add_conditional_edges("counted", bare).compile()
    assert graph.invoke({"foo": 0, "bar": "b"}) == {"foo": 1, "bar": "b"}
    assert seen == [{"foo": 1}]
