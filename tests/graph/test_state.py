"""State semantics of ``StateGraph``: overwrite vs reducer, zero values, defaults, schema kinds."""

import dataclasses
import operator
from typing import Annotated, Literal, Optional, TypedDict

import pytest

from plait.constants import END, START
from plait.graph import StateGraph


def _single(schema, node, input_):
    g = StateGraph(schema)
    g.add_node("n", node)
    g.add_edge(START, "n")
    return g.compile().invoke(input_)


# -- overwrite vs reducer -----------------------------------------------------


def test_key_without_reducer_is_overwritten_by_node() -> None:
    class S(TypedDict):
        x: int

    assert _single(S, lambda s: {"x": 7}, {"x": 1}) == {"x": 7}


def test_key_with_reducer_merges_node_write_into_input() -> None:
    class S(TypedDict):
        x: Annotated[list, operator.add]

    assert _single(S, lambda s: {"x": [2]}, {"x": [1]}) == {"x": [1, 2]}


def test_reducer_accumulates_across_sequential_nodes() -> None:
    class S(TypedDict):
        total: Annotated[int, operator.add]

    g = StateGraph(S)
    g.add_sequence([("a", lambda s: {"total": 1}), ("b", lambda s: {"total": 10})])
    g.add_edge(START, "a")
    assert g.compile().invoke({"total": 100}) == {"total": 111}


def test_keys_not_written_keep_their_value() -> None:
    class S(TypedDict):
        x: int
        y: str

    assert _single(S, lambda s: {"x": 2}, {"x": 1, "y": "keep"}) == {"x": 2, "y": "keep"}


def test_unset_key_without_reducer_is_absent_from_output() -> None:
    class S(TypedDict):
        x: int
        y: int

    assert _single(S, lambda s: {"x": 1}, {"x": 0}) == {"x": 1}


def test_node_sees_only_set_keys() -> None:
    class S(TypedDict):
        x: int
        y: int

    seen = {}
    _single(S, lambda s: seen.update(s), {"x": 3})
    assert seen == {"x": 3}


# -- zero values ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotation", "write", "expected"),
    [
        (list, [1], [1]),
        (int, 5, 5),
        (str, "ab", "ab"),
        (float, 1.5, 1.5),
        (tuple, (1,), (1,)),
        (bool, True, True),
    ],
    ids=["list", "int", "str", "float", "tuple", "bool"],
)
def test_reducer_starts_from_zero_value_of_type(annotation, write, expected) -> None:
    seen = {}

    class S(TypedDict):
        v: Annotated[annotation, operator.add] if annotation is not bool else Annotated[bool, operator.or_]
        other: int

    def node(s):
        seen.update(s)
        return {"v": write}

    out = _single(S, node, {"other": 0})
    assert seen["v"] == annotation()
    assert out["v"] == expected


def test_dict_reducer_starts_from_empty_dict() -> None:
    class S(TypedDict):
        d: Annotated[dict, operator.or_]
        other: int

    seen = {}
    out = _single(S, lambda s: seen.update(s) or {"d": {"a": 1}}, {"other": 0})
    assert seen["d"] == {}
    assert out["d"] == {"a": 1}


def test_set_reducer_starts_from_empty_set() -> None:
    class S(TypedDict):
        tags: Annotated[set, operator.or_]
        other: int

    seen = {}
    out = _single(S, lambda s: seen.update(s) or {"tags": {"x"}}, {"other": 0})
    assert seen["tags"] == set()
    assert out["tags"] == {"x"}


def test_parametrised_list_annotation_has_zero_value() -> None:
    class S(TypedDict):
        names: Annotated[list[str], operator.add]
        other: int

    assert _single(S, lambda s: None, {"other": 0}) == {"names": [], "other": 0}


def test_zero_value_is_fresh_per_run() -> None:
    class S(TypedDict):
        names: Annotated[list, operator.add]
        other: int

    g = StateGraph(S)
    g.add_node("n", lambda s: {"names": ["x"]})
    g.add_edge(START, "n")
    app = g.compile()
    app.invoke({"other": 0})
    assert app.invoke({"other": 0})["names"] == ["x"]


def test_typeddict_key_named_like_dict_method_has_no_default() -> None:
    class S(TypedDict):
        x: int
        values: list

    seen = {}
    _single(S, lambda s: seen.update(s), {"x": 1})
    assert seen == {"x": 1}


def test_reducer_key_named_items_starts_from_zero_value() -> None:
    class S(TypedDict):
        items: Annotated[list, operator.add]
        other: int

    assert _single(S, lambda s: {"items": ["x"]}, {"other": 0})["items"] == ["x"]


def test_optional_reducer_key_has_no_zero_value() -> None:
    class S(TypedDict):
        v: Annotated[Optional[int], operator.add]  # noqa: UP045 - what users write
        other: int

    seen = {}
    out = _single(S, lambda s: seen.update(s) or {"v": 4}, {"other": 0})
    assert "v" not in seen
    assert out["v"] == 4  # first write stored as is


def test_literal_reducer_key_has_no_zero_value() -> None:
    def last(a, b):
        return b

    class S(TypedDict):
        mode: Annotated[Literal["a", "b"], last]
        other: int

    seen = {}
    out = _single(S, lambda s: seen.update(s) or {"mode": "b"}, {"other": 0})
    assert "mode" not in seen
    assert out["mode"] == "b"


# -- reducers -----------------------------------------------------------------


def test_invoke_input_goes_through_reducer() -> None:
    def concat(a, b):
        return a + [f"in:{x}" for x in b]

    class S(TypedDict):
        log: Annotated[list, concat]

    assert _single(S, lambda s: None, {"log": ["a"]}) == {"log": ["in:a"]}


def test_reducer_exception_propagates_unchanged() -> None:
    class Boom(Exception):
        pass

    err = Boom("no")

    def explode(a, b):
        raise err

    class S(TypedDict):
        v: Annotated[int, explode]

    with pytest.raises(Boom) as info:
        _single(S, lambda s: {"v": 1}, {"v": 0} if False else {})
    assert info.value is err


def test_builtin_max_as_reducer() -> None:
    class S(TypedDict):
        best: Annotated[int, max]

    g = StateGraph(S)
    g.add_node("a", lambda s: {"best": 3})
    g.add_node("b", lambda s: {"best": 9})
    g.add_node("c", lambda s: {"best": 5})
    for n in "abc":
        g.add_edge(START, n)
    assert g.compile().invoke({"best": 4}) == {"best": 9}


def test_builtin_min_as_reducer() -> None:
    class S(TypedDict):
        low: Annotated[int, min]
        x: int

    g = StateGraph(S)
    g.add_sequence([("a", lambda s: {"low": 3}), ("b", lambda s: {"low": 8})])
    g.add_edge(START, "a")
    assert g.compile().invoke({"low": 5})["low"] == 0  # zero value of int is 0


@pytest.mark.parametrize(
    ("reducer", "shown"),
    [
        (lambda a: a, "(a)"),
        (lambda a, b, c: a, "(a, b, c)"),
        (lambda: None, "()"),
    ],
    ids=["one", "three", "zero"],
)
def test_reducer_with_wrong_arity_is_rejected(reducer, shown) -> None:
    class S(TypedDict):
        v: Annotated[int, reducer]

    with pytest.raises(
        ValueError, match=r"^Invalid reducer signature\. Expected \(a, b\) -> c\. Got "
    ) as info:
        StateGraph(S)
    assert str(info.value).endswith(shown)


def test_reducer_with_defaulted_third_arg_is_rejected() -> None:
    def r(a, b, c=None):
        return a

    class S(TypedDict):
        v: Annotated[int, r]

    with pytest.raises(
        ValueError, match=r"Invalid reducer signature\. Expected \(a, b\) -> c\. Got \(a, b, c=None\)"
    ):
        StateGraph(S)


def test_reducer_declared_in_input_schema_is_validated() -> None:
    class S(TypedDict):
        v: int

    class In(TypedDict):
        v: Annotated[int, lambda a: a]

    with pytest.raises(ValueError, match="Invalid reducer signature"):
        StateGraph(S, input_schema=In)


# -- TypedDict class defaults ------------------------------------------------


class WithDefault(TypedDict):
    x: int
    label: str = "default"  # type: ignore[misc]


def test_typeddict_default_visible_to_node_until_written() -> None:
    seen = []
    g = StateGraph(WithDefault)
    g.add_node("a", lambda s: seen.append(s["label"]) or {"label": "set"})
    g.add_node("b", lambda s: seen.append(s["label"]))
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.compile().invoke({"x": 1})
    assert seen == ["default", "set"]


def test_typeddict_explicit_input_wins_over_default() -> None:
    seen = []
    _single(WithDefault, lambda s: seen.append(s["label"]), {"x": 1, "label": "given"})
    assert seen == ["given"]


def test_typeddict_default_seeds_reducer() -> None:
    class S(TypedDict):
        items: Annotated[list, operator.add] = ["seed"]  # type: ignore[misc]
        other: int

    assert _single(S, lambda s: {"items": ["n"]}, {"other": 0})["items"] == ["seed", "n"]


# -- dataclass and pydantic schemas ---------------------------------------------


@dataclasses.dataclass
class DC:
    name: str
    count: int = 0
    items: Annotated[list, operator.add] = dataclasses.field(default_factory=list)


def test_dataclass_node_receives_instance() -> None:
    seen = []

    def node(state: DC):
        seen.append(state)
        return {"count": state.count + 1, "items": ["x"]}

    out = _single(DC, node, {"name": "a"})
    assert isinstance(seen[0], DC) and seen[0].name == "a" and seen[0].count == 0
    assert out == {"name": "a", "count": 1, "items": ["x"]}


def test_dataclass_instance_as_input() -> None:
    out = _single(DC, lambda s: {"count": s.count * 2}, DC(name="z", count=4))
    assert out["count"] == 8 and out["name"] == "z"


def test_dataclass_missing_required_field_fails_in_node_input() -> None:
    calls = []
    with pytest.raises(TypeError):
        _single(DC, lambda s: calls.append(1), {"count": 1})
    assert calls == []


pydantic = pytest.importorskip("pydantic")


class PM(pydantic.BaseModel):
    name: str
    count: int = 0
    items: Annotated[list[str], operator.add] = []


def test_pydantic_node_receives_model() -> None:
    seen = []

    def node(state: PM):
        seen.append(state)
        return {"count": state.count + 1, "items": ["a"]}

    out = _single(PM, node, {"name": "n"})
    assert isinstance(seen[0], PM)
    assert out == {"name": "n", "count": 1, "items": ["a"]}


def test_pydantic_validation_error_before_first_node() -> None:
    calls = []
    with pytest.raises(pydantic.ValidationError):
        _single(PM, lambda s: calls.append(1), {"name": 123})
    assert calls == []


def test_pydantic_model_instance_as_input() -> None:
    out = _single(PM, lambda s: {"count": 5}, PM(name="x"))
    assert out["name"] == "x" and out["count"] == 5


def test_node_may_return_state_object() -> None:
    out = _single(DC, lambda s: DC(name="new", count=3), {"name": "old"})
    assert out["name"] == "new" and out["count"] == 3


# -- parallel snapshot ----------------------------------------------------------


def test_parallel_nodes_read_the_same_snapshot() -> None:
    class S(TypedDict):
        x: int
        seen: Annotated[list, operator.add]

    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": s["x"] + 1, "seen": [("a", s["x"])]})
    g.add_node("b", lambda s: {"seen": [("b", s["x"])]})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    out = g.compile().invoke({"x": 10})
    assert out == {"x": 11, "seen": [("a", 10), ("b", 10)]}


def test_node_input_is_a_copy_mutation_does_not_leak() -> None:
    class S(TypedDict):
        x: int
        y: int

    def mutate(s):
        s["y"] = 99
        return {"x": 2}

    assert _single(S, mutate, {"x": 1}) == {"x": 2}


def test_end_constant_reachable() -> None:
    class S(TypedDict):
        x: int

    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": 1})
    g.add_edge(START, "a")
    g.add_edge("a", END)
    assert g.compile().invoke({"x": 0}) == {"x": 1}
