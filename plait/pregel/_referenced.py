"""The compiled graph a node function calls: found in the names its code reads, never by running it.

A node that calls ``subgraph.invoke(...)`` runs that graph as its subgraph (it saves in the
parent's thread). Naming it lets ``get_state(subgraphs=True)`` show the subgraph's state under
the node's task and ``get_subgraphs()`` list it, as for a subgraph added as the node itself.
"""

from __future__ import annotations

import dis
import inspect
from collections.abc import Callable, Iterator
from types import CodeType, FunctionType

__all__ = ["referenced_graph"]

_BASES = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_CLASSDEREF"})
_ATTRS = frozenset({"LOAD_ATTR", "LOAD_METHOD"})
_MISSING = object()


def _function(fn: object) -> FunctionType | None:
    """The plain function behind a node: itself, a bound method's, or a runnable lambda's."""
    if inspect.ismethod(fn):
        fn = fn.__func__
    if not isinstance(fn, FunctionType):
        inner = getattr(fn, "func", None) if hasattr(fn, "invoke") else None  # RunnableLambda
        if inner is None or not isinstance(inner, FunctionType):
            inner = getattr(fn, "afunc", None) if hasattr(fn, "invoke") else None
        fn = inner
    return fn if isinstance(fn, FunctionType) else None


def _free(fn: FunctionType) -> dict[str, object]:
    code: CodeType = fn.__code__
    out: dict[str, object] = {}
    for name, cell in zip(code.co_freevars, fn.__closure__ or (), strict=False):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # a cell not filled yet
            continue
    return out


def _reads(fn: FunctionType) -> Iterator[object]:
    """The objects ``fn``'s own code reads from outside (closure and globals), attribute chains
    followed (``holder.graph``), in code order. Attributes are read without running descriptors."""
    free = _free(fn)
    scope = fn.__globals__
    current: object = _MISSING
    for ins in dis.get_instructions(fn):
        if ins.opname in _BASES:
            name = str(ins.argval)
            if ins.opname in ("LOAD_DEREF", "LOAD_CLASSDEREF"):
                current = free.get(name, _MISSING)
            else:
                current = scope.get(name, _MISSING)
        elif ins.opname in _ATTRS and current is not _MISSING:
            try:
                current = inspect.getattr_static(current, str(ins.argval))
            except AttributeError:
                current = _MISSING
        else:
            current = _MISSING
            continue
        if current is not _MISSING:
            yield current


def referenced_graph(fn: object, is_graph: Callable[[object], bool]) -> object:
    """The first object ``is_graph`` accepts among those the node function ``fn`` reads, else ``None``."""
    function = _function(fn)
    if function is None:
        return None
    return next((obj for obj in _reads(function) if is_graph(obj)), None)
