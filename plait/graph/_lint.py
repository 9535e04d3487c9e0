"""Compile-time checks of strict mode that need the whole graph."""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any

from plait.constants import START
from plait.errors import StrictModeError
from plait.graph._spec import GraphSpec

__all__ = ["check_parallel_writes", "returned_keys"]


def _function_node(fn: Any) -> ast.AST | None:  # a function, method or lambda (its code is read)
    try:
        raw = inspect.getsource(fn)
    except (OSError, TypeError):
        return None
    source = textwrap.dedent(raw)
    indent = len(raw) - len(raw.lstrip(" \t")) - (len(source) - len(source.lstrip(" \t")))
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    if getattr(fn, "__name__", "") != "<lambda>":
        return next(
            (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None
        )
    lambdas = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)]
    if len(lambdas) <= 1:
        return lambdas[0] if lambdas else None
    cols = {
        c
        for (line, _, c, _) in fn.__code__.co_positions()
        if c is not None and line == fn.__code__.co_firstlineno
    }
    for node in lambdas:
        body = node.body
        if body.lineno == 1 and any(
            body.col_offset + indent <= c < (body.end_col_offset or 0) + indent for c in cols
        ):
            return node
    return None


def _dict_keys(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Dict):
        return {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        return {kw.arg for kw in node.keywords if kw.arg}
    return set()


def returned_keys(fn: object) -> set[str]:
    """State keys a node function visibly returns (dict literals in its return statements)."""
    node = _function_node(fn)
    if node is None:
        return set()
    if isinstance(node, ast.Lambda):
        return _dict_keys(node.body)
    keys: set[str] = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Return) and child.value is not None:
            keys |= _dict_keys(child.value)
    return keys


def _steps(builder: GraphSpec) -> list[set[str]]:
    edges: dict[str, set[str]] = {}
    for source, target in builder.edges:
        edges.setdefault(source, set()).add(target)
    steps: list[set[str]] = []
    frontier = edges.get(START, set()) & set(builder.nodes)
    seen: set[frozenset[str]] = set()
    while frontier and frozenset(frontier) not in seen and len(steps) < 100:
        seen.add(frozenset(frontier))
        steps.append(frontier)
        frontier = {t for n in frontier for t in edges.get(n, ()) if t in builder.nodes}
    return steps


def check_parallel_writes(builder: GraphSpec) -> None:
    """Reject nodes that run in the same superstep and both write a key without a reducer.

    Raises:
        StrictModeError: naming the nodes and the key.
    """
    plain = {name for name, spec in builder.channels.items() if spec.reducer is None}
    for step in _steps(builder):
        writers: dict[str, list[str]] = {}
        for name in sorted(step):
            for key in returned_keys(builder.nodes[name].action) & plain:
                writers.setdefault(key, []).append(name)
        for key, nodes in sorted(writers.items()):
            if len(nodes) > 1:
                raise StrictModeError(
                    f"Nodes {nodes} run in the same superstep and all write {key!r}, which has no reducer: the run "
                    f"would fail with InvalidUpdateError. Give {key!r} a reducer (Annotated[T, operator.add], ...) "
                    "or make the nodes write different keys.",
                    key=key,
                    node=nodes[0],
                    nodes=tuple(nodes),
                )
