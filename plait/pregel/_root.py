"""Graphs whose state is one value (``StateGraph(Annotated[list, operator.add])``).

The runtime keeps such a state under one key, :data:`~plait._schema.ROOT`; these
functions translate at the edges: node results into writes of that key, the run's
output and stream payloads back into the bare value.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, cast

from plait._schema import ROOT
from plait.checkpoint.base import INTERRUPT
from plait.pregel._plan import Plan
from plait.types import Command, StateSnapshot

__all__ = [
    "root_call",
    "root_output",
    "root_payload",
    "root_snapshot",
    "root_state",
    "root_value",
    "root_writes",
]


def _command(cmd: Command[Any]) -> Command[Any]:
    if cmd.update is None:
        return cmd
    return Command(graph=cmd.graph, update=[(ROOT, cmd.update)], resume=cmd.resume, goto=cmd.goto)


def root_writes(result: Any) -> Any:
    """A node's result as a keyed result: the value itself, or ``Command``\\ s carrying values.

    A list holding a ``Command`` is several results (each other item is a value);
    any other list is one value.
    """
    if result is None:
        return None
    if isinstance(result, Command):
        return _command(cast("Any", result))  # narrowing leaves the Command's type argument Unknown
    if isinstance(result, (list, tuple)):
        items = cast("Sequence[Any]", result)
        if any(isinstance(i, Command) for i in items):
            return [_command(i) if isinstance(i, Command) else Command(update=[(ROOT, i)]) for i in items]  # pyright: ignore[reportUnknownArgumentType]  # a Command of any node type
    out: dict[str, Any] = {ROOT: result}
    return out


def root_call(call: Callable[[Any, Any], Any], is_async: bool) -> Callable[[Any, Any], Any]:
    """Wrap a node's ``call(input, ctx)`` so that its result writes the root value."""
    if is_async:

        async def acall(state: Any, ctx: Any) -> Any:
            return root_writes(await cast("Awaitable[Any]", call(state, ctx)))

        return acall

    def sync_call(state: Any, ctx: Any) -> Any:
        return root_writes(call(state, ctx))

    return sync_call


def root_state(values: Mapping[str, Any]) -> Any:
    """What a node or a conditional edge of a root graph receives: the value."""
    return values.get(ROOT)


def root_value(value: Any) -> dict[str, Any]:
    """A root graph's input (or ``update_state`` values) as writes."""
    return {ROOT: value}


def root_output(out: Any) -> Any:
    """A root graph's ``invoke`` result: the value (the whole dict when the run paused)."""
    data = _as_dict(out)
    if data is not None and ROOT in data and INTERRUPT not in data:
        return data[ROOT]
    return out


def _as_dict(value: Any) -> dict[str, Any] | None:
    return cast("dict[str, Any]", value) if type(value) is dict else None


def root_payload(mode: str, payload: Any) -> Any:
    """A stream payload with root-graph values unwrapped (``{"__root__": v}`` -> ``v``)."""
    if type(payload) is not dict:
        return payload
    data = cast("dict[str, Any]", payload)
    if mode == "values":
        return data[ROOT] if len(data) == 1 and ROOT in data else data
    if mode == "updates":
        return {k: _unwrap(v) for k, v in data.items()}
    return data


def _unwrap(update: Any) -> Any:
    if type(update) is list:  # several updates of one node
        return [_unwrap(u) for u in cast("list[Any]", update)]  # type: ignore[redundant-cast]  # pyright: list[Unknown]
    data = _as_dict(update)
    if data is not None and len(data) == 1 and ROOT in data:
        return data[ROOT]
    return update


def root_snapshot(plan: Plan, snapshot: StateSnapshot) -> StateSnapshot:
    """A snapshot of a root graph's thread shows the value itself."""
    if not plan.root:
        return snapshot
    return snapshot._replace(values=snapshot.values.get(ROOT))
