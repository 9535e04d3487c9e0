"""Conditional edges as declared on the builder."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from types import UnionType
from typing import Literal, Union, cast, get_args, get_origin

from langchain_core.runnables import Runnable, RunnableConfig

from plait.constants import END
from plait.errors import GraphBuildError
from plait.types import Command

__all__ = ["BranchDef", "make_branch", "node_destinations", "router_extras"]


@dataclass(frozen=True, slots=True)
class BranchDef:
    """A conditional edge: the routing function and where it may lead.

    Attributes:
        name: Name of the routing function (unique per source).
        path: The routing function.
        path_map: Return value -> node name, or ``None`` (values are node names).
        ends: Possible targets, when known (for validation and drawing).
        input_schema: The schema annotated on the routing function's state parameter, if any: the
            function receives those keys only (as LangGraph does; unannotated, it receives the keys of
            its source node's input schema).
    """

    name: str
    path: Callable[..., object]
    path_map: dict[Hashable, str] | None
    ends: tuple[str, ...]
    input_schema: type | None = None


def _literal_targets(path: Callable[..., object]) -> tuple[str, ...]:
    fn = path if inspect.isfunction(path) or inspect.ismethod(path) else type(path).__call__
    try:
        ret = typing.get_type_hints(fn).get("return")
    except Exception:  # noqa: BLE001 - unresolvable hints: no declared targets
        return ()
    if ret is None:
        return ()
    options = get_args(ret) if get_origin(ret) is not Literal else (ret,)
    found: list[str] = []
    for option in options or (ret,):
        if get_origin(option) is Literal:
            found.extend(str(a) for a in get_args(option))
    return tuple(found)


class _RunnableRoute:
    """A Runnable router as a function of ``(state, config)``: ``invoke`` (``ainvoke`` when it has only
    an async function, as a ``RunnableCallable`` may), named after the Runnable, which reports its own run."""

    def __init__(self, runnable: Runnable[object, object]) -> None:
        self.runnable = runnable
        self.__name__ = runnable.get_name()
        self.only_async = (
            getattr(runnable, "func", True) is None and getattr(runnable, "afunc", None) is not None
        )

    def __call__(self, state: object, config: RunnableConfig | None) -> object:
        runnable = self.runnable
        return runnable.ainvoke(state, config) if self.only_async else runnable.invoke(state, config)


_INJECTED = ("store", "writer", "runtime")


def router_extras(path: Callable[..., object]) -> tuple[str, ...]:
    """The parameters a router receives by keyword besides its state, as LangGraph injects them:
    ``store``, ``writer`` and ``runtime``, and then ``config`` too when it declares it. Empty (the
    common case: ``config``, if any, goes second by position) when it declares none of the three.
    """
    try:
        params = list(inspect.signature(path).parameters.values())
    except (TypeError, ValueError):
        return ()
    named = [p for p in params[1:] if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    names = tuple(p.name for p in named if p.name in _INJECTED)
    if not names and not any(p.name == "config" and p.kind is p.KEYWORD_ONLY for p in named):
        return ()
    return (*names, "config") if any(p.name == "config" for p in named) else names


def make_branch(path: Callable[..., object], path_map: dict[Hashable, str] | list[str] | None) -> BranchDef:
    """Normalise ``add_conditional_edges`` arguments.

    Raises:
        ValueError: ``path`` is not callable or ``path_map`` has the wrong type.
    """
    hinted: object = path
    if isinstance(path, Runnable):
        runnable = cast("Runnable[object, object]", path)
        func: object = getattr(runnable, "func", None)
        afunc: object = getattr(runnable, "afunc", None)
        hinted = func or afunc or runnable
        path = _RunnableRoute(runnable)
    if not callable(path):
        raise GraphBuildError(f"Conditional edge path must be callable or a Runnable, got {path!r}")
    name = getattr(path, "__name__", None) or type(path).__name__
    if name == "<lambda>":
        name = "condition"
    if isinstance(path_map, dict):
        mapping: dict[Hashable, str] | None = dict(path_map)
        ends = tuple(path_map.values())
    elif isinstance(path_map, (list, tuple)):
        mapping = {p: p for p in path_map}
        ends = tuple(path_map)
    elif path_map is None:
        mapping = None
        ends = _literal_targets(hinted) if callable(hinted) else ()
    else:
        raise GraphBuildError(f"path_map must be a dict or a list of node names, got {path_map!r}")
    # runtime guard: a user's path_map may map a result to None, which means END
    return BranchDef(name, path, mapping, tuple(e if e is not None else END for e in ends))  # pyright: ignore[reportUnnecessaryComparison]


def node_destinations(
    action: object, given: Mapping[str, str] | Sequence[str] | None
) -> tuple[tuple[str, str | None], ...]:
    """Where a node may go with ``Command(goto=...)``, as ``(target, label)`` pairs (for drawing).

    ``given`` is ``add_node(destinations=...)``: names, or names mapped to edge labels. Without it,
    a ``Command[Literal[...]]`` return annotation of the node lists the targets.
    """
    if isinstance(given, Mapping):
        return tuple((str(k), str(v)) for k, v in given.items())
    if given:
        return tuple((str(t), None) for t in given)
    fn = (
        action
        if inspect.isfunction(action) or inspect.ismethod(action)
        else getattr(type(action), "__call__", None)  # noqa: B004 - its method
    )
    try:
        ret = typing.get_type_hints(fn).get("return") if fn is not None else None
    except Exception:  # noqa: BLE001 - unresolvable hints: no declared targets
        return ()
    options = get_args(ret) if get_origin(ret) in (Union, UnionType) else (ret,)
    found: list[tuple[str, str | None]] = []
    for option in options:
        if get_origin(option) is Command:
            found.extend((str(t), None) for arg in get_args(option) for t in _literals(arg))
    return tuple(found)


def _literals(hint: object) -> tuple[object, ...]:
    return get_args(hint) if get_origin(hint) is Literal else ()
