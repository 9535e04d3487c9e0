"""Property: parallel writes merge in node-name order, whatever the add order."""

import operator
from typing import Annotated, TypedDict

from hypothesis import given, settings
from hypothesis import strategies as st

from plait.constants import START
from plait.graph import StateGraph


class S(TypedDict):
    out: Annotated[list, operator.add]


names = st.lists(st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True), min_size=1, max_size=8, unique=True)


@settings(max_examples=40, deadline=None)
@given(names=names, data=st.data())
def test_parallel_writes_merge_in_sorted_name_order(names: list[str], data: st.DataObject) -> None:
    order = data.draw(st.permutations(names))
    g = StateGraph(S)
    for name in order:
        g.add_node(name, lambda s, name=name: {"out": [name]})
        g.add_edge(START, name)
    app = g.compile()
    first = app.invoke({"out": []})["out"]
    assert first == sorted(names)
    assert app.invoke({"out": []})["out"] == first  # stable across runs
