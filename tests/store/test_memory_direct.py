"""InMemoryStore's direct paths (get/put/search/list without a batch) answer as its batches do."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pytest

from plait.store._codec import check_value
from plait.store._filter import matcher, matches
from plait.store.base import GetOp, InvalidValueError, Op, PutOp, Result, SearchOp
from plait.store.memory import InMemoryStore

VALUES: list[Any] = [None, True, False, 0, 1, 2, 1.0, 2.5, "a", "b", "", [1], {"x": 1}, (1,)]


@pytest.mark.parametrize(
    "condition",
    [{"k": v} for v in VALUES]
    + [{"k": {"$gt": 1}}, {"k": {"$ne": "a"}}, {"k": 1, "j": "a"}, {"n.x": 1}, {"k.x": 1}],
    ids=repr,
)
def test_matcher_answers_as_matches(condition: dict[str, Any]) -> None:
    test = matcher(condition)
    stored = [{"k": v, "j": w, "n": {"x": v}} for v, w in itertools.product(VALUES, ["a", 1])]
    stored += [{}, {"k.x": 1}, {"j": "a"}]
    for value in stored:
        assert test(value) == matches(value, condition), value


class _Map(Mapping[str, Any]):
    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ({"a": [1, {"b": None}], "c": 1.5}, True),
        ({"a": (1, 2)}, True),
        (_Map({"a": _Map({"b": 1})}), True),
        ({"a": math.nan}, False),
        ({"a": [math.inf]}, False),
        ({1: "x"}, False),
        ({"a": {2: "x"}}, False),
        ({"a": {1, 2}}, False),
        ({"a": b"x"}, False),
        ([("a", 1)], False),
    ],
    ids=repr,
)
def test_value_check_accepts_json_objects_only(value: Any, ok: bool) -> None:
    if ok:
        check_value(("ns",), "k", value)
    else:
        with pytest.raises(InvalidValueError):
            check_value(("ns",), "k", value)


class _Recording(InMemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[Op] = []

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        self.seen.extend(ops)
        return super().batch(ops)


def test_a_subclass_that_runs_batches_its_own_way_sees_every_operation() -> None:
    store = _Recording()
    store.put(("a",), "k", {"v": 1})
    assert store.get(("a",), "k") is not None
    assert len(store.search(("a",), filter={"v": 1})) == 1
    assert store.list_namespaces() == [("a",)]
    assert [type(op) for op in store.seen[:3]] == [PutOp, GetOp, SearchOp]
    assert len(store.seen) == 4


def test_direct_reads_hand_out_copies_and_list_follows_namespaces() -> None:
    store = InMemoryStore()
    store.put(("b",), "k", {"v": 1})
    store.put(("a", "x"), "k", {"v": 2})
    got = store.get(("b",), "k")
    assert got is not None
    got.value["v"] = 99
    hit = store.search(("b",))[0]
    hit.value["v"] = 98
    assert store.batch([GetOp(("b",), "k")])[0] == store.get(("b",), "k")
    assert store.get(("b",), "k").value == {"v": 1}  # type: ignore[union-attr]
    assert store.list_namespaces() == [("a", "x"), ("b",)]
    store.delete(("b",), "k")
    assert store.list_namespaces() == [("a", "x")]
    store.put(("a",), "k", {"v": 3})
    assert store.list_namespaces() == [("a",), ("a", "x")]
    assert store.list_namespaces(prefix=("a", "*")) == [("a", "x")]
    assert store.list_namespaces(max_depth=1) == [("a",)]
