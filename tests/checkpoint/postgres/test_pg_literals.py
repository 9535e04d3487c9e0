"""The SQL literals plait writes for its multi-statement saves read back as the values bound (property test)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from _pg import PG_DSN, require_pg
from hypothesis import given, settings
from hypothesis import strategies as st

from plait.checkpoint._engine_ops import Step
from plait.checkpoint.postgres._literal import render, usable
from plait.checkpoint.postgres._sql import join_steps

# text PostgreSQL can hold: no NUL, no lone surrogates (no UTF-8 form: psycopg refuses them too)
texts = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=40)
CASES: list[tuple[str, st.SearchStrategy[Any]]] = [
    ("bool", st.booleans()),
    ("int8", st.integers(-(2**63), 2**63 - 1)),
    ("float8", st.floats(allow_nan=False, allow_infinity=False)),
    ("text", texts),
    ("bytea", st.binary(max_size=40)),
    ("text[]", st.lists(st.none() | texts, max_size=6)),
    ("int8[]", st.lists(st.none() | st.integers(-(2**63), 2**63 - 1), max_size=6)),
    ("bool[]", st.lists(st.none() | st.booleans(), max_size=6)),
    (
        "bytea[]",
        st.lists(st.none() | st.binary(max_size=12), min_size=1, max_size=6).filter(lambda v: any(v)),
    ),
]


@pytest.fixture(scope="module")
def conn() -> Iterator[psycopg.Connection[Any]]:
    require_pg()
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        assert usable(conn.info.parameter_status("standard_conforming_strings"), conn.info.encoding)
        yield conn


@pytest.mark.parametrize(("cast", "values"), CASES, ids=[c for c, _ in CASES])
def test_each_literal_reads_back_as_its_value(conn: psycopg.Connection[Any], cast: str, values: Any) -> None:
    @settings(max_examples=150, deadline=None)
    @given(values)
    def check(value: Any) -> None:
        sql = render(f"SELECT %s::{cast}, %s IS NULL", [value, value])
        assert sql is not None
        back, null = conn.execute(sql).fetchone()  # type: ignore[misc]
        assert null is False
        assert back == value

    check()


def test_null_and_named_parameters_and_percent_signs(conn: psycopg.Connection[Any]) -> None:
    sql = render("SELECT %(a)s::text, %(b)s::int8, '100%%'", {"a": None, "b": -5})
    assert sql is not None
    assert conn.execute(sql).fetchone() == (None, -5, "100%")


@pytest.mark.parametrize(
    "value",
    [
        {"a": 1},
        "nul\x00inside",
        float("nan"),
        ["text", b"bytes"],
        [1, "mixed"],
        [True, 1],  # a bool is not an int here: no array holds both
        [["nested"]],
        ("a", "b"),  # psycopg writes a tuple as a record
    ],
)
def test_values_it_does_not_write_are_left_to_psycopg(conn: psycopg.Connection[Any], value: Any) -> None:
    assert render("SELECT %s", [value]) is None


def test_a_joined_query_falls_back_per_statement(conn: psycopg.Connection[Any]) -> None:
    with psycopg.ClientCursor(conn) as cur:
        text = join_steps(
            cur,
            [
                Step("SELECT %s::text", ["it's"]),
                Step("SELECT %s::jsonb", [psycopg.types.json.Jsonb({"k": 1})]),
            ],
        )
        assert "it''s" in text
        cur.execute(text)  # pyright: ignore[reportArgumentType, reportCallIssue]
        assert cur.fetchone() == ("it's",)
        assert cur.nextset() and cur.fetchone() == ({"k": 1},)
