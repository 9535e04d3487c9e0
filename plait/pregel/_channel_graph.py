"""Channel graphs: LangGraph's low-level ``Pregel(nodes=..., channels=..., ...)`` as a plan.

Such a graph has no edges: each node (:class:`~plait.pregel._builder.PregelNode`) runs in
the step after a write to a channel it subscribes to (:attr:`Plan.triggers`), reads its
channels, runs its chain and writes the result through its writers. The input is
written to the input channels; the run's checkpoint of it (``source="input"``) already
holds it, and the first step runs the nodes it starts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import Any

from plait.channels.base import BaseChannel
from plait.checkpoint.base import INTERRUPT, Checkpoint, CheckpointTuple
from plait.constants import START
from plait.errors import InvalidUpdateError
from plait.pregel._builder import NodeBuilder, PregelNode
from plait.pregel._cache import node_namespace
from plait.pregel._callable import NodeCalls, make_call
from plait.pregel._context import TaskContext
from plait.pregel._input import input_writes
from plait.pregel._next import subscribers
from plait.pregel._plan import NodeSpec, Plan
from plait.pregel._root import root_output
from plait.pregel._timeout import sync_timeout_error
from plait.types import CachePolicy, Command, RetryPolicy

__all__ = ["channel_plan", "channel_updates", "output_value"]

_UNSUPPORTED = ("step_timeout", "node_error_handler_map", "stream_transformers")
_ACCEPTED = (
    "auto_validate",
    "stream_eager",
    "context_schema",
    "config",
    "trigger_to_nodes",
    "stream_channels",
)


def channel_plan(  # noqa: PLR0913 - LangGraph's keyword arguments
    *,
    given: Plan | None = None,
    nodes: Mapping[str, PregelNode | NodeBuilder],
    channels: Mapping[str, BaseChannel] | None,
    input_channels: str | Sequence[str],
    output_channels: str | Sequence[str],
    interrupt_before_nodes: str | Sequence[str] | None = (),
    interrupt_after_nodes: str | Sequence[str] | None = (),
    retry_policy: RetryPolicy | Sequence[RetryPolicy] = (),
    cache_policy: CachePolicy[Callable[..., str | bytes]] | None = None,
    cache: object = None,
    **options: object,
) -> Plan:
    """The plan of ``Pregel(nodes=..., channels=..., input_channels=..., output_channels=...)``.

    ``stream_channels`` may only be ``None`` (values stream every channel, as LangGraph's default).

    Raises:
        TypeError: ``given`` (a plan) too.
        ValueError: a node, an interrupt or an input/output channel names an unknown channel or node.
        TypeError: an unknown option, or a channel that is not a ``BaseChannel``.
        NotImplementedError: ``step_timeout``, ``node_error_handler_map`` or ``stream_channels``.
    """
    if given is not None:
        raise TypeError(
            "Pregel() takes a compiled plan or LangGraph's nodes=/channels=... arguments, not both"
        )
    for name, value in options.items():
        if name in _UNSUPPORTED or (name == "stream_channels" and value is not None):
            if value:
                raise NotImplementedError(f"Pregel({name}=...) is not implemented by plait")
        elif name not in _ACCEPTED:
            raise TypeError(f"Pregel() got an unexpected keyword argument {name!r}")
    built = {name: n.build() if isinstance(n, NodeBuilder) else n for name, n in (nodes or {}).items()}
    bound: dict[str, BaseChannel] = {}
    for key, channel in (channels or {}).items():
        if not isinstance(channel, BaseChannel):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
            raise TypeError(f"Channel {key!r} must be a BaseChannel, got {type(channel).__name__}")
        bound[key] = channel.bind(key)
    inputs, outputs = _names(input_channels), _names(output_channels)
    _check(built, bound, inputs, outputs, (interrupt_before_nodes, interrupt_after_nodes))
    triggers: dict[str, list[str]] = {}
    for name, node in built.items():
        for key in node.triggers:
            triggers.setdefault(key, []).append(name)
    subscribed = {k: tuple(v) for k, v in triggers.items()}
    default_retry = _first(retry_policy)
    return Plan(
        channels=bound,
        nodes={n: _spec(n, node, subscribed, default_retry, cache_policy) for n, node in built.items()},
        edges={},
        branches={},
        joins={},
        input_keys=inputs,
        output_keys=outputs,
        state_keys=tuple(bound),
        interrupt_before=_interrupts(interrupt_before_nodes),
        interrupt_after=_interrupts(interrupt_after_nodes),
        cache=cache,
        triggers=subscribed,
        input_channel=input_channels if isinstance(input_channels, str) else None,
        output_channel=output_channels if isinstance(output_channels, str) else None,
    )


def _names(channels: str | Sequence[str]) -> tuple[str, ...]:
    return (channels,) if isinstance(channels, str) else tuple(channels)


def _interrupts(nodes: str | Sequence[str] | None) -> frozenset[str]:
    return frozenset(["*"] if nodes == "*" else nodes or ())


def _first(policy: RetryPolicy | Sequence[RetryPolicy] | None) -> RetryPolicy | None:
    if isinstance(policy, Sequence):
        return policy[0] if policy else None
    return policy


def _check(
    nodes: Mapping[str, PregelNode],
    channels: Mapping[str, BaseChannel],
    inputs: tuple[str, ...],
    outputs: tuple[str, ...],
    interrupts: tuple[str | Sequence[str] | None, str | Sequence[str] | None],
) -> None:
    if not nodes:
        raise ValueError("Pregel() needs at least one node")
    named: list[tuple[str, str]] = [(f"Input channel {c!r}", c) for c in inputs]
    named += [(f"Output channel {c!r}", c) for c in outputs]
    for name, node in nodes.items():
        if not node.triggers:
            raise ValueError(f"Node {name!r} subscribes to no channel: it would never run")
        read = (node.channels,) if isinstance(node.channels, str) else tuple(node.channels)
        named += [(f"Subscribed channel {c!r} of node {name!r}", c) for c in node.triggers]
        named += [(f"Read channel {c!r} of node {name!r}", c) for c in read]
        named += [(f"Written channel {w.channel!r} of node {name!r}", w.channel) for w in node.writers]
    for what, channel in named:
        if channel not in channels:
            raise ValueError(f"{what} is not in channels")
    unknown = [n for given in interrupts for n in _interrupts(given) - {"*"} if n not in nodes]
    if unknown:
        raise ValueError(f"Interrupt node {unknown[0]!r} is not in nodes")


def _spec(
    name: str,
    node: PregelNode,
    triggers: Mapping[str, Sequence[str]],
    retry: RetryPolicy | None,
    cache_policy: CachePolicy[Callable[..., str | bytes]] | None,
) -> NodeSpec:
    calls = [make_call(fn) for fn in node.bound]
    single = node.channels if isinstance(node.channels, str) else None
    policy = node.cache_policy or cache_policy
    finish = partial(_result, node, triggers)
    if node.timeout is not None and not any(c.is_async or c.acall is not None for c in calls):
        raise sync_timeout_error(name)
    return NodeSpec(
        name=name,
        call=_chain(calls, finish) if not any(c.is_async for c in calls) else _achain(calls, finish, False),
        is_async=any(c.is_async for c in calls),
        acall=_achain(calls, finish, True) if any(c.acall is not None for c in calls) else None,
        reads=(single,) if single is not None else tuple(node.channels),
        make_input=None if single is None else (lambda values: values.get(single)),
        retry=_first(node.retry_policy) or retry,
        metadata=dict(node.metadata),
        cache_policy=policy,
        cache_ns=node_namespace(node.bound[0] if node.bound else name, name) if policy is not None else (),
        channel_node=node,
        triggers=tuple(sorted(node.triggers)),
        timeout=node.timeout,
    )


def _result(node: PregelNode, triggers: Mapping[str, Sequence[str]], output: object) -> Command[str] | None:
    """The chain's ``output`` as the task's result: its writes, and the nodes they start next."""
    writes = node.writes(output)
    return Command(update=writes, goto=subscribers(triggers, writes)) if writes else None


def _chain(
    calls: Sequence[NodeCalls], finish: Callable[[object], object]
) -> Callable[[object, TaskContext], object]:
    def call(value: object, ctx: TaskContext) -> object:
        for step in calls:
            value = step.call(value, ctx)
        return finish(value)

    return call


def _achain(
    calls: Sequence[NodeCalls], finish: Callable[[object], object], prefer_async: bool
) -> Callable[[object, TaskContext], Awaitable[object]]:
    async def call(value: object, ctx: TaskContext) -> object:
        for step in calls:
            if prefer_async and step.acall is not None:
                value = await step.acall(value, ctx)
            elif step.is_async:  # its call returns an awaitable
                value = await step.call(value, ctx)
            else:
                value = step.call(value, ctx)
        return finish(value)

    return call


def output_value(plan: Plan, final: dict[str, Any]) -> object:
    """What ``invoke`` returns for ``final`` (the output keys): the bare value of a graph whose
    state is one value, or of a channel graph's single output channel (``None`` when unset)."""
    if plan.root:
        return root_output(final)
    if plan.output_channel is not None and INTERRUPT not in final:
        return final.get(plan.output_channel)
    return final


def channel_updates(
    plan: Plan, pairs: Sequence[tuple[object, str | None]], saved: CheckpointTuple | None
) -> list[tuple[object, str | None]]:
    """A channel graph's ``update_state`` values as the writes of their node's writers.

    Without ``as_node`` the node is inferred: on a new thread the values are the graph input;
    else the node whose writers write the channels the checkpoint's step changed.

    Raises:
        InvalidUpdateError: no single node can be inferred ("Ambiguous update").
    """
    if not plan.triggers:
        return list(pairs)
    out: list[tuple[object, str | None]] = []
    for values, as_node in pairs:
        if as_node is None and saved is None:
            writes = input_writes(plan, values)
            start: Command[str] = Command(update=writes, goto=subscribers(plan.triggers, writes))
            out.append((start, START))
            continue
        name = as_node if as_node is not None else _last_writer(plan, saved)
        spec = plan.nodes.get(name or "")
        node = spec.channel_node if spec is not None else None
        if node is not None and values is not None:
            values = _result(node, plan.triggers, values)  # noqa: PLW2901 - the values, as writes
        out.append((values, name))
    return out


def _last_writer(plan: Plan, saved: CheckpointTuple | None) -> str:
    if len(plan.nodes) == 1:
        return next(iter(plan.nodes))
    cp = saved.checkpoint if saved is not None else Checkpoint()
    values: Mapping[str, object] = cp.get("channel_values") or {}
    changed = {k for k in cp.get("updated_channels") or () if k in values}
    found = [
        name
        for name, spec in plan.nodes.items()
        if spec.channel_node is not None and any(w.channel in changed for w in spec.channel_node.writers)
    ]
    if len(found) != 1:
        raise InvalidUpdateError("Ambiguous update, specify as_node")
    return found[0]
