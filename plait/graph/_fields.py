"""What ``compile()`` adds to a plan: callbacks around nodes, and special state fields.

* every node reports a chain run to the run's callbacks, when there are any
  (:func:`~plait.pregel._traced.traced_call`), and a subgraph node its graph's run inside it;

* channels declared in annotations (``Annotated[list[str], Topic(str)]``) replace the
  default overwrite channel of their key;
* managed values (``RemainingSteps``…) are filled into the input of the nodes whose
  schema declares them, and into what conditional edges receive when the state schema does;
* a state that is one value (``StateGraph(Annotated[str, operator.add])``) makes nodes
  receive and return that value.
"""

from __future__ import annotations

from dataclasses import replace

from plait._schema import ROOT, FieldSpec
from plait._trace import TracePolicy
from plait.channels import BaseChannel
from plait.graph._spec import GraphSpec
from plait.pregel._plan import NodeSpec, Plan
from plait.pregel._root import root_call, root_state, root_value
from plait.pregel._traced import traced_call

__all__ = ["finish_plan"]


def _channels(builder: GraphSpec, plan: Plan) -> dict[str, BaseChannel]:
    channels = dict(plan.channels)
    for name, spec in builder.channels.items():
        if spec.channel is not None:
            channels[name] = spec.channel.bind(name, spec.annotation)
    return channels


def managed_of(builder: GraphSpec, schema: type | None) -> tuple[tuple[str, object], ...]:
    """The managed values (``RemainingSteps``…) a schema of the graph declares, as ``(key, manager)``."""
    specs: tuple[FieldSpec, ...] = builder.schema_fields.get(schema, ()) if schema is not None else ()
    return tuple((s.name, s.managed) for s in specs if s.managed is not None)


def _managed(builder: GraphSpec, name: str) -> tuple[tuple[str, object], ...]:
    return managed_of(builder, builder.nodes[name].input_schema or builder.state_schema)


def _policy(builder: GraphSpec, name: str) -> TracePolicy | None:
    node = builder.nodes.get(name)
    return None if node is None else node.trace_policy


def _traced_node(node: NodeSpec, policy: TracePolicy | None, routes: int) -> NodeSpec:
    call, acall = node.call, node.acall
    if node.is_subgraph:  # the subgraph's own run, inside its node's (as a Runnable invoked there)
        name = getattr(node.subgraph, "name", None) or "LangGraph"
        call = traced_call(call, name, node.is_async, inner=True)
        acall = None if acall is None else traced_call(acall, name, True, inner=True)
    return replace(
        node,
        call=traced_call(call, node.name, node.is_async, policy=policy, routes=routes),
        acall=None if acall is None else traced_call(acall, node.name, True, policy=policy, routes=routes),
    )


def _root_node(node: NodeSpec) -> NodeSpec:
    return replace(
        node,
        call=root_call(node.call, node.is_async),
        plain=None,
        acall=None if node.acall is None else root_call(node.acall, True),
        make_input=root_state,
    )


def finish_plan(builder: GraphSpec, plan: Plan) -> Plan:
    """``plan`` with the builder's declared channels, managed values and root state applied."""
    special = any(s.channel is not None for s in builder.channels.values())
    nodes = {
        name: _traced_node(node, _policy(builder, name), len(plan.branches.get(name, ())))
        for name, node in plan.nodes.items()
    }
    if builder.managed:
        for name, node in nodes.items():
            managed = _managed(builder, name)
            if managed:
                nodes[name] = replace(node, managed=managed)
    root = plan.state_keys == (ROOT,)
    if root:
        nodes = {name: _root_node(node) for name, node in nodes.items()}
    return replace(
        plan,
        channels=_channels(builder, plan) if special else plan.channels,
        nodes=nodes,
        root=root,
        input_make=root_value if root else plan.input_make,
        state_make=root_state if root else plan.state_make,
        output_make=None if root else plan.output_make,
        managed=managed_of(builder, builder.state_schema) if builder.managed else (),
    )
