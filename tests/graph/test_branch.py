"""Conditional edges, waiting edges, Send and Command routing."""

import operator
from typing import Annotated, Literal, TypedDict

import pytest

from plait.channels import EphemeralValue
from plait.constants import END, START
from plait.errors import InvalidUpdateError
from plait.graph import StateGraph
from plait.types import Command, Send, StateUpdate


class S(TypedDict):
    x: int
    log: Annotated[list, operator.add]


def note(name: str):
    def node(state: S) -> dict:
        return {"log": [name]}

    node.__name__ = name
    return node


def test_conditional_edge_with_dict_path_map() -> None:
    g = StateGraph(S)
    g.add_node("start", note("start"))
    g.add_node("even", note("even"))
    g.add_node("odd", note("odd"))
    g.add_edge(START, "start")
    g.add_conditional_edges("start", lambda s: s["x"] % 2 == 0, {True: "even", False: "odd"})
    app = g.compile()
    assert app.invoke({"x": 2})["log"] == ["start", "even"]
    assert app.invoke({"x": 3})["log"] == ["start", "odd"]


def test_conditional_edge_with_list_path_map() -> None:
    g = StateGraph(S)
    g.add_node("start", note("start"))
    g.add_node("left", note("left"))
    g.add_node("right", note("right"))
    g.add_edge(START, "start")
    g.add_conditional_edges("start", lambda s: "left" if s["x"] < 0 else "right", ["left", "right"])
    assert g.compile().invoke({"x": -1})["log"] == ["start", "left"]


def test_conditional_edge_to_end() -> None:
    g = StateGraph(S)
    g.add_node("start", note("start"))
    g.add_node("more", note("more"))
    g.add_edge(START, "start")
    g.add_conditional_edges("start", lambda s: END if s["x"] else "more", {END: END, "more": "more"})
    assert g.compile().invoke({"x": 1})["log"] == ["start"]


def test_conditional_edge_with_literal_hint() -> None:
    def route(state: S) -> Literal["yes", "no"]:
        return "yes" if state["x"] else "no"

    g = StateGraph(S)
    g.add_node("yes", note("yes"))
    g.add_node("no", note("no"))
    g.add_conditional_edges(START, route)
    assert g.compile().invoke({"x": 0})["log"] == ["no"]


def test_literal_hint_with_unknown_target_fails_compile() -> None:
    def route(state: S) -> Literal["yes", "missing"]:
        return "yes"

    g = StateGraph(S)
    g.add_node("yes", note("yes"))
    g.add_conditional_edges(START, route)
    with pytest.raises(ValueError, match="missing"):
        g.compile()


def test_path_map_with_unknown_target_fails_compile() -> None:
    g = StateGraph(S)
    g.add_node("a", note("a"))
    g.add_edge(START, "a")
    g.add_conditional_edges("a", lambda s: "b", {"b": "nowhere"})
    with pytest.raises(ValueError, match="nowhere"):
        g.compile()


def test_path_map_with_unknown_target_message() -> None:
    g = StateGraph(S)
    g.add_node("a", note("a"))
    g.add_edge(START, "a")
    g.add_conditional_edges("a", lambda s: "b", {"b": "nowhere"})
    with pytest.raises(ValueError) as info:
        g.compile()
    assert str(info.value) == "At 'a' node, 'condition' branch found unknown target 'nowhere'"


def test_conditional_edge_returning_list_fans_out() -> None:
    g = StateGraph(S)
    for n in ("a", "b", "c"):
        g.add_node(n, note(n))
    g.add_conditional_edges(START, lambda s: ["c", "a"])
    assert g.compile().invoke({"x": 0})["log"] == ["a", "c"]


def test_conditional_entry_path_receives_run_config() -> None:
    seen = []

    def route(state, config):
        seen.append(config.get("configurable", {}).get("who"))
        return "a"

    g = StateGraph(S)
    g.add_node("a", note("a"))
    g.add_conditional_edges(START, route, ["a"])
    g.compile().invoke({"x": 0}, {"configurable": {"who": "me"}})
    assert seen == ["me"]


def test_conditional_edge_after_node_receives_run_config() -> None:
    seen = []

    def route(state, config):
        seen.append(config.get("configurable", {}).get("who"))
        return END

    g = StateGraph(S)
    g.add_node("a", note("a"))
    g.add_edge(START, "a")
    g.add_conditional_edges("a", route, [END])
    g.compile().invoke({"x": 0}, {"configurable": {"who": "me"}})
    assert seen == ["me"]


def test_conditional_edge_sees_state_after_node() -> None:
    seen = []
    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": 42})
    g.add_edge(START, "a")
    g.add_conditional_edges("a", lambda s: seen.append(s["x"]) or END, [END])
    g.compile().invoke({"x": 0})
    assert seen == [42]


def test_unknown_conditional_destination_raises() -> None:
    # plait deliberately differs from LangGraph, which silently ignores it
    g = StateGraph(S)
    g.add_node("a", note("a"))
    g.add_edge(START, "a")
    g.add_conditional_edges("a", lambda s: "ghost")
    with pytest.raises(InvalidUpdateError, match="ghost"):
        g.compile().invoke({"x": 0})


def test_value_missing_from_path_map_raises() -> None:
    g = StateGraph(S)
    g.add_node("a", note("a"))
    g.add_edge(START, "a")
    g.add_conditional_edges("a", lambda s: "z", {"y": "a"})
    with pytest.raises(InvalidUpdateError):
        g.compile().invoke({"x": 0})


def test_loop_until_condition() -> None:
    g = StateGraph(S)
    g.add_node("inc", lambda s: {"x": s["x"] + 1})
    g.add_edge(START, "inc")
    g.add_conditional_edges("inc", lambda s: "inc" if s["x"] < 5 else END)
    assert g.compile().invoke({"x": 0})["x"] == 5


def test_duplicate_branch_name_rejected() -> None:
    def route(s):
        return END

    g = StateGraph(S)
    g.add_node("a", note("a"))
    g.add_conditional_edges("a", route)
    with pytest.raises(ValueError, match="^Branch with name `route` already exists for node `a`$"):
        g.add_conditional_edges("a", route)


# -- waiting edges ---------------------------------------------------------------


def test_waiting_edge_runs_target_once_after_both() -> None:
    g = StateGraph(S)
    for n in ("a", "b", "c"):
        g.add_node(n, note(n))
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    g.add_edge(["a", "b"], "c")
    assert g.compile().invoke({"x": 0})["log"] == ["a", "b", "c"]


def test_waiting_edge_with_branches_of_different_length() -> None:
    g = StateGraph(S)
    for n in ("a", "b1", "b2", "b3", "join"):
        g.add_node(n, note(n))
    g.add_edge(START, "a")
    g.add_edge(START, "b1")
    g.add_edge("b1", "b2")
    g.add_edge("b2", "b3")
    g.add_edge(["a", "b3"], "join")
    log = g.compile().invoke({"x": 0})["log"]
    assert log.count("join") == 1
    assert log[-1] == "join"
    assert log == ["a", "b1", "b2", "b3", "join"]


def test_plain_edges_from_uneven_branches_run_target_twice() -> None:
    g = StateGraph(S)
    for n in ("a", "b1", "b2", "c"):
        g.add_node(n, note(n))
    g.add_edge(START, "a")
    g.add_edge(START, "b1")
    g.add_edge("b1", "b2")
    g.add_edge("a", "c")
    g.add_edge("b2", "c")
    assert g.compile().invoke({"x": 0})["log"].count("c") == 2


def test_waiting_edge_target_not_run_if_one_source_skipped() -> None:
    g = StateGraph(S)
    for n in ("a", "b", "c"):
        g.add_node(n, note(n))
    g.add_edge(START, "a")
    g.add_edge(["a", "b"], "c")
    assert g.compile().invoke({"x": 0})["log"] == ["a"]


# -- Send --------------------------------------------------------------------------


class MapState(TypedDict):
    subjects: list
    results: Annotated[list, operator.add]


def test_send_map_reduce() -> None:
    def fan_out(state: MapState):
        return [Send("work", {"subject": s}) for s in state["subjects"]]

    def work(arg: dict):
        return {"results": [arg["subject"].upper()]}

    g = StateGraph(MapState)
    g.add_node("work", work)
    g.add_conditional_edges(START, fan_out, ["work"])
    out = g.compile().invoke({"subjects": ["a", "b", "c"]})
    assert sorted(out["results"]) == ["A", "B", "C"]


def test_send_results_then_continue_to_reduce_node() -> None:
    def work(arg):
        return {"results": [arg * 2]}

    def total(state):
        return {"results": [sum(state["results"])]}

    g = StateGraph(MapState)
    g.add_node("work", work)
    g.add_node("total", total)
    g.add_conditional_edges(START, lambda s: [Send("work", n) for n in s["subjects"]])
    g.add_edge("work", "total")
    out = g.compile().invoke({"subjects": [1, 2, 3]})
    assert out["results"][-1] == 12
    assert out["results"].count(12) == 1


def test_send_to_unknown_node_raises() -> None:
    g = StateGraph(MapState)
    g.add_node("work", lambda a: None)
    g.add_conditional_edges(START, lambda s: [Send("nope", 1)])
    with pytest.raises(InvalidUpdateError):
        g.compile().invoke({"subjects": []})


# -- Command -----------------------------------------------------------------------


def test_command_update_and_goto() -> None:
    def decide(state: S) -> Command[Literal["b", "c"]]:
        return Command(update={"log": ["decide"]}, goto="c")

    g = StateGraph(S)
    g.add_node("decide", decide)
    g.add_node("b", note("b"))
    g.add_node("c", note("c"))
    g.add_edge(START, "decide")
    assert g.compile().invoke({"x": 0})["log"] == ["decide", "c"]


def test_command_goto_list_and_send() -> None:
    def decide(state):
        return Command(goto=["b", Send("c", {"x": 9, "log": []})])

    seen = []
    g = StateGraph(S)
    g.add_node("decide", decide)
    g.add_node("b", note("b"))
    g.add_node("c", lambda s: seen.append(s["x"]) or {"log": ["c"]})
    g.add_edge(START, "decide")
    assert sorted(g.compile().invoke({"x": 0})["log"]) == ["b", "c"]
    assert seen == [9]


def test_command_goto_end() -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: Command(update={"x": 5}, goto=END))
    g.add_edge(START, "a")
    assert g.compile().invoke({"x": 0})["x"] == 5


def test_command_goto_plus_static_edge_runs_both() -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: Command(goto="c"))
    g.add_node("b", note("b"))
    g.add_node("c", note("c"))
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    assert g.compile().invoke({"x": 0})["log"] == ["b", "c"]


def test_command_as_invoke_input_updates_and_routes() -> None:
    # as in LangGraph, the START edge still fires alongside the goto
    g = StateGraph(S)
    g.add_node("a", note("a"))
    g.add_node("b", note("b"))
    g.add_edge(START, "a")
    out = g.compile().invoke(Command(update={"x": 3}, goto="b"))
    assert out == {"x": 3, "log": ["a", "b"]}


class Routed(TypedDict):
    log: Annotated[list, operator.add]
    last: str


def _seen_by_routers(seen: dict[str, list]) -> StateGraph:
    """``a``, ``b`` and ``c`` run in one step; ``a`` and ``c`` have conditional edges that record what they read."""

    def recorder(name: str):
        def route(state: Routed) -> str:
            seen[name] = [sorted(state["log"]), state.get("last")]
            return END

        return route

    g = StateGraph(Routed)
    g.add_node("a", lambda s: {"log": ["a"], "last": "a"})
    g.add_node("b", lambda s: {"log": ["b"]})
    g.add_node("c", lambda s: {"log": ["c"]})
    for name in "abc":
        g.add_edge(START, name)
    g.add_conditional_edges("a", recorder("a"), [END])
    g.add_conditional_edges("c", recorder("c"), [END])
    return g


def test_a_router_reads_only_its_own_nodes_writes_of_a_parallel_step(driver) -> None:
    # as in LangGraph: the step's snapshot with the node's own writes merged, not its siblings'
    seen: dict[str, list] = {}
    out = driver.invoke(_seen_by_routers(seen).compile(), {"log": ["in"]})
    assert out == {"log": ["in", "a", "b", "c"], "last": "a"}
    assert seen == {"a": [["a", "in"], "a"], "c": [["c", "in"], None]}


def test_a_router_of_send_tasks_reads_the_state_with_its_tasks_writes(driver) -> None:
    seen: list[list] = []

    def route(state: Routed) -> str:
        seen.append(sorted(state["log"]))
        return END

    g = StateGraph(Routed)
    g.add_node("w", lambda arg: {"log": [f"w{arg['i']}"]})
    g.add_conditional_edges(START, lambda s: [Send("w", {"i": i}) for i in range(3)], ["w"])
    g.add_conditional_edges("w", route, [END])
    assert driver.invoke(g.compile(), {"log": []})["log"] == ["w0", "w1", "w2"]
    assert sorted(seen) == [["w0"], ["w1"], ["w2"]]


def test_routers_of_one_superstep_of_updates_read_their_own_update(saver, thread) -> None:
    seen: dict[str, list] = {}
    app = _seen_by_routers(seen).compile(checkpointer=saver)
    app.invoke({"log": []}, thread)
    seen.clear()
    app.bulk_update_state(thread, [[StateUpdate({"log": ["ua"]}, "a"), StateUpdate({"log": ["uc"]}, "c")]])
    assert seen == {"a": [["a", "b", "c", "ua"], "a"], "c": [["a", "b", "c", "uc"], "a"]}


def test_router_views_survive_a_reducer_that_changes_its_first_argument(driver) -> None:
    def extend(old: list, new: list) -> list:
        old.extend(new)  # in place: the step's merge must not reach the routers' snapshot, nor the reverse
        return old

    class InPlace(TypedDict):
        log: Annotated[list, extend]

    seen: list[list] = []

    def route(state: InPlace) -> str:
        seen.append(list(state["log"]))
        return END

    g = StateGraph(InPlace)
    g.add_node("a", lambda s: {"log": ["a"]})
    g.add_node("b", lambda s: {"log": ["b"]})
    g.add_edge(START, "a").add_edge(START, "b")
    g.add_conditional_edges("a", route, [END])
    assert driver.invoke(g.compile(), {"log": ["in"]}) == {"log": ["in", "a", "b"]}
    assert seen == [["in", "a"]]


def test_a_router_does_not_see_a_volatile_key_the_step_before_wrote(driver) -> None:
    class Flagged(TypedDict):
        log: Annotated[list, operator.add]
        flag: Annotated[str, EphemeralValue(str)]

    seen: list[object] = []

    def route(state: Flagged) -> str:
        seen.append(state.get("flag"))
        return END

    g = StateGraph(Flagged)
    g.add_node("p", lambda s: {"flag": "from-p"})
    g.add_node("a", lambda s: {"log": ["a"]})
    g.add_node("b", lambda s: {"log": ["b"]})
    g.add_edge(START, "p").add_edge("p", "a").add_edge("p", "b")
    g.add_conditional_edges("a", route, [END])
    driver.invoke(g.compile(), {"log": []})
    assert seen == [None], "as after the step's merge (and in LangGraph)"


def test_router_views_survive_a_siblings_reducer_that_changes_its_first_argument(driver) -> None:
    def extend(old: list, new: list) -> list:
        old.extend(new)
        return old

    class Mixed(TypedDict):
        log: Annotated[list, extend]
        other: Annotated[list, operator.add]

    seen: list[list] = []

    def route(state: Mixed) -> str:
        seen.append(list(state["log"]))
        return END

    g = StateGraph(Mixed)
    g.add_node("a", lambda s: {"other": ["a"]})  # the routed task does not write log; its sibling does
    g.add_node("b", lambda s: {"log": ["b"]})
    g.add_edge(START, "a").add_edge(START, "b")
    g.add_conditional_edges("a", route, [END])
    assert driver.invoke(g.compile(), {"log": ["in"]}) == {"log": ["in", "b"], "other": ["a"]}
    assert seen == [["in"]]
