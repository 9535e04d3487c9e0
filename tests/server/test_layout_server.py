"""The server's SQL lives in its data-access layer: no route, worker or run module holds a statement.

Every string literal of a module under ``plait/server/`` (f-strings with their holes as ``{}``,
docstrings left out) is matched against the shapes of SQL the server writes: a statement, a clause,
a where-fragment or one of the server's table names. Only the data layer (``plait/server/_data/``),
the connections and schema (``_db.py``, ``_schema.py``) and the store's table upgrade
(``_store_tables.py``) may hold them.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SERVER = ROOT / "plait" / "server"

ALLOWED = {"_db.py", "_schema.py", "_store_tables.py"}
"""Modules outside ``_data/`` that may hold SQL: connections, the schema and its migrations."""

_SQL = re.compile(
    "|".join(
        [
            r"\bSELECT\b[\s\S]*\bFROM\b",
            r"\bSELECT\s+(?:1\b|\*|\?|\(|COUNT\b|MAX\b|MIN\b|EXISTS\b|pg_\w+|set_config\b)",
            r"\bINSERT\s+INTO\b",
            r"\bUPDATE\s+\S+\s+SET\b",
            r"\bDELETE\s+FROM\b",
            r"\bFOR\s+(?:UPDATE|SHARE)\b",
            r"\bSKIP\s+LOCKED\b",
            r"(?:^|\s)(?:WHERE|ORDER\s+BY|GROUP\s+BY|COLLATE)\s",
            r"\bLIMIT\s+\?",
            r"\w\s*(?:=|<=|>=|<|>|@>)\s*\?",
            r"\bIS\s+(?:NOT\s+)?NULL\b",
            r"\bIN\s+\(",
            r"\bCAST\(",
            r"::jsonb\b",
            r"\bjson_extract\(",
            r"\bplait_(?:auth_match|json_\w+)\(",
            r"\bplait_server_(?:assistants|assistant_versions|threads|thread_meta|runs|events|crons)\b",
            r"\bpg_notify\(",
        ]
    )
)


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes (module, class, function) and of attribute docstrings."""
    found: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for stmt in body:  # a docstring, or a string right after an assignment (attribute docs)
            if (
                isinstance(stmt, ast.Expr)
                and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, str)
            ):
                found.add(id(stmt.value))
    return found


def _text(node: ast.JoinedStr) -> str:
    return "".join(
        part.value if isinstance(part, ast.Constant) and isinstance(part.value, str) else "{}"
        for part in node.values
    )


def sql_strings(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of each string literal of ``source`` shaped like SQL."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    inner = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if id(node) in skip or id(node) in inner:
            continue
        if isinstance(node, ast.JoinedStr):
            text = _text(node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if _SQL.search(text):
            found.append((node.lineno, text))
    return found


def _outside_data_layer() -> list[pathlib.Path]:
    return sorted(
        path
        for path in SERVER.rglob("*.py")
        if path.relative_to(SERVER).parts[0] != "_data" and path.name not in ALLOWED
    )


@pytest.mark.parametrize("path", _outside_data_layer(), ids=lambda p: str(p.relative_to(SERVER)))
def test_no_sql_outside_the_data_layer(path: pathlib.Path) -> None:
    found = sql_strings(path.read_text())
    assert not found, f"{path.relative_to(ROOT)} holds SQL; move it into plait/server/_data/: " + "; ".join(
        f"line {line}: {text[:80]!r}" for line, text in found
    )


def test_the_detector_sees_the_data_layers_sql() -> None:
    # every module of the data layer holds SQL the detector recognises: it is not blind
    for path in sorted((SERVER / "_data").glob("*.py")):
        if path.name != "__init__.py":
            assert sql_strings(path.read_text()), path.name


@pytest.mark.parametrize(
    "text",
    [
        "SELECT doc FROM plait_server_threads WHERE thread_id = ?",
        "DELETE FROM {} WHERE assistant_id = ?",
        "UPDATE {} SET status = ?",
        " FOR UPDATE",
        " WHERE ",
        "status = ?",
        "thread_id IN ({})",
        "((doc::jsonb) -> 'metadata')",
        "json_extract(doc, '$.metadata')",
        "SELECT 1",
    ],
)
def test_the_detector_sees_statements_and_fragments(text: str) -> None:
    assert sql_strings(f"x = {text!r}\n")


@pytest.mark.parametrize(
    "text",
    [
        "thread 1 not found",
        "select a thread from the list",
        "plait_server_event",
        "sort_order must be 'asc' or 'desc'",
        "the run where it stopped",
    ],
)
def test_the_detector_passes_prose(text: str) -> None:
    assert not sql_strings(f"x = {text!r}\n")


def test_docstrings_are_not_sql() -> None:
    assert not sql_strings('"""SELECT doc FROM plait_server_threads WHERE thread_id = ?"""\n')
