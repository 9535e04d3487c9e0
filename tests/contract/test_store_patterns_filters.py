"""Namespace patterns given as strings and search filter keys, as LangGraph 1.2 answers them, on every store.

A ``str`` pattern is a sequence of one-character labels (``"users"`` is
``("u", "s", "e", "r", "s")``) in every LangGraph store. Filter keys are field
names, never operators; LangGraph's SQLite store refuses keys outside
``[A-Za-z0-9_.-]`` while its memory and PostgreSQL stores accept any key.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from _stores import open_store

from plait.store.base import InvalidFilterError, InvalidNamespaceError, ListNamespacesOp, MatchCondition


@pytest.fixture
def store(kind: str, mode: str, tmp_path: Any) -> Iterator[Any]:
    with ExitStack() as exits:
        yield open_store(kind, mode, tmp_path, exits)


USERS = tuple("users")
NAMESPACES = [
    ("users", "a"),
    USERS,
    (*USERS, "x"),
    ("x", *USERS),
    tuple("uxers"),
    ("a", "b", "c"),
    ("users",),
]


def _listed(store: Any, match_type: str, path: Any) -> list[tuple[str, ...]]:
    op = ListNamespacesOp(match_conditions=(MatchCondition(match_type, path),), limit=100)  # type: ignore[arg-type]
    return store.batch([op])[0]  # type: ignore[no-any-return]


def test_a_str_pattern_is_a_sequence_of_one_character_labels(store: Any) -> None:
    for ns in NAMESPACES:
        store.put(ns, "k", {"v": 1})
    every = sorted(NAMESPACES)
    assert store.list_namespaces(prefix="users") == [USERS, (*USERS, "x")]
    assert store.list_namespaces(suffix="users") == [USERS, ("x", *USERS)]
    assert store.list_namespaces(prefix="u*") == [USERS, (*USERS, "x"), tuple("uxers")]
    assert store.list_namespaces(prefix="u", suffix="s") == [USERS, tuple("uxers")]
    assert store.list_namespaces(prefix="") == every
    assert _listed(store, "prefix", "users") == [USERS, (*USERS, "x")]
    assert _listed(store, "suffix", "users") == [USERS, ("x", *USERS)]
    assert _listed(store, "prefix", "u*e") == [USERS, (*USERS, "x"), tuple("uxers")]
    assert _listed(store, "suffix", "rs") == [USERS, tuple("uxers"), ("x", *USERS)]
    assert _listed(store, "prefix", "*") == every and _listed(store, "suffix", "*") == every
    assert _listed(store, "prefix", "") == every
    assert _listed(store, "prefix", ["u", "*"]) == [USERS, (*USERS, "x"), tuple("uxers")]
    with pytest.raises(InvalidNamespaceError, match=r"'\.'"):
        store.list_namespaces(prefix="a.b")
    with pytest.raises(InvalidNamespaceError, match=r"'\.'"):
        _listed(store, "suffix", "a.b")


ODD_KEYS = [{"$x": 1}, {"$eq": 1}, {"a b": 1}, {"é": 1}, {"$x": {"$eq": 1}}, {"a'b": 1}, {"": 1}, {1: 1}]


def test_filter_keys_are_field_names_and_sqlite_refuses_unsafe_ones(store: Any, kind: str) -> None:
    store.put(("f",), "k", {"a": 1, "a b": 1, "$x": 1, "$eq": 1, "a-b_c.d": 1, "é": 1})

    def find(conditions: dict[Any, Any]) -> list[str]:
        return [hit.key for hit in store.search(("f",), filter=conditions)]

    assert find({"a-b_c.d": 1}) == ["k"] and find({"a": {"$ne": 2}}) == ["k"]
    for conditions in ODD_KEYS:
        if kind == "sqlite":
            with pytest.raises(InvalidFilterError, match="Invalid filter key") as caught:
                find(conditions)
            assert isinstance(caught.value, ValueError)
        else:
            assert find(conditions) == ([] if conditions in ({"a'b": 1}, {"": 1}, {1: 1}) else ["k"])
    with pytest.raises(InvalidFilterError, match=r"Unsupported filter operator: '\$in'"):
        find({"a": {"$in": [1]}})
    assert store.get(("f",), "k").value["$x"] == 1
