"""``get_graph().draw_mermaid()``: the Mermaid text users paste into docs."""

from typing import Literal, TypedDict

from plait.constants import END, START
from plait.graph import StateGraph


class S(TypedDict):
    x: int


def _noop(state: S) -> dict:
    return {}


def _lines(graph) -> list[str]:
    return [line.strip() for line in graph.compile().get_graph().draw_mermaid().splitlines()]


def _linear() -> StateGraph:
    g = StateGraph(S)
    g.add_node("a", _noop)
    g.add_node("b", _noop)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    return g


def test_mermaid_header_and_styles() -> None:
    text = _linear().compile().get_graph().draw_mermaid()
    assert text.startswith("---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n")
    assert "\tclassDef default fill:#f2f0ff,line-height:1.2\n" in text
    assert text.endswith("\tclassDef last fill:#bfb6fc\n")


def test_mermaid_nodes() -> None:
    lines = _lines(_linear())
    assert "__start__([<p>__start__</p>]):::first" in lines
    assert "a(a)" in lines
    assert "b(b)" in lines
    assert "__end__([<p>__end__</p>]):::last" in lines


def test_mermaid_plain_edges() -> None:
    lines = _lines(_linear())
    assert "__start__ --> a;" in lines
    assert "a --> b;" in lines
    assert "b --> __end__;" in lines


def test_mermaid_conditional_edges_with_labels() -> None:
    g = StateGraph(S)
    g.add_node("a", _noop)
    g.add_node("b", _noop)
    g.add_edge(START, "a")
    g.add_conditional_edges("a", lambda s: "go", {"go": "b", "stop": END})
    lines = _lines(g)
    assert "a -. &nbsp;go&nbsp; .-> b;" in lines
    assert "a -. &nbsp;stop&nbsp; .-> __end__;" in lines


def test_mermaid_conditional_edges_from_literal_are_dotted_unlabelled() -> None:
    def route(s: S) -> Literal["a", "b"]:
        return "a"

    g = StateGraph(S)
    g.add_node("a", _noop)
    g.add_node("b", _noop)
    g.add_conditional_edges(START, route)
    lines = _lines(g)
    assert "__start__ -.-> a;" in lines
    assert "__start__ -.-> b;" in lines


def test_mermaid_node_without_edges_goes_to_end() -> None:
    g = StateGraph(S)
    g.add_node("only", _noop)
    g.add_edge(START, "only")
    lines = _lines(g)
    assert "only --> __end__;" in lines


def test_mermaid_waiting_edge_draws_each_source() -> None:
    g = StateGraph(S)
    for n in ("a", "b", "c"):
        g.add_node(n, _noop)
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    g.add_edge(["a", "b"], "c")
    lines = _lines(g)
    assert "a --> c;" in lines and "b --> c;" in lines


def test_mermaid_without_styles() -> None:
    text = _linear().compile().get_graph().draw_mermaid(with_styles=False)
    assert "classDef" not in text


def test_xray_draws_subgraph_nodes_in_place() -> None:
    class _S(TypedDict):
        x: int

    inner = (
        StateGraph(_S)
        .add_node("i1", lambda s: s)
        .add_node("i2", lambda s: s)
        .add_edge(START, "i1")
        .add_edge("i1", "i2")
        .compile()
    )
    middle = StateGraph(_S).add_node("deep", inner).add_edge(START, "deep").compile()
    graph = (
        StateGraph(_S)
        .add_node("a", lambda s: s)
        .add_node("sub", middle)
        .add_edge(START, "a")
        .add_edge("a", "sub")
        .add_edge("sub", END)
        .compile()
    )
    assert "sub" in graph.get_graph().nodes
    # as in LangGraph: the subgraph's nodes are appended where the subgraph node was removed
    assert list(graph.get_graph(xray=1).nodes) == [START, "a", END, "sub:deep"]
    full = graph.get_graph(xray=True)
    assert list(full.nodes) == [START, "a", END, "sub:deep:i1", "sub:deep:i2"]
    assert [(e.source, e.target) for e in full.edges] == [
        (START, "a"),
        ("a", "sub:deep:i1"),
        ("sub:deep:i2", END),
        ("sub:deep:i1", "sub:deep:i2"),
    ]


def test_get_graph_is_a_langchain_core_graph() -> None:
    from langchain_core.runnables.graph import Graph

    drawn = _linear().compile().get_graph()
    assert isinstance(drawn, Graph)
    assert [(e.source, e.target, e.conditional) for e in drawn.edges] == [
        (START, "a", False),
        ("a", "b", False),
        ("b", END, False),
    ]
    assert drawn.draw_ascii()  # an edge list when grandalf is missing


def test_edges_follow_a_dry_run_of_the_wiring() -> None:
    # LangGraph's rules: an edge to END is drawn only for nodes that trigger nothing; a graph
    # that never reaches END gets a dotted edge from the node its dry run ends on.
    g = StateGraph(S)
    for n in ("a", "b", "c", "orphan"):
        g.add_node(n, _noop)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("a", END)
    g.add_edge("b", "c")
    lines = _lines(g)
    assert [line for line in lines if "-->" in line] == [
        "__start__ --> a;",
        "a --> b;",
        "b --> c;",
        "c --> __end__;",
    ]
    cycle = StateGraph(S).add_node("a", _noop).add_node("b", _noop)
    cycle.add_edge(START, "a").add_edge("a", "b").add_edge("b", "a")
    assert "b -.-> __end__;" in _lines(cycle)


def test_node_metadata_is_drawn() -> None:
    text = _linear().compile(interrupt_before=["b"]).get_graph().draw_mermaid()
    assert "\tb(b<hr/><small><em>__interrupt = before</em></small>)\n" in text
