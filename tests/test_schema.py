"""Input/output schemas, private channels and node input annotations."""

import operator
from typing import Annotated, TypedDict

from plait.constants import START
from plait.graph import StateGraph


class In(TypedDict):
    question: str


class Out(TypedDict):
    answer: str


class Full(TypedDict):
    question: str
    answer: str
    scratch: str


def test_output_schema_filters_result() -> None:
    g = StateGraph(Full, input_schema=In, output_schema=Out)
    g.add_node("a", lambda s: {"answer": s["question"].upper(), "scratch": "tmp"})
    g.add_edge(START, "a")
    assert g.compile().invoke({"question": "hi"}) == {"answer": "HI"}


def test_input_schema_drops_unknown_input_keys() -> None:
    seen = {}
    g = StateGraph(Full, input_schema=In, output_schema=Out)
    g.add_node("a", lambda s: seen.update(s) or {"answer": "x"})
    g.add_edge(START, "a")
    g.compile().invoke({"question": "q", "scratch": "injected"})
    assert seen == {"question": "q"}


def test_state_graph_from_input_and_output_only() -> None:
    g = StateGraph(input_schema=In, output_schema=Out)
    g.add_node("a", lambda s: {"answer": s["question"] + "!"})
    g.add_edge(START, "a")
    assert g.compile().invoke({"question": "hey"}) == {"answer": "hey!"}


class Private(TypedDict):
    secret: str


class Public(TypedDict):
    value: str


def test_private_channel_via_node_input_annotation() -> None:
    def write(state: Public) -> Private:
        return {"secret": state["value"] + "-secret"}

    def read(state: Private) -> Public:
        return {"value": state["secret"]}

    g = StateGraph(Public)
    g.add_node("write", write)
    g.add_node("read", read)
    g.add_edge(START, "write")
    g.add_edge("write", "read")
    assert g.compile().invoke({"value": "v"}) == {"value": "v-secret"}


def test_node_with_input_annotation_reads_only_its_keys() -> None:
    class Narrow(TypedDict):
        a: int

    class Wide(TypedDict):
        a: int
        b: int

    seen = {}

    def node(state: Narrow):
        seen.update(state)

    g = StateGraph(Wide)
    g.add_node("n", node)
    g.add_edge(START, "n")
    g.compile().invoke({"a": 1, "b": 2})
    assert seen == {"a": 1}


def test_add_node_input_schema_argument() -> None:
    class Narrow(TypedDict):
        b: int

    class Wide(TypedDict):
        a: int
        b: int

    seen = {}
    g = StateGraph(Wide)
    g.add_node("n", lambda s: seen.update(s), input_schema=Narrow)
    g.add_edge(START, "n")
    g.compile().invoke({"a": 1, "b": 2})
    assert seen == {"b": 2}


def test_reducer_from_private_schema_applies() -> None:
    class Main(TypedDict):
        out: list

    class Side(TypedDict):
        acc: Annotated[list, operator.add]

    def a(state: Main) -> Side:
        return {"acc": [1]}

    def b(state: Side):
        return {"acc": [2]}

    def c(state: Side) -> Main:
        return {"out": state["acc"]}

    g = StateGraph(Main)
    g.add_sequence([a, b, c])
    g.add_edge(START, "a")
    assert g.compile().invoke({"out": []}) == {"out": [1, 2]}


def test_non_schema_state_is_one_value() -> None:
    # as in LangGraph: a type without keys makes the whole state one value
    g = StateGraph(int).add_node("inc", lambda n: n + 1).add_edge(START, "inc")
    assert g.compile().invoke(41) == 42


def test_annotated_channels_and_managed_values_are_read_into_specs() -> None:
    from typing_extensions import NotRequired

    from plait._schema import ROOT, fields_of
    from plait.channels import EphemeralValue, Topic
    from plait.managed import RemainingSteps

    class State(TypedDict):
        topic: Annotated[list[str], Topic(str, accumulate=True)]
        flag: NotRequired[Annotated[str, EphemeralValue]]
        steps: RemainingSteps

    topic, flag, steps = fields_of(State)
    assert isinstance(topic.channel, Topic) and topic.channel.accumulate and topic.reducer is None
    assert isinstance(flag.channel, EphemeralValue) and flag.channel.typ is str
    assert steps.managed is not None and steps.channel is None
    (root,) = fields_of(Annotated[list, operator.add])
    assert root.name == ROOT and root.reducer is operator.add and root.initial is list


def test_plain_class_with_annotations_is_a_keyed_schema() -> None:
    class Plain:
        info: Annotated[list[str], operator.add]

    g = StateGraph(Plain).add_node("a", lambda s: {"info": ["x"]}).add_edge(START, "a")
    assert g.compile().invoke({"info": ["y"]}) == {"info": ["y", "x"]}
