"""Graphs whose state is one value (``StateGraph(Annotated[list, operator.add])``).

The runtime keeps such a state under one key, :data:`~plait._schema.ROOT`; these
functions translate at the edges: node results into writes of that key, the run's
output and stream payloads back into the bare value.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeGuard, TypeVar, cast

from plait._schema import ROOT
from plait.checkpoint.base import INTERRUPT
from plait.pregel._plan import Plan
from plait.types import Command, StateSnapshot

__all__ = [
    "is_command",
    "root_call",
    "root_output",
    "root_payload",
    "root_snapshot",
    "root_state",
    "root_value",
    "root_writes",
]


_In = TypeVar("_In")
_Ctx = TypeVar("_Ctx")


def is_command(value: object) -> TypeGuard[Command[object]]:
    """``isinstance(value, Command)``, its node type left open."""
    return isinstance(value, Command)


def _command(cmd: Command[object]) -> Command[object]:
    if cmd.update is None:
        return cmd
    return Command(graph=cmd.graph, update=[(ROOT, cmd.update)], resume=cmd.resume, goto=cmd.goto)


def root_writes(result: object) -> object:
    """A node's result as a keyed result: the value itself, or ``Command``\\ s carrying values.

    A list holding a ``Command`` is several results (each other item is a value);
    any other list is one value.
    """
    if result is None:
        return None
    # builtin isinstance() checks (per node call), then casts: isinstance() leaves type arguments Unknown
    if isinstance(result, Command):
        return _command(cast("Command[object]", result))
    if isinstance(result, (list, tuple)):
        items = cast("Sequence[object]", result)
        if any(isinstance(i, Command) for i in items):
            return [_command(i) if is_command(i) else Command(update=[(ROOT, i)]) for i in items]
    out: dict[str, object] = {ROOT: result}
    return out


def root_call(call: Callable[[_In, _Ctx], object], is_async: bool) -> Callable[[_In, _Ctx], Any]:
    """Wrap a node's ``call(input, ctx)`` so that its result writes the root value."""
    if is_async:  # then ``call`` returns an awaitable
        node = cast("Callable[[_In, _Ctx], Awaitable[object]]", call)

        async def acall(state: _In, ctx: _Ctx) -> object:
            return root_writes(await node(state, ctx))

        return acall

    def sync_call(state: _In, ctx: _Ctx) -> object:
        return root_writes(call(state, ctx))

    return sync_call


def root_state(values: Mapping[str, object]) -> object:
    """What a node or a conditional edge of a root graph receives: the value."""
    return values.get(ROOT)


def root_value(value: object) -> dict[str, object]:
    """A root graph's input (or ``update_state`` values) as writes."""
    return {ROOT: value}


def root_output(out: object) -> object:
    """A root graph's ``invoke`` result: the value (the whole dict when the run paused)."""
    data = _as_dict(out)
    if data is not None and ROOT in data and INTERRUPT not in data:
        return data[ROOT]
    return out


def _as_dict(value: object) -> dict[str, object] | None:
    return cast("dict[str, object]", value) if type(value) is dict else None


def root_payload(mode: str, payload: object) -> object:
    """A stream payload with root-graph values unwrapped (``{"__root__": v}`` -> ``v``)."""
    if type(payload) is not dict:  # (per stream event: the builtin check, then a cast)
        return payload
    data = cast("dict[str, object]", payload)
    if mode == "values":
        return data[ROOT] if len(data) == 1 and ROOT in data else data
    if mode == "updates":
        return {k: _unwrap(v) for k, v in data.items()}
    return data


def _unwrap(update: object) -> object:
    if type(update) is list:  # several updates of one node
        return [_unwrap(u) for u in cast("list[object]", update)]
    data = _as_dict(update)
    if data is not None and len(data) == 1 and ROOT in data:
        return data[ROOT]
    return update


def root_snapshot(plan: Plan, snapshot: StateSnapshot) -> StateSnapshot:
    """A snapshot of a root graph's thread shows the value itself."""
    if not plan.root:
        return snapshot
    return snapshot._replace(values=snapshot.values.get(ROOT))
