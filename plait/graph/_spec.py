"""What the compile, drawing and lint helpers read of a builder: :class:`NodeDef` and :class:`GraphSpec`
(a :class:`~plait.graph.state.StateGraph` is one), so they need not import the builder itself."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from plait._schema import FieldSpec
from plait.graph._branch import BranchDef
from plait.graph._defaults import NodeDefaults
from plait.types import CachePolicy, RetryPolicies, TimeoutPolicy, TracePolicy

__all__ = ["GraphSpec", "NodeDef"]


@dataclass(slots=True)
class NodeDef:
    """A node as added to the builder."""

    action: Any  # what add_node took: a function, a Runnable, a compiled graph…
    input_schema: type | None = None
    retry_policy: RetryPolicies | None = None
    # the factory is cast once, here, to its element types (it stays the builtin dict)
    metadata: dict[str, object] = field(default_factory=cast("Callable[[], dict[str, object]]", dict))
    destinations: tuple[tuple[str, str | None], ...] = ()
    """Where the node may go with ``Command(goto=...)``: ``(target, edge label)`` pairs, for drawing."""
    cache_policy: CachePolicy[Callable[..., str | bytes]] | None = None
    defer: bool = False
    error_handler: str | None = None
    """The node that runs when this one fails (``add_node(..., error_handler=...)``), if any."""
    is_error_handler: bool = False
    """The node is an error handler: it runs when another node fails, never on its own."""
    timeout: TimeoutPolicy | None = None
    """Limits on each attempt of the (async) node (``add_node(timeout=...)``)."""
    trace_policy: TracePolicy | None = None
    """What the node's trace run records of its input and output (``add_node(trace_policy=...)``)."""


class GraphSpec(Protocol):
    """A graph as built so far: its schemas, state keys, nodes, edges and branches."""

    state_schema: type[object]
    input_schema: type[object]
    output_schema: type[object]
    schema_fields: dict[type, tuple[FieldSpec, ...]]
    channels: dict[str, FieldSpec]
    managed: dict[str, object]
    nodes: dict[str, NodeDef]
    edges: set[tuple[str, str]]
    waiting_edges: set[tuple[tuple[str, ...], str]]
    branches: dict[str, dict[str, BranchDef]]
    node_defaults: NodeDefaults
