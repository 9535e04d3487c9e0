"""Validate a :class:`StateGraph` and freeze it into a :class:`Plan`."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from plait._internal._narrow import is_str_dict
from plait._schema import MISSING, FieldSpec, SchemaKind, schema_kind
from plait.channels import BaseChannel, BinaryOperatorAggregate, LastValue
from plait.constants import END, START
from plait.errors import GraphBuildError
from plait.graph._branch import router_extras
from plait.graph._fields import managed_of
from plait.graph._lint import check_parallel_writes
from plait.graph._spec import GraphSpec
from plait.graph._strict import StrictChannel, strict_call
from plait.pregel._cache import node_namespace
from plait.pregel._callable import accepts_config, make_call
from plait.pregel._plan import Branch, Join, NodeSpec, Plan
from plait.pregel._pregel import Pregel
from plait.pregel._referenced import referenced_graph
from plait.pregel._timeout import sync_timeout_error

if TYPE_CHECKING:
    from pydantic import BaseModel


__all__ = ["build_plan", "field_channel"]


def field_channel(spec: FieldSpec) -> object:
    """The channel a field declares or implies (its managed value's class for a managed one)."""
    if spec.managed is not None:
        return spec.managed
    return spec.channel if spec.channel is not None else _channel(spec)


def _channel(spec: FieldSpec) -> BaseChannel:
    if spec.reducer is None:
        return LastValue(spec.name)
    return BinaryOperatorAggregate(spec.name, spec.reducer, spec.initial)


def _maker(schema: type | None) -> Callable[[dict[str, object]], object] | None:
    kind = schema_kind(schema)
    if kind in (SchemaKind.DATACLASS, SchemaKind.PYDANTIC):
        cls: Any = schema  # a dataclass or pydantic model class
        return lambda values: cls(**values)
    return None


def _model_to_dict(obj: object) -> dict[str, object]:
    if is_str_dict(obj):
        return obj  # already the state mapping: keys are field names
    model = cast("type[BaseModel]", type(obj))  # schema_kind() said PYDANTIC
    return {k: getattr(obj, k) for k in model.model_fields}


def _dataclass_to_dict(obj: Any) -> dict[str, object]:  # a dataclass instance, or the state mapping
    if is_str_dict(obj):
        return obj  # already the state mapping: keys are field names
    fields: dict[str, object] = obj.__dataclass_fields__
    return {k: getattr(obj, k) for k in fields}


def _to_dict(schema: type) -> Callable[[object], dict[str, object]] | None:
    kind = schema_kind(schema)
    if kind == SchemaKind.PYDANTIC:
        return _model_to_dict
    if kind == SchemaKind.DATACLASS:
        return _dataclass_to_dict
    return None


def _keys(builder: GraphSpec, schema: type) -> tuple[str, ...]:
    return tuple(spec.name for spec in builder.schema_fields[schema])


def _defaults(builder: GraphSpec, keys: tuple[str, ...]) -> tuple[tuple[str, object], ...]:
    out: list[tuple[str, object]] = []
    for key in keys:
        spec = builder.channels.get(key)
        if spec is not None and spec.reducer is None and spec.default is not MISSING:
            out.append((key, spec.default))
    return tuple(out)


def _check_edges(builder: GraphSpec) -> None:
    nodes = builder.nodes
    sources = [s for s, _ in builder.edges] + [s for ss, _ in builder.waiting_edges for s in ss]
    for source in sources + list(builder.branches):
        if source != START and source not in nodes:
            raise GraphBuildError(f"Found edge starting at unknown node '{source}'")
    targets = [t for _, t in builder.edges] + [t for _, t in builder.waiting_edges]
    for target in targets:
        if target != END and target not in nodes:
            raise GraphBuildError(f"Found edge ending at unknown node `{target}`")
    for source, branches in builder.branches.items():
        for branch in branches.values():
            for target in branch.ends:
                if target != END and target not in nodes:
                    raise GraphBuildError(
                        f"At '{source}' node, '{branch.name}' branch found unknown target '{target}'"
                    )
    if not any(s == START for s, _ in builder.edges) and START not in builder.branches:
        raise GraphBuildError(
            "Graph must have an entrypoint: add at least one edge from START to another node"
        )


def _interrupts(builder: GraphSpec, nodes: Sequence[str] | None) -> frozenset[str]:
    if not nodes:
        return frozenset()
    names = frozenset(["*"] if nodes == "*" else nodes)
    for name in names - {"*"}:
        if name not in builder.nodes:
            raise GraphBuildError(f"Interrupt node `{name}` not found")
    return names


def _node_spec(builder: GraphSpec, name: str, state_keys: tuple[str, ...]) -> NodeSpec:
    node = builder.nodes[name]
    is_subgraph = isinstance(node.action, Pregel)
    call, is_async, acall, plain = make_call(node.action, frozenset(builder.channels), subgraph=is_subgraph)
    schema = node.input_schema
    reads = _keys(builder, schema) if schema is not None else state_keys
    make_input = _maker(schema if schema is not None else builder.state_schema)
    retry, cache_policy, handler = builder.node_defaults.policies(
        node.retry_policy, node.cache_policy, node.error_handler, is_handler=node.is_error_handler
    )
    timeout = node.timeout or builder.node_defaults.timeout
    if timeout is not None and not (is_async or acall is not None):
        raise sync_timeout_error(name)
    return NodeSpec(
        name=name,
        call=call,
        is_async=is_async,
        acall=acall,
        plain=plain,
        reads=reads,
        defaults=_defaults(builder, reads),
        make_input=make_input,
        retry=retry,
        timeout=timeout,
        is_subgraph=is_subgraph,
        subgraph=node.action if is_subgraph else referenced_graph(node.action, _is_graph),
        cache_policy=cache_policy,
        cache_ns=node_namespace(node.action, name) if cache_policy is not None else (),
        metadata=node.metadata,
        error_handler=handler,
        triggers=tuple(
            sorted(
                {
                    f"branch:to:{name}",
                    *(f"join:{'+'.join(s)}:{t}" for s, t in builder.waiting_edges if t == name),
                }
            )
        ),
    )


def _is_graph(obj: object) -> bool:
    """A compiled graph that keeps state as a subgraph (a node function calling it runs it as one)."""
    return isinstance(obj, Pregel) and obj.subgraph_saving != "off"


def _branches(builder: GraphSpec) -> dict[str, tuple[Branch, ...]]:
    """The plan's conditional edges; a router reads the schema it annotates, else its source node's
    input schema (as LangGraph's do), else the graph's state."""
    out: dict[str, tuple[Branch, ...]] = {}
    for source, branches in builder.branches.items():
        node = builder.nodes.get(source)
        default = node.input_schema if node is not None else None
        found: list[Branch] = []
        for b in branches.values():
            schema = b.input_schema or default
            own = schema is not None and schema is not builder.state_schema
            extras = router_extras(b.path)
            found.append(
                Branch(
                    source=source,
                    path=b.path,
                    takes_config="config" not in extras and accepts_config(b.path),
                    path_map=b.path_map,
                    ends=b.ends,
                    reads=_keys(builder, schema) if own and schema is not None else None,
                    make_input=_maker(schema) if own else None,
                    managed=managed_of(builder, schema) if own else (),
                    extras=extras,
                )
            )
        out[source] = tuple(found)
    return out


def _strict(
    builder: GraphSpec, channels: dict[str, BaseChannel], nodes: dict[str, NodeSpec]
) -> tuple[dict[str, BaseChannel], dict[str, NodeSpec]]:
    check_parallel_writes(builder)
    wrapped = {
        k: StrictChannel(c, builder.channels[k]) if builder.channels[k].reducer is not None else c
        for k, c in channels.items()
    }
    calls = {
        k: replace(
            n,
            call=strict_call(k, n.call, n.is_async),
            plain=None,  # strict checks wrap the call: no direct call
            acall=None if n.acall is None else strict_call(k, n.acall, True),
        )
        for k, n in nodes.items()
    }
    return wrapped, calls


def build_plan(
    builder: GraphSpec,
    interrupt_before: Sequence[str] | None,
    interrupt_after: Sequence[str] | None,
    strict: bool | None,
) -> Plan:
    """Check ``builder`` and compile it.

    Raises:
        GraphBuildError: unknown nodes in edges, no entry point, unknown interrupt nodes.
    """
    _check_edges(builder)
    state_keys = _keys(builder, builder.state_schema)
    edges: dict[str, list[str]] = {}
    for source, target in sorted(builder.edges):
        if target != END:  # reaching END schedules nothing
            edges.setdefault(source, []).append(target)
    joins: dict[str, list[Join]] = {}
    for sources, target in sorted(builder.waiting_edges):
        join = Join(key=f"join:{'+'.join(sources)}:{target}", sources=frozenset(sources), target=target)
        for source in sources:
            joins.setdefault(source, []).append(join)
    if strict is None:
        strict = os.environ.get("PLAIT_STRICT", "") not in ("", "0", "false", "False")
    channels = {name: _channel(spec) for name, spec in builder.channels.items()}
    nodes = {name: _node_spec(builder, name, state_keys) for name in builder.nodes}
    if strict:
        channels, nodes = _strict(builder, channels, nodes)
    return Plan(
        channels=channels,
        nodes=nodes,
        edges={k: tuple(v) for k, v in edges.items()},
        branches=_branches(builder),
        joins={k: tuple(v) for k, v in joins.items()},
        input_keys=_keys(builder, builder.input_schema),
        output_keys=_keys(builder, builder.output_schema),
        state_keys=state_keys,
        interrupt_before=_interrupts(builder, interrupt_before),
        interrupt_after=_interrupts(builder, interrupt_after),
        defaults=_defaults(builder, state_keys),
        strict=bool(strict),
        input_make=_to_dict(builder.input_schema),
        state_make=_maker(builder.state_schema),
        output_make=_maker(builder.output_schema),
        deferred=frozenset(name for name, spec in builder.nodes.items() if spec.defer),
    )
